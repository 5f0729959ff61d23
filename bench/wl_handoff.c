// SPDX-License-Identifier: MIT
/*
 * wl_handoff: batches freed in two orders, a tenth of each handed to the
 * next thread (the kind of a held-out threaded stress test, written from
 * its public description: objects freed partly last-allocated-first,
 * partly in allocation order, and across threads; task outside27).
 * Each of T threads in a ring does R rounds of: free the batch the
 * previous thread handed it (if any), malloc 1000 blocks (7 in 8 of
 * 1..64 B, the rest 1..1000 B; first byte written), hand every 10th to
 * the next thread (one atomic exchange of a pointer array), free the
 * rest: the second half newest first, then the first half oldest first.
 * So 90% of the frees are the allocating thread's own, 10% another's.
 * outside27 measured nodalloc at 2.5x mimalloc's time with 4 threads on
 * 2 CPUs (without the hand-off: at mimalloc's; with two emulated nodes:
 * below it): docs/benchmarks.md "Outside bench/: 2026-11-28 night".
 *
 *   wl_handoff [threads [rounds]]
 */
#include <stdatomic.h>

#include "wl_common.h"

#define BATCH 1000
#define EVERY 10 /* every 10th block of a batch is handed on */
#define HAND (BATCH / EVERY)

static long nthreads, rounds;
static _Atomic(void **) box[WL_MAXT]; /* box[i]: the batch handed to thread i */
static atomic_long bad;		   /* handed blocks found overwritten */

/* Frees a handed batch: block i was the batch's block i * EVERY, its
 * first byte that index's low byte. */
static void free_batch(void **b)
{
	if (!b)
		return;
	for (int i = 0; i < HAND; i++) {
		if (((char *)b[i])[0] != (char)(i * EVERY))
			atomic_fetch_add(&bad, 1);
		free(b[i]);
	}
	free(b);
}

static void *worker(void *arg)
{
	long id = (long)(uintptr_t)arg;
	uint64_t s = wl_seed(0, nthreads, id);
	void *p[BATCH];
	for (long r = 0; r < rounds; r++) {
		free_batch(atomic_exchange(&box[id], NULL));
		for (int i = 0; i < BATCH; i++) {
			size_t sz = (wl_rand(&s) & 7) ? wl_range(&s, 1, 64) : wl_range(&s, 1, 1000);
			char *q = malloc(sz);
			if (!q)
				wl_oom("wl_handoff", sz);
			q[0] = (char)i;
			p[i] = q;
		}
		void **hand = malloc(HAND * sizeof *hand);
		if (!hand)
			wl_oom("wl_handoff", HAND * sizeof *hand);
		for (int i = 0; i < HAND; i++)
			hand[i] = p[i * EVERY];
		for (int i = BATCH - 1; i >= BATCH / 2; i--)
			if (i % EVERY)
				free(p[i]);
		for (int i = 0; i < BATCH / 2; i++)
			if (i % EVERY)
				free(p[i]);
		/* the next thread frees it, or, if it has not taken the last
		 * one yet, that one goes here */
		free_batch(atomic_exchange(&box[(id + 1) % nthreads], hand));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	nthreads = wl_threads_arg(argc, argv, 1, 4);
	rounds = wl_arg(argc, argv, 2, 5000, "rounds");
	double t = wl_run_threads(nthreads, worker, argv[0]);
	for (long i = 0; i < nthreads; i++)
		free_batch(atomic_exchange(&box[i], NULL));
	char extra[32];
	snprintf(extra, sizeof extra, "bad=%ld", atomic_load(&bad));
	wl_result("handoff", (int)nthreads, nthreads * rounds * BATCH, t, extra);
	return atomic_load(&bad) ? 1 : 0;
}
