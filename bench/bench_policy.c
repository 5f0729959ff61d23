// SPDX-License-Identifier: MIT
/*
 * bench_policy: the malloc/free loop of wl_small (1024 slots, random sizes
 * 16..256 B, fixed seed) through one allocation call, for counting
 * instructions per pair with callgrind (bench/policy.sh).
 *
 *   bench_policy CALL iterations [null]
 *
 * CALL: malloc (under whatever NODALLOC_POLICY says), onnode:N
 * (nd_malloc_onnode(size, N)), local (nd_malloc_local), policy:SPEC
 * (nd_malloc_policy with one policy object parsed once and reused),
 * prepared:SPEC (the same with nd_policy_prepare's copy), xonnode:N:F
 * (nd_mallocx_onnode(size, N, F), N -1 = ND_NODE_LOCAL), xpolicy:F:SPEC
 * (nd_mallocx_policy with the prepared copy), sized (malloc, then
 * nd_free_sized), calloc (calloc(1, size)), heap:N (nd_heap_malloc from
 * one nd_heap_new(N)), callocon:N (nd_calloc_onnode(1, size, N)),
 * alignon:N:A (nd_aligned_alloc_onnode(A, size, N)), mallocr:A (malloc of
 * the size rounded up to A: the classes an alignment A takes, the peer
 * of the aligned calls), mallocz (malloc, then memset of the size: the
 * peer of the zeroing calls, with calloc), interleaved:G
 * (nd_malloc_interleaved(size, every node, G)), callocpol:SPEC
 * (nd_calloc_policy(1, size, prepared SPEC)), alignpol:A:SPEC
 * (nd_aligned_alloc_policy(A, size, prepared SPEC)). F: flags as a number (64 =
 * ND_MALLOCX_ZERO, 6 = 64-byte alignment). Frees go through free(),
 * but for sized. "null" runs the loop without allocating (its
 * own cost, subtracted by policy.sh). Linked against the shared library,
 * so the thread-local accesses cost what they cost under LD_PRELOAD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodalloc.h"

static _Alignas(16) char null_buf[256];

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The loop, one copy per call (kind is a constant in each: no dispatch
 * inside the loop, so every call pays the same loop). kind -1: no
 * allocation, the loop's own cost (policy.sh subtracts it). The block's
 * first two bytes hold its size (one store, as one byte did), so that
 * nd_free_sized's argument costs one load, as an argument does in the
 * other calls. */
static int node, kind;
static unsigned flags;
static const nd_policy_t *pp;
static nd_heap_t *heap;
static size_t align, gran;
static nd_nodemask_t mask;
/* libc's memset, called (gcc would inline a variable-size memset as rep
 * stos, counted per word): what the library's zeroing calls. */
static void *(*volatile memset_call)(void *, int, size_t) = memset;

static inline __attribute__((always_inline)) int loop(int k, long iters)
{
	enum { SLOTS = 1024 };
	static unsigned char *slots[SLOTS];
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	for (long i = -SLOTS; i < iters; i++) {
		uint64_t r = rnd(&rng);
		size_t j = i < 0 ? (size_t)(i + SLOTS) : (size_t)(r >> 32) % SLOTS;
		size_t sz = 16 + (size_t)(r & 0xffff) % 241;
		unsigned char *p;
		if (k < 0) {
			p = (unsigned char *)null_buf;
			__asm__ volatile("" : "+r"(p) : "r"(slots[j]) : "memory");
		} else {
			if (i >= 0) {
				if (k == 6)
					nd_free_sized(slots[j], *(uint16_t *)(void *)slots[j]);
				else
					free(slots[j]);
			}
			switch (k) {
			case 0: case 6: p = malloc(sz); break;
			case 1: p = nd_malloc_onnode(sz, node); break;
			case 2: p = nd_malloc_local(sz); break;
			case 3: p = nd_malloc_policy(sz, pp); break;
			case 4: p = nd_mallocx_onnode(sz, node, flags); break;
			case 5: p = nd_mallocx_policy(sz, pp, flags); break;
			case 8: p = nd_heap_malloc(heap, sz); break;
			case 9: p = nd_calloc_onnode(1, sz, node); break;
			case 10: p = nd_aligned_alloc_onnode(align, sz, node); break;
			case 11: p = malloc((sz + align - 1) & ~(align - 1)); break;
			case 12: p = malloc(sz); if (p) memset_call(p, 0, sz); break;
			case 13: p = nd_malloc_interleaved(sz, &mask, gran); break;
			case 14: p = nd_calloc_policy(1, sz, pp); break;
			case 15: p = nd_aligned_alloc_policy(align, sz, pp); break;
			default: p = calloc(1, sz); break;
			}
			if (!p) {
				fprintf(stderr, "bench_policy: allocation of %zu bytes failed\n", sz);
				return 1;
			}
		}
		*(uint16_t *)(void *)p = (uint16_t)sz;
		slots[j] = p;
	}
	unsigned sum = 0;
	for (int i = 0; i < SLOTS; i++)
		sum += slots[i][0];
	printf("RESULT sum=%u\n", sum);
	return 0;
}

/* One function per copy: each is compiled alone, so the loop's own code
 * is the same in every copy (in one big function gcc turned the
 * modulo into a div in some copies and not in others). */
