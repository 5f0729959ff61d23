// SPDX-License-Identifier: MIT
/*
 * The one message path, and the library's own formatter.
 *
 * Messages are formatted into a stack buffer and written with one write(2),
 * so lines from threads do not interleave. The formatter is ours, not
 * vsnprintf: the library uses no stdio (tests/check_no_stdio.sh). It does
 * the conversions the library's format strings use (grep '%' src/):
 *   flags '-' '0' '#', width and precision (digits or '*'),
 *   lengths hh h l ll z j t, conversions d i u x X o c s p %.
 * Precision cuts strings and sets integers' minimum digits, as in C.
 *
 * The message descriptor and the verbosity are pushed down by options.c
 * once it has read them (_nd_msg_set_fd, _nd_msg_set_verbose): msg.c sits
 * below options.c and never calls it.
 */
#include "internal.h"

#define MSG_FD_DEFAULT 2 /* stderr */
#define MSG_LINE 1024    /* longest line written (cut beyond) */

static int msg_fd = MSG_FD_DEFAULT;
static int msg_verbose;

void _nd_msg_set_fd(int fd)
{
	/* 0 (stdin) is not a place for messages: stderr, as before options */
	msg_fd = fd > 0 ? fd : MSG_FD_DEFAULT;
}

int _nd_msg_fd(void)
{
	return msg_fd;
}

void _nd_msg_set_verbose(bool on)
{
	msg_verbose = on;
}

bool _nd_msg_verbose(void)
{
	return msg_verbose != 0;
}

/* ---- the formatter --------------------------------------------------------- */

typedef struct out {
	char *buf;
	size_t len; /* buffer size */
	size_t n;   /* characters produced (may exceed len) */
} out_t;

static void put_c(out_t *o, char c)
{
	if (o->n + 1 < o->len)
		o->buf[o->n] = c;
	o->n++;
}

static void put_pad(out_t *o, char c, int count)
{
	for (int i = 0; i < count; i++)
		put_c(o, c);
}

typedef struct spec {
	bool left, zero, alt;
	int width;  /* 0: none */
	int prec;   /* -1: none */
} spec_t;

/* A converted field: prefix ("-", "0x"), zeros (precision or '0' flag),
 * then the digits or text; space-padded to the width. */
static void put_field(out_t *o, const spec_t *sp, const char *prefix, int zeros, const char *body, int blen)
{
	int plen = (int)_nd_strlen(prefix);
	int total = plen + zeros + blen;
	int pad = sp->width > total ? sp->width - total : 0;
	if (!sp->left)
		put_pad(o, ' ', pad);
	for (int i = 0; i < plen; i++)
		put_c(o, prefix[i]);
	put_pad(o, '0', zeros);
	for (int i = 0; i < blen; i++)
		put_c(o, body[i]);
	if (sp->left)
		put_pad(o, ' ', pad);
}

static void put_uint(out_t *o, const spec_t *sp, unsigned long long v, bool neg, unsigned base, bool upper,
		     const char *prefix)
{
	bool alt_octal = base == 8 && sp->alt; /* '#': the first digit is a 0 */
	static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
	const char *digits = upper ? up : lo;
	char tmp[24]; /* 22 octal digits of 2^64 - 1 */
	int k = sizeof tmp;
	for (; v; v /= base)
		tmp[--k] = digits[v % base];
	int blen = (int)sizeof tmp - k;
	char pre[4];
	int p = 0;
	if (neg)
		pre[p++] = '-';
	for (const char *s = prefix; *s && p < 3; s++)
		pre[p++] = *s;
	pre[p] = '\0';
	/* precision: minimum digits (0 with precision 0 prints none); else
	 * the '0' flag fills the width with zeros after the sign */
	int zeros;
	if (sp->prec >= 0)
		zeros = sp->prec > blen ? sp->prec - blen : 0;
	else
		zeros = blen == 0 ? 1 : 0;
	if (alt_octal && zeros == 0)
		zeros = 1;
	if (sp->prec < 0 && sp->zero && !sp->left && sp->width > p + zeros + blen)
		zeros = sp->width - p - blen;
	put_field(o, sp, pre, zeros, tmp + k, blen);
}

