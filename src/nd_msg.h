// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 2, msg.c. */
#ifndef ND_MSG_H
#define ND_MSG_H

/* ======================================================================
 * src/msg.c: the one message path. Formats into a stack buffer, writes
 * "nodalloc: warning: ..." to stderr (fd 2, or NODALLOC_MSG_FD), no malloc.
 * ====================================================================== */

void _nd_msg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void _nd_msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "nodalloc: fatal: ..." and aborts (invalid free and the like). */
void _nd_msg_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Formats into buf like snprintf (msg.c's own formatter: flags - 0 #,
 * width and precision, lengths hh h l ll z j t, d i u x X o c s p %);
 * returns the length it would have had. */
int _nd_msg_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int _nd_msg_vformat(char *buf, size_t len, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* An error of an API call (bad argument, no such node): the caller hears
 * of it by errno or the return value; the line is printed only under
 * NODALLOC_VERBOSE=1 (issue 14). Configuration errors use _nd_msg_error. */
void _nd_msg_api(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "nodalloc: info: ..." under NODALLOC_VERBOSE=1 only (what the library
 * decided on its own, e.g. following an inherited kernel policy). */
void _nd_msg_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* options.c pushes these down once it has read them (msg.c never calls
 * up): the message descriptor (NODALLOC_MSG_FD; <= 0 means stderr) and
 * NODALLOC_VERBOSE. Before that: stderr, not verbose. */
void _nd_msg_set_fd(int fd);
int _nd_msg_fd(void);
void _nd_msg_set_verbose(bool on);
bool _nd_msg_verbose(void);
/* Writes text to fd as it is (for printers). */
void _nd_msg_out(int fd, const char *text);

#endif /* ND_MSG_H */
