// SPDX-License-Identifier: MIT
/*
 * Workload 3: a larson-like server pattern.
 *
 *   wl_larson [threads [rounds [ops-per-thread-per-round [slots]]]]
 *
 * A shared array of `slots` pointers (default 16384), pre-filled. In each
 * round `threads` new threads start (thread churn, like larson's replaced
 * server threads); each does `ops` steps of: malloc a random size in
 * 16..1000 bytes, stamp it, atomically swap it into a random slot and free
 * what was there. The old object was usually allocated by another thread,
 * often one that has exited already, so most frees are remote. One step =
 * one malloc/free pair; sizes and slots come from per-thread fixed seeds.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "wl_common.h"

static _Atomic(uint64_t *) *slots;
static long nslots, ops;
static atomic_long bad;

struct worker {
	pthread_t th;
	uint64_t seed;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = w->seed;
	long local_bad = 0;
	for (long i = 0; i < ops; i++) {
		uint64_t r = wl_rand(&rng);
		size_t k = (size_t)(r >> 32) % (size_t)nslots;
		size_t sz = 16 + (size_t)(r & 0xffff) % 985;
		uint64_t *p = malloc(sz);
		if (!p)
			wl_oom("wl_larson", sz);
		p[0] = sz;
		p[1] = ~(uint64_t)sz;
		uint64_t *old = atomic_exchange_explicit(&slots[k], p, memory_order_acq_rel);
		if (old) {
			if (old[1] != ~old[0])
				local_bad++;
			free(old);
		}
	}
	atomic_fetch_add(&bad, local_bad);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = wl_arg(argc, argv, 1, 2, "thread count");
	long rounds = wl_arg(argc, argv, 2, 8, "round count");
	ops = wl_arg(argc, argv, 3, 500000, "ops per thread per round");
	nslots = wl_arg(argc, argv, 4, 16384, "slot count");
	slots = calloc((size_t)nslots, sizeof *slots);
	struct worker *w = calloc((size_t)threads, sizeof *w);
	if (!slots || !w)
		wl_oom(argv[0], (size_t)nslots * sizeof *slots);
	uint64_t rng = 0x243F6A8885A308D3ULL;
	for (long i = 0; i < nslots; i++) {
		size_t sz = wl_range(&rng, 16, 1000);
		uint64_t *p = malloc(sz);
		if (!p)
			wl_oom(argv[0], sz);
		p[0] = sz;
		p[1] = ~(uint64_t)sz;
		slots[i] = p;
	}
	double t0 = wl_now();
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < threads; i++) {
			w[i].seed = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(r * 1000 + i + 1) * 0x100000001B3ULL;
			if (pthread_create(&w[i].th, NULL, work, &w[i])) {
				fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
				return 1;
			}
		}
		for (long i = 0; i < threads; i++)
			pthread_join(w[i].th, NULL);
	}
	double t = wl_now() - t0;
	for (long i = 0; i < nslots; i++)
		free(slots[i]);
	free(slots);
	free(w);
	if (bad) {
		fprintf(stderr, "%s: %ld objects found corrupted\n", argv[0], (long)bad);
		return 1;
	}
	wl_result("larson", (int)threads, threads * rounds * ops, t, "");
	return 0;
}
