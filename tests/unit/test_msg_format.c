// SPDX-License-Identifier: MIT
/* msg.c's own formatter (the library uses no stdio, issue 12 item 9)
 * against the C library's snprintf: every combination of the flags,
 * widths, precisions and lengths the library's format strings use, for
 * each conversion with edge values, into buffers large and too small
 * (return value and bytes both compared). The test itself may use stdio. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "check.h"
#include "internal.h"

#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"

static int cases, bad;

/* One case: the same format and arguments through both, into buffers of
 * 256 and of a few small sizes. */
#define SAME(fmt, ...)                                                                       \
	do {                                                                                 \
		static const size_t lens[] = { 256, 0, 1, 2, 5 };                            \
		for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++) {             \
			char a[256], b[256];                                                 \
			memset(a, 'X', sizeof a);                                            \
			memset(b, 'X', sizeof b);                                            \
			int ra = snprintf(a, lens[li], fmt, __VA_ARGS__);                    \
			int rb = _nd_msg_format(b, lens[li], fmt, __VA_ARGS__);              \
			cases++;                                                             \
			if (ra != rb || memcmp(a, b, sizeof a) != 0) {                       \
				if (bad++ < 20)                                              \
					fprintf(stderr, "format \"%s\" len %zu: libc %d \"%.*s\", ours %d \"%.*s\"\n", \
						fmt, lens[li], ra, (int)(lens[li] ? strnlen(a, lens[li]) : 0), a, rb, \
						(int)(lens[li] ? strnlen(b, lens[li]) : 0), b);      \
			}                                                                    \
		}                                                                            \
	} while (0)

static const char *const flags[] = { "", "-", "0", "#", "-0", "0#", "-#" };
static const char *const widths[] = { "", "1", "3", "7", "16", "*" };
static const char *const precs[] = { "", ".0", ".1", ".3", ".10", ".*" };

/* fmt = "%" flag width prec len conv */
static void make(char *fmt, const char *f, const char *w, const char *p, const char *len, char conv)
{
	snprintf(fmt, 64, "[%%%s%s%s%s%c]", f, w, p, len, conv);
}

#define ARGS_WP(w, p, ...)                                                             \
	do {                                                                           \
		bool sw = (w)[0] == '*', sp = (p)[0] && (p)[1] == '*';                           \
		if (sw && sp) {                                                        \
			SAME(fmt, 9, 4, __VA_ARGS__);                                  \
			SAME(fmt, -9, -1, __VA_ARGS__);                                \
		} else if (sw) {                                                       \
			SAME(fmt, 12, __VA_ARGS__);                                    \
			SAME(fmt, -12, __VA_ARGS__);                                   \
		} else if (sp) {                                                       \
			SAME(fmt, 2, __VA_ARGS__);                                     \
			SAME(fmt, -3, __VA_ARGS__);                                    \
		} else {                                                               \
			SAME(fmt, __VA_ARGS__);                                        \
		}                                                                      \
	} while (0)