int _nd_msg_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	out_t o = { buf, len, 0 };
	va_list a;
	va_copy(a, ap);
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			put_c(&o, *f);
			continue;
		}
		spec_t sp = { .prec = -1 };
		for (f++;; f++) {
			if (*f == '-')
				sp.left = true;
			else if (*f == '0')
				sp.zero = true;
			else if (*f == '#')
				sp.alt = true;
			else
				break;
		}
		if (*f == '*') {
			sp.width = va_arg(a, int);
			if (sp.width < 0) {
				sp.left = true;
				sp.width = -sp.width;
			}
			f++;
		} else {
			while (*f >= '0' && *f <= '9')
				sp.width = sp.width * 10 + (*f++ - '0');
		}
		if (*f == '.') {
			f++;
			sp.prec = 0;
			if (*f == '*') {
				sp.prec = va_arg(a, int);
				if (sp.prec < 0)
					sp.prec = -1;
				f++;
			} else {
				while (*f >= '0' && *f <= '9')
					sp.prec = sp.prec * 10 + (*f++ - '0');
			}
		}
		int lng = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long, 3 size_t/intmax/ptrdiff */
		if (*f == 'h') {
			lng = -1;
			if (*++f == 'h') {
				lng = -2;
				f++;
			}
		} else if (*f == 'l') {
			lng = 1;
			if (*++f == 'l') {
				lng = 2;
				f++;
			}
		} else if (*f == 'z' || *f == 'j' || *f == 't') {
			lng = 3;
			f++;
		}
		switch (*f) {
		case 'd':
		case 'i': {
			long long v;
			if (lng == 2)
				v = va_arg(a, long long);
			else if (lng == 1)
				v = va_arg(a, long);
			else if (lng == 3)
				v = va_arg(a, ptrdiff_t); /* ssize_t, intmax_t: the same width on LP64 */
			else
				v = va_arg(a, int);
			if (lng == -1)
				v = (short)v;
			else if (lng == -2)
				v = (signed char)v;
			unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
			put_uint(&o, &sp, u, v < 0, 10, false, "");
			break;
		}
		case 'u':
		case 'x':
		case 'X':
		case 'o': {
			unsigned long long v;
			if (lng == 2)
				v = va_arg(a, unsigned long long);
			else if (lng == 1)
				v = va_arg(a, unsigned long);
			else if (lng == 3)
				v = va_arg(a, size_t);
			else
				v = va_arg(a, unsigned);
			if (lng == -1)
				v = (unsigned short)v;
			else if (lng == -2)
				v = (unsigned char)v;
			unsigned base = *f == 'u' ? 10 : *f == 'o' ? 8 : 16;
			const char *pre = "";
			if (sp.alt && v != 0 && base == 16)
				pre = *f == 'X' ? "0X" : "0x";
			put_uint(&o, &sp, v, false, base, *f == 'X', pre);
			break;
		}
		case 'p': {
			void *p = va_arg(a, void *);
			if (!p) {
				put_field(&o, &sp, "", 0, "(nil)", 5);
			} else {
				sp.prec = -1;
				put_uint(&o, &sp, (uintptr_t)p, false, 16, false, "0x");
			}
			break;
		}
		case 'c': {
			char c = (char)va_arg(a, int);
			put_field(&o, &sp, "", 0, &c, 1);
			break;
		}
		case 's': {
			const char *s = va_arg(a, const char *);
			if (!s)
				s = sp.prec < 0 || sp.prec >= 6 ? "(null)" : "";
			int n = 0;
			while (s[n] && (sp.prec < 0 || n < sp.prec))
				n++;
			put_field(&o, &sp, "", 0, s, n);
			break;
		}
		case '%':
			put_c(&o, '%');
			break;
		default:
			/* not a conversion the library uses: shown as written,
			 * so a mistake is visible, never a crash */
			ND_ASSERT(0, "a format conversion msg.c supports");
			put_c(&o, '%');
			if (*f == '\0')
				f--;
			else
				put_c(&o, *f);
			break;
		}
	}
	va_end(a);
	if (len)
		buf[o.n < len ? o.n : len - 1] = '\0';
	return o.n > 0x7fffffff ? 0x7fffffff : (int)o.n;
}

int _nd_msg_format(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = _nd_msg_vformat(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

/* ---- the message path ------------------------------------------------------ */

void _nd_msg_out(int fd, const char *text)
{
	_nd_os_write(fd, text, _nd_strlen(text));
}

static void emit(const char *level, const char *fmt, va_list ap)
{
	char buf[MSG_LINE];
	int n = _nd_msg_format(buf, sizeof buf, "nodalloc: %s: ", level);
	if (n < 0 || (size_t)n >= sizeof buf)
		n = 0;
	int m = _nd_msg_vformat(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof buf - 2)
		len = sizeof buf - 2;
	buf[len++] = '\n';
	_nd_os_write(msg_fd, buf, len);
}

/* Each level is one formatted line on the message descriptor. */
#define EMIT(level)                      \
	do {                             \
		va_list ap;              \
		va_start(ap, fmt);       \
		emit(level, fmt, ap);    \
		va_end(ap);              \
	} while (0)

void _nd_msg_warn(const char *fmt, ...)
{
	EMIT("warning");
}

void _nd_msg_error(const char *fmt, ...)
{
	EMIT("error");
}

void _nd_msg_api(const char *fmt, ...)
{
	if (msg_verbose)
		EMIT("error");
}

void _nd_msg_info(const char *fmt, ...)
{
	if (msg_verbose)
		EMIT("info");
}

void _nd_msg_fatal(const char *fmt, ...)
{
	EMIT("fatal");
	_nd_os_abort();
}

/* ND_ASSERT's failure (internal.h): the invariant that broke, by name. */
void _nd_assert_fail(const char *file, int line, const char *cond, const char *what)
{
	_nd_msg_fatal("assertion failed at %s:%d: %s (%s)", file, line, what, cond);
}
