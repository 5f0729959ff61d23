// SPDX-License-Identifier: MIT
/*
 * Workload 3: a larson-like server pattern.
 *
 *   wl_larson [threads [rounds [ops-per-thread-per-round [slots [min [max [mode]]]]]]]
 *
 * A shared array of `slots` pointers (default 16384), pre-filled. In each
 * round `threads` new threads start (thread churn, like larson's replaced
 * server threads); each does `ops` steps of: malloc a random size in
 * min..max bytes (default 16..1000), stamp it, atomically swap it into a random slot and free
 * what was there. The old object was usually allocated by another thread,
 * often one that has exited already, so most frees are remote. One step =
 * one malloc/free pair; sizes and slots come from per-thread fixed seeds.
 *
 * Mode 2 is Larson's own benchmark: each of the `threads` lines owns
 * slots/threads slots, a step frees the slot's object before it mallocs
 * the new one, and a thread that is done starts its line's next one (a
 * round) before it exits, so the successor frees, at first, the objects
 * of a thread that is still exiting. Mode 1 (default) as above.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "wl_common.h"

static _Atomic(uint64_t *) *slots;
static long nslots, ops, minsz, maxsz;
static atomic_long bad;

struct worker {
	pthread_t th;
	uint64_t seed;
	size_t base, n;	  /* the slots it swaps into */
	pthread_t *line;  /* mode 2: its line's threads, one a round */
	long gen, rounds; /* mode 2: which round, of how many */
};

/* The size, and its complement when the object has room for it. */
static void stamp(uint64_t *p, size_t sz)
{
	p[0] = sz;
	if (sz >= 16)
		p[1] = ~(uint64_t)sz;
}

/* 1 if a stamped object was overwritten (NULL passes). */
static long check(const uint64_t *p)
{
	return p && p[0] >= 16 && p[1] != ~p[0];
}

static uint64_t round_seed(long r, long i)
{
	return 0x9E3779B97F4A7C15ULL ^ (uint64_t)(r * 1000 + i + 1) * 0x100000001B3ULL;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = w->seed;
	long local_bad = 0;
	for (long i = 0; i < ops; i++) {
		uint64_t r = wl_rand(&rng);
		size_t k = w->base + (size_t)(r >> 32) % w->n;
		size_t sz = (size_t)minsz + (size_t)(r & 0xffff) % (size_t)(maxsz - minsz + 1);
		if (w->line) { /* Larson's order: the slot's object freed first */
			uint64_t *old = atomic_load_explicit(&slots[k], memory_order_relaxed);
			local_bad += check(old);
			free(old);
		}
		uint64_t *p = malloc(sz);
		if (!p)
			wl_oom("wl_larson", sz);
		stamp(p, sz);
		if (w->line) {
			atomic_store_explicit(&slots[k], p, memory_order_relaxed);
			continue;
		}
		uint64_t *old = atomic_exchange_explicit(&slots[k], p, memory_order_acq_rel);
		local_bad += check(old);
		free(old);
	}
	atomic_fetch_add(&bad, local_bad);
	if (w->line && ++w->gen < w->rounds) {
		/* the line's next thread; main joins it after this one */
		w->seed = round_seed(w->gen, (long)(w->base / w->n));
		if (pthread_create(&w->line[w->gen], NULL, work, w)) {
			fprintf(stderr, "wl_larson: pthread_create failed\n");
			exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = wl_arg(argc, argv, 1, 2, "thread count");
	long rounds = wl_arg(argc, argv, 2, 8, "round count");
	ops = wl_arg(argc, argv, 3, 500000, "ops per thread per round");
	nslots = wl_arg(argc, argv, 4, 16384, "slot count");
	minsz = wl_arg(argc, argv, 5, 16, "smallest size");
	maxsz = wl_arg(argc, argv, 6, 1000, "largest size");
	long mode = wl_arg(argc, argv, 7, 1, "mode");
	if (minsz < 8 || maxsz < minsz || mode > 2 || nslots < threads) {
		fprintf(stderr, "%s: bad sizes %ld..%ld or mode: expected 8 <= min <= max, mode 1 or 2, slots >= threads\n",
			argv[0], minsz, maxsz);
		return 2;
	}
	slots = calloc((size_t)nslots, sizeof *slots);
	struct worker *w = calloc((size_t)threads, sizeof *w);
	if (!slots || !w)
		wl_oom(argv[0], (size_t)nslots * sizeof *slots);
	uint64_t rng = 0x243F6A8885A308D3ULL;
	for (long i = 0; i < nslots; i++) {
		size_t sz = wl_range(&rng, (size_t)minsz, (size_t)maxsz);
		uint64_t *p = malloc(sz);
		if (!p)
			wl_oom(argv[0], sz);
		stamp(p, sz);
		slots[i] = p;
	}
	pthread_t *lines = NULL;
	if (mode == 2 && !(lines = calloc((size_t)(threads * rounds), sizeof *lines)))
		wl_oom(argv[0], (size_t)(threads * rounds) * sizeof *lines);
	for (long i = 0; i < threads; i++) {
		w[i].n = mode == 2 ? (size_t)(nslots / threads) : (size_t)nslots;
		w[i].base = mode == 2 ? (size_t)i * w[i].n : 0;
		w[i].line = mode == 2 ? lines + i * rounds : NULL;
		w[i].rounds = rounds;
	}
	double t0 = wl_now();
	for (long r = 0; r < (mode == 2 ? 1 : rounds); r++) {
		for (long i = 0; i < threads; i++) {
			w[i].seed = round_seed(r, i);
			if (pthread_create(w[i].line ? &w[i].line[0] : &w[i].th, NULL, work, &w[i])) {
				fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
				return 1;
			}
		}
		/* a line's round g + 1 was created before round g's join returns */
		for (long i = 0; i < threads; i++)
			for (long g = 0; g < (w[i].line ? rounds : 1); g++)
				pthread_join(w[i].line ? w[i].line[g] : w[i].th, NULL);
	}
	double t = wl_now() - t0;
	for (long i = 0; i < nslots; i++)
		free(slots[i]);
	free(slots);
	free(lines);
	free(w);
	if (bad) {
		fprintf(stderr, "%s: %ld objects found corrupted\n", argv[0], (long)bad);
		return 1;
	}
	wl_result("larson", (int)threads, threads * rounds * ops, t, "");
	return 0;
}
