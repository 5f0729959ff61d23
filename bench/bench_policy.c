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
 * (nd_malloc_policy with one policy object parsed once and reused).
 * Frees go through free(). "null" runs the loop without allocating (its
 * own cost, subtracted by policy.sh). Linked against the shared library,
 * so the thread-local accesses cost what they cost under LD_PRELOAD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodalloc.h"

static char null_buf[256];

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
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
	int kind = 0, node = 0;
	nd_policy_t pol;
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
	} else {
		fprintf(stderr, "bench_policy: bad call '%s'\n", call);
		return 2;
	}
	enum { SLOTS = 1024 };
	static char *slots[SLOTS];
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	for (long i = -SLOTS; i < iters; i++) {
		uint64_t r = rnd(&rng);
		size_t k = i < 0 ? (size_t)(i + SLOTS) : (size_t)(r >> 32) % SLOTS;
		size_t sz = 16 + (size_t)(r & 0xffff) % 241;
		char *p;
		if (null_mode) {
			p = null_buf;
			__asm__ volatile("" : "+r"(p) : "r"(slots[k]) : "memory");
		} else {
			if (i >= 0)
				free(slots[k]);
			switch (kind) {
			case 0: p = malloc(sz); break;
			case 1: p = nd_malloc_onnode(sz, node); break;
			case 2: p = nd_malloc_local(sz); break;
			default: p = nd_malloc_policy(sz, &pol); break;
			}
			if (!p) {
				fprintf(stderr, "bench_policy: %s of %zu bytes failed\n", call, sz);
				return 1;
			}
		}
		p[0] = (char)sz;
		slots[k] = p;
	}
	unsigned sum = 0;
	for (int i = 0; i < SLOTS; i++)
		sum += (unsigned char)slots[i][0];
	printf("RESULT sum=%u\n", sum);
	return 0;
}