static void integers(void)
{
	static const long long sv[] = { 0, 1, -1, 7, -42, 255, 1000000, INT_MAX, INT_MIN, LLONG_MAX, LLONG_MIN };
	static const unsigned long long uv[] = { 0, 1, 9, 10, 255, 0xdeadbeef, UINT_MAX, ULLONG_MAX };
	char fmt[64];
	for (unsigned fi = 0; fi < sizeof flags / sizeof *flags; fi++)
		for (unsigned wi = 0; wi < sizeof widths / sizeof *widths; wi++)
			for (unsigned pi = 0; pi < sizeof precs / sizeof *precs; pi++) {
				const char *f = flags[fi], *w = widths[wi], *p = precs[pi];
				bool alt = strchr(f, '#') != NULL;
				for (unsigned k = 0; k < sizeof sv / sizeof *sv; k++) {
					long long v = sv[k];
					if (!alt) { /* '#' is undefined with d and i */
						make(fmt, f, w, p, "", 'd');
						ARGS_WP(w, p, (int)v);
						make(fmt, f, w, p, "", 'i');
						ARGS_WP(w, p, (int)v);
						make(fmt, f, w, p, "l", 'd');
						ARGS_WP(w, p, (long)v);
						make(fmt, f, w, p, "ll", 'd');
						ARGS_WP(w, p, v);
						make(fmt, f, w, p, "z", 'd');
						ARGS_WP(w, p, (ssize_t)v);
						make(fmt, f, w, p, "hh", 'd');
						ARGS_WP(w, p, (int)(signed char)v);
						make(fmt, f, w, p, "h", 'd');
						ARGS_WP(w, p, (int)(short)v);
					}
				}
				for (unsigned k = 0; k < sizeof uv / sizeof *uv; k++) {
					unsigned long long v = uv[k];
					static const char convs[] = "uxXo";
					for (const char *c = convs; *c; c++) {
						if (alt && *c == 'u')
							continue;
						make(fmt, f, w, p, "", *c);
						ARGS_WP(w, p, (unsigned)v);
						make(fmt, f, w, p, "l", *c);
						ARGS_WP(w, p, (unsigned long)v);
						make(fmt, f, w, p, "ll", *c);
						ARGS_WP(w, p, v);
						make(fmt, f, w, p, "z", *c);
						ARGS_WP(w, p, (size_t)v);
						make(fmt, f, w, p, "hh", *c);
						ARGS_WP(w, p, (unsigned)(unsigned char)v);
						make(fmt, f, w, p, "h", *c);
						ARGS_WP(w, p, (unsigned)(unsigned short)v);
					}
				}
			}
}

static void text(void)
{
	static const char *const sv[] = { "", "a", "node", "topology spec: node 2", NULL };
	static const char cv[] = { 'a', '%', ' ', '\x7f' };
	static int x;
	void *const pv[] = { &x, (void *)(uintptr_t)0x1000, (void *)UINTPTR_MAX };
	char fmt[64];
	for (unsigned fi = 0; fi < 2; fi++) /* '0' and '#' are undefined for s, c, p */
		for (unsigned wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
			const char *f = flags[fi], *w = widths[wi];
			for (unsigned pi = 0; pi < sizeof precs / sizeof *precs; pi++)
				for (unsigned k = 0; k < sizeof sv / sizeof *sv; k++) {
					const char *p = precs[pi];
					make(fmt, f, w, p, "", 's');
					ARGS_WP(w, p, sv[k]);
				}
			for (unsigned k = 0; k < sizeof cv; k++) {
				make(fmt, f, w, "", "", 'c');
				ARGS_WP(w, "", (int)cv[k]);
			}
			for (unsigned k = 0; k < sizeof pv / sizeof *pv; k++) {
				make(fmt, f, w, "", "", 'p');
				ARGS_WP(w, "", pv[k]);
			}
			make(fmt, f, w, "", "", 'p');
			ARGS_WP(w, "", (void *)NULL);
		}
	/* Format strings as the library writes them. */
	SAME("%%%d%%", 5);
	SAME("nodalloc: %s: %s", "warning", "x");
	SAME("%.*s", 3, "abcdef");
	SAME("%-16.16s|", "a long name that is cut");
	SAME("%#lx is not a per-CPU handle", 0UL);
	SAME("%#lx", 0x3039UL);
	SAME("%04x %02llu %10llu", 0xbeefu, 7ULL, 123456789ULL);
	SAME("%s%s%s%s at column %d", "node 1: ", "mem", ": ", "bad size 'x1G'", 17);
	SAME("%zu %zd %ld %lu", (size_t)SIZE_MAX, (ssize_t)-5, LONG_MIN, ULONG_MAX);
	SAME("no conversions at all%s", "");
}

int main(void)
{
	integers();
	text();
	printf("test_msg_format: %d cases compared with snprintf, %d differ\n", cases, bad);
	CHECK(cases > 10000);
	CHECK_EQ(bad, 0);
	return CHECK_DONE();
}
