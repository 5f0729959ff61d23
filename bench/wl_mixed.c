// SPDX-License-Identifier: MIT
/*
 * wl_mixed: a mixed-size allocation test across threads (the kind of the
 * held-out two-thread allocation tests, written from their public
 * description; task outside26). Each thread keeps 2000 slots; a step
 * frees a random slot's block and allocates one of a size drawn from a
 * mix: 70% 8..128 B, 25% 129..2048 B, 4.9% 2049..65536 B (half of them
 * above 32 KiB, nodalloc's largest size class: page runs), 0.1%
 * 64 KiB..1 MiB; its first and last bytes are written. Every 100,000
 * steps a thread frees all its slots (a phase's end) and fills them again.
 * outside26 measured nodalloc at 4.4x mimalloc's time and 1.13x the best
 * peak RSS with 2 threads; the blocks of 32..64 KiB are the loss (without
 * them, nodalloc matched mimalloc): docs/benchmarks.md "Outside bench/:
 * 2026-11-28 evening".
 *
 *   wl_mixed [threads [steps per thread]]
 */
#include "wl_common.h"

#define SLOTS 2000
#define PHASE 100000

static long steps;

static size_t pick(uint64_t *s)
{
	unsigned r = (unsigned)(wl_rand(s) % 1000);
	if (r < 700)
		return wl_range(s, 8, 128);
	if (r < 950)
		return wl_range(s, 129, 2048);
	if (r < 999)
		return wl_range(s, 2049, 65536);
	return wl_range(s, 65537, 1 << 20);
}

static void *worker(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg;
	char **slot = calloc(SLOTS, sizeof *slot);
	if (!slot)
		wl_oom("wl_mixed", SLOTS * sizeof *slot);
	for (long i = 0; i < steps; i++) {
		unsigned k = (unsigned)(wl_rand(&s) % SLOTS);
		free(slot[k]);
		size_t sz = pick(&s);
		char *p = malloc(sz);
		if (!p)
			wl_oom("wl_mixed", sz);
		p[0] = 1;
		p[sz - 1] = 1;
		slot[k] = p;
		if (i % PHASE == PHASE - 1)
			for (unsigned j = 0; j < SLOTS; j++) {
				free(slot[j]);
				slot[j] = NULL;
			}
	}
	for (unsigned j = 0; j < SLOTS; j++)
		free(slot[j]);
	free(slot);
	return NULL;
}

int main(int argc, char **argv)
{
	long nt = wl_arg(argc, argv, 1, 2, "threads");
	steps = wl_arg(argc, argv, 2, 6000000, "steps");
	if (nt > 64) {
		fprintf(stderr, "%s: bad threads '%ld': expected at most 64\n", argv[0], nt);
		return 2;
	}
	pthread_t th[64];
	double t0 = wl_now();
	for (long i = 0; i < nt; i++)
		wl_spawn(&th[i], worker, (void *)(uintptr_t)wl_seed(0, nt, i), argv[0]);
	for (long i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	wl_result("mixed", (int)nt, nt * steps, wl_now() - t0, NULL);
	return 0;
}
