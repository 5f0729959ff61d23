// SPDX-License-Identifier: MIT
/*
 * The one message path.
 *
 * Messages are formatted into a stack buffer with vsnprintf (which does not
 * allocate for the conversions we use: no %ls, no huge widths) and written
 * with one write(2), so lines from threads do not interleave.
 */
#include <stdio.h>

#include "internal.h"

static int msg_fd(void)
{
	/* Options may not be parsed yet (a message from option parsing itself). */
	int64_t fd = _nd_opt_int(ND_OPT_MSG_FD);
	return fd > 0 ? (int)fd : 2;
}

int _nd_msg_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	return vsnprintf(buf, len, fmt, ap);
}

int _nd_msg_format(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

void _nd_msg_out(int fd, const char *text)
{
	size_t n = 0;
	while (text[n])
		n++;
	_nd_os_write(fd, text, n);
}

static void emit(const char *level, const char *fmt, va_list ap)
{
	char buf[1024];
	int n = _nd_msg_format(buf, sizeof buf, "nodalloc: %s: ", level);
	if (n < 0 || (size_t)n >= sizeof buf)
		n = 0;
	int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof buf - 2)
		len = sizeof buf - 2;
	buf[len++] = '\n';
	_nd_os_write(msg_fd(), buf, len);
}

void _nd_msg_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("warning", fmt, ap);
	va_end(ap);
}

void _nd_msg_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("error", fmt, ap);
	va_end(ap);
}

void _nd_msg_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("fatal", fmt, ap);
	va_end(ap);
	_nd_os_abort();
}

/* ND_ASSERT's failure (internal.h): the invariant that broke, by name. */
void _nd_assert_fail(const char *file, int line, const char *cond, const char *what)
{
	_nd_msg_fatal("assertion failed at %s:%d: %s (%s)", file, line, what, cond);
}
