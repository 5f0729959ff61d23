// SPDX-License-Identifier: MIT
/*
 * Minimal test harness: CHECK counts and reports, never aborts, so one run
 * shows every failure. Each test binary ends with CHECK_DONE(), which prints
 * "<name>: N passed, N failed" and returns the exit status for ctest.
 */
#ifndef ND_CHECK_H
#define ND_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_pass, check_fail;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (cond) {                                                   \
			check_pass++;                                         \
		} else {                                                      \
			check_fail++;                                         \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, " " __VA_ARGS__);                     \
			fputc('\n', stderr);                                  \
		}                                                             \
	} while (0)

#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long va_ = (long long)(a), vb_ = (long long)(b);         \
		CHECK(va_ == vb_, "%s = %lld, expected %lld", #a, va_, vb_);   \
	} while (0)

#define CHECK_STR(a, b)                                                       \
	do {                                                                  \
		const char *sa_ = (a), *sb_ = (b);                            \
		CHECK(sa_ && sb_ && strcmp(sa_, sb_) == 0, "%s = \"%s\", expected \"%s\"", #a, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)"); \
	} while (0)

#define CHECK_DONE()                                                          \
	(printf("%s: %d passed, %d failed\n", __FILE__, check_pass, check_fail), \
	 check_fail ? 1 : 0)

/* Hides a pointer's provenance from the compiler, for tests that overflow
 * a block or free it wrongly on purpose: it must not reason them away. */
static inline char *L(void *p)
{
	static void *volatile slot;
	slot = p;
	return (char *)slot;
}

#endif
