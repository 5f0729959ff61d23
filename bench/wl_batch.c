// SPDX-License-Identifier: MIT
/*
 * wl_batch: threads that each allocate a batch of small blocks and free
 * it whole, in allocation order, again and again (the kind of a held-out
 * thread test, written from its public description; task outside27). No
 * block leaves its thread. Each of T threads does R rounds of: malloc N
 * blocks of S bytes (first byte written), free them oldest first.
 * outside27 measured nodalloc at 1.33x mimalloc's time with 2 threads
 * (30,000 blocks of 8 B, 400 rounds), at its time with 1 thread, and at
 * its time again with two emulated nodes (a thread on each): the two
 * threads on one node slow each other down: docs/benchmarks.md "Outside
 * bench/: 2026-11-28 night".
 *
 *   wl_batch [threads [rounds [blocks [size]]]]
 */
#include "wl_common.h"

static long rounds, nblocks;
static size_t size;

static void *worker(void *arg)
{
	(void)arg;
	char **p = malloc((size_t)nblocks * sizeof *p);
	if (!p)
		wl_oom("wl_batch", (size_t)nblocks * sizeof *p);
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < nblocks; i++) {
			p[i] = malloc(size);
			if (!p[i])
				wl_oom("wl_batch", size);
			p[i][0] = (char)i;
		}
		for (long i = 0; i < nblocks; i++)
			free(p[i]);
	}
	free(p);
	return NULL;
}

int main(int argc, char **argv)
{
	long nt = wl_threads_arg(argc, argv, 1, 2);
	rounds = wl_arg(argc, argv, 2, 400, "rounds");
	nblocks = wl_arg(argc, argv, 3, 30000, "blocks");
	size = (size_t)wl_arg(argc, argv, 4, 8, "size");
	double t = wl_run_threads(nt, worker, argv[0]);
	wl_result("batch", (int)nt, nt * rounds * nblocks, t, NULL);
	return 0;
}
