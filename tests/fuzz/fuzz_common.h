// SPDX-License-Identifier: MIT
/* What the random-operation fuzzers (fuzz_malloc.c, fuzz_threads.c)
 * share: the generator (splitmix64) and the command line
 * "SEED OPS [THREADS]", with make fuzz's ND_FUZZ_OPS (replaces OPS) and
 * ND_FUZZ_SEED (added to SEED). */
#ifndef ND_FUZZ_COMMON_H
#define ND_FUZZ_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 0, or 2 after the usage or the bad argument is printed */
static inline int fuzz_args(int argc, char **argv, int def_threads, int max_threads, uint64_t *seed, long *ops, int *nt)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SEED OPS [THREADS]\n", argv[0]);
		return 2;
	}
	const char *e_ops = getenv("ND_FUZZ_OPS"), *e_seed = getenv("ND_FUZZ_SEED");
	*seed = strtoull(argv[1], NULL, 0) + (e_seed ? strtoull(e_seed, NULL, 0) : 0);
	*ops = e_ops ? atol(e_ops) : atol(argv[2]);
	*nt = argc > 3 ? atoi(argv[3]) : def_threads;
	if (*nt < 1 || *nt > max_threads || *ops < 1) {
		fprintf(stderr, "%s: bad OPS or THREADS\n", argv[0]);
		return 2;
	}
	return 0;
}
#endif
