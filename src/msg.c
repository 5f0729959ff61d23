/*
 * The one message path, and the library's lock.
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

/* ---- lock: spin briefly, then sleep on a futex (Drepper's mutex 2) ------ */

bool _nd_trylock(_nd_lock_t *l)
{
	uint32_t z = 0;
	return __atomic_compare_exchange_n(&l->v, &z, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void _nd_lock(_nd_lock_t *l)
{
	for (int i = 0; i < 100; i++) {
		if (_nd_trylock(l))
			return;
		__builtin_ia32_pause();
	}
	/* 2 = locked, maybe with waiters: the unlocker must wake. */
	while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0)
		_nd_os_futex_wait(&l->v, 2);
}

void _nd_unlock(_nd_lock_t *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		_nd_os_futex_wake(&l->v, 1);
}
