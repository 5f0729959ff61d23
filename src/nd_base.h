// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, first): the shared definitions
 * and helpers every layer uses. */
#ifndef ND_BASE_H
#define ND_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodalloc.h"

#define ND_PAGE_SHIFT 12
#define ND_PAGE_SIZE ((size_t)1 << ND_PAGE_SHIFT)
#define ND_HUGE_SHIFT 21
#define ND_HUGE_SIZE ((size_t)1 << ND_HUGE_SHIFT)
#define ND_CACHE_LINE 64
/* A static table of a page or more: page-aligned, so that the link's
 * --sort-section=alignment (CMakeLists.txt) lays the big tables out first
 * and the scalars and small tables, which every process touches, share a
 * few pages after them instead of sitting between them (issue 11). */
#define ND_BIG_TABLE _Alignas(ND_PAGE_SIZE)
#define ND_MAX_CPU_BITS 8192 /* CPU masks: the kernel's largest NR_CPUS on x86-64 */

#define nd_likely(x) __builtin_expect(!!(x), 1)
#define nd_unlikely(x) __builtin_expect(!!(x), 0)
#define ND_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ND_TLS __thread __attribute__((tls_model("initial-exec")))

/* A relaxed atomic load on a hot path. Under ThreadSanitizer it is one
 * (__atomic_load_n); otherwise a plain load, which x86-64 performs as a
 * single atomic access anyway: GCC does not fold __atomic loads into an
 * instruction's memory operand, which costs the free fast path three
 * instructions. Only for loads whose protocol is "relaxed" (a stale
 * value is harmless, internal.h says why at each field). */
#if defined(__SANITIZE_THREAD__)
#define ND_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ND_TSAN 1
#endif
#endif
#ifdef ND_TSAN
#define ND_LOAD_RELAXED(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#else
#define ND_LOAD_RELAXED(x) (x)
#endif

/* Executable invariants, active in ND_DEBUG builds (cmake -DND_DEBUG=ON):
 * ND_ASSERT(cond, "what must hold"). Release builds compile them out (the
 * condition is still type-checked, never evaluated). */
#ifdef ND_DEBUG
#define ND_ASSERT(cond, what)                                                        \
	do {                                                                          \
		if (nd_unlikely(!(cond)))                                             \
			_nd_assert_fail(__FILE__, __LINE__, #cond, what);              \
	} while (0)
#else
#define ND_ASSERT(cond, what) ((void)sizeof(!(cond)))
#endif
void _nd_assert_fail(const char *file, int line, const char *cond, const char *what)
	__attribute__((noreturn, cold));

/* Small helpers every layer uses (one copy each). */
static inline size_t _nd_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}
/* Bit i of a bitmap of 64-bit words. */
static inline bool _nd_bit_get(const uint64_t *m, size_t i)
{
	return (m[i >> 6] >> (i & 63)) & 1;
}
static inline void _nd_bit_set(uint64_t *m, size_t i)
{
	m[i >> 6] |= (uint64_t)1 << (i & 63);
}
/* floor(log2(v)) for v > 0; ceil(log2(v)) for v > 0 (0 for v <= 1). */
static inline unsigned _nd_log2_floor(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}
static inline unsigned _nd_log2_ceil(uint64_t v)
{
	return v <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(v - 1);
}

/* Raises the counter *v to at least to (relaxed; lock-free): the "highest
 * node index used + 1" counters the fork handlers read for lock arrays. */
static inline void _nd_atomic_raise(int *v, int to)
{
	int u = __atomic_load_n(v, __ATOMIC_RELAXED);
	while (to > u && !__atomic_compare_exchange_n(v, &u, to, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

#endif /* ND_BASE_H */