#define LOOP(k, name) \
	static __attribute__((noinline)) int name(long iters) { return loop(k, iters); }
LOOP(-1, loop_null)
LOOP(0, loop_0)
LOOP(1, loop_1)
LOOP(2, loop_2)
LOOP(3, loop_3)
LOOP(4, loop_4)
LOOP(5, loop_5)
LOOP(6, loop_6)
LOOP(7, loop_7)
LOOP(8, loop_8)
LOOP(9, loop_9)
LOOP(10, loop_10)
LOOP(11, loop_11)
LOOP(12, loop_12)
LOOP(13, loop_13)
LOOP(14, loop_14)
LOOP(15, loop_15)

static int run(long iters)
{
	switch (kind) {
	case -1: return loop_null(iters);
	case 0: return loop_0(iters);
	case 1: return loop_1(iters);
	case 2: return loop_2(iters);
	case 3: return loop_3(iters);
	case 4: return loop_4(iters);
	case 5: return loop_5(iters);
	case 6: return loop_6(iters);
	case 8: return loop_8(iters);
	case 9: return loop_9(iters);
	case 10: return loop_10(iters);
	case 11: return loop_11(iters);
	case 12: return loop_12(iters);
	case 13: return loop_13(iters);
	case 14: return loop_14(iters);
	case 15: return loop_15(iters);
	default: return loop_7(iters);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_policy malloc|onnode:N|local|policy:SPEC iterations [null]\n");
		return 2;
	}
	const char *call = argv[1];
	long iters = atol(argv[2]);
	int null_mode = argc > 3 && strcmp(argv[3], "null") == 0;
	static nd_policy_t pol;
	pp = &pol;
	char err[256];
	if (strcmp(call, "malloc") == 0) {
		kind = 0;
	} else if (strncmp(call, "onnode:", 7) == 0) {
		kind = 1;
		node = atoi(call + 7);
	} else if (strcmp(call, "local") == 0) {
		kind = 2;
	} else if (strncmp(call, "policy:", 7) == 0) {
		kind = 3;
		if (nd_policy_parse(call + 7, &pol, err, sizeof err) != 0) {
			fprintf(stderr, "bench_policy: %s\n", err);
			return 2;
		}
	} else if (strncmp(call, "prepared:", 9) == 0 || strncmp(call, "xpolicy:", 8) == 0) {
		const char *spec = call + 9;
		kind = 3;
		if (call[0] == 'x') {
			kind = 5;
			char *end;
			flags = (unsigned)strtoul(call + 8, &end, 0);
			spec = end + 1;
		}
		if (nd_policy_parse(spec, &pol, err, sizeof err) != 0 || !(pp = nd_policy_prepare(&pol))) {
			fprintf(stderr, "bench_policy: %s\n", err);
			return 2;
		}
	} else if (strncmp(call, "xonnode:", 8) == 0) {
		char *end;
		kind = 4;
		node = (int)strtol(call + 8, &end, 0);
		flags = (unsigned)strtoul(end + 1, NULL, 0);
	} else if (strcmp(call, "sized") == 0) {
		kind = 6;
	} else if (strcmp(call, "calloc") == 0) {
		kind = 7;
	} else if (strncmp(call, "heap:", 5) == 0) {
		kind = 8;
		if (!(heap = nd_heap_new(atoi(call + 5)))) {
			fprintf(stderr, "bench_policy: nd_heap_new(%s) failed\n", call + 5);
			return 2;
		}
	} else if (strncmp(call, "callocon:", 9) == 0) {
		kind = 9;
		node = atoi(call + 9);
	} else if (strncmp(call, "alignon:", 8) == 0) {
		char *end;
		kind = 10;
		node = (int)strtol(call + 8, &end, 0);
		align = strtoul(end + 1, NULL, 0);
	} else if (strncmp(call, "mallocr:", 8) == 0) {
		kind = 11;
		align = strtoul(call + 8, NULL, 0);
		if (!align || (align & (align - 1))) {
			fprintf(stderr, "bench_policy: bad alignment '%s'\n", call + 8);
			return 2;
		}
	} else if (strcmp(call, "mallocz") == 0) {
		kind = 12;
	} else if (strncmp(call, "interleaved:", 12) == 0) {
		/* interleaved:GRAN (bytes): over every node */
		kind = 13;
		gran = strtoul(call + 12, NULL, 0);
		for (int n = 0; n < nd_node_limit(); n++)
			nd_nodemask_set(&mask, n);
	} else if (strncmp(call, "callocpol:", 10) == 0 || strncmp(call, "alignpol:", 9) == 0) {
		/* callocpol:SPEC, alignpol:ALIGN:SPEC: a prepared policy */
		const char *spec = call + 10;
		kind = 14;
		if (call[0] == 'a') {
			char *end;
			kind = 15;
			align = strtoul(call + 9, &end, 0);
			spec = end + 1;
		}
		if (nd_policy_parse(spec, &pol, err, sizeof err) != 0 || !(pp = nd_policy_prepare(&pol))) {
			fprintf(stderr, "bench_policy: %s\n", err);
			return 2;
		}
	} else {
		fprintf(stderr, "bench_policy: bad call '%s'\n", call);
		return 2;
	}
	if (null_mode)
		kind = -1;
	return run(iters);
}
