// SPDX-License-Identifier: MIT
/* Thread churn keeps slabs dense (issue 11, peak RSS of bench wl_threads):
 * rounds of short-lived threads (wl_threads's pattern and size mix), each
 * allocating, churning, swapping a quarter of its objects into a shared
 * array (freed later by a thread of another round) and freeing the rest.
 * Between rounds every worker is gone and its heap parked; the slabs held
 * must stay in proportion to the objects still out. Before the parked
 * heaps handed out their partial slabs one at a time (heap.c, steal), a
 * remote free into a parked heap made the next thread that needed a slab
 * absorb every parked heap whole: one heap gathered the sparse slabs of all
 * exited threads, its next owner used few of them and the other new
 * threads took fresh ones. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { NT = 4, ROUNDS = 20, SLOTS = 500, STEPS = 20000, NSHARED = NT * SLOTS };
static _Atomic(unsigned char *) shared[NSHARED];
static atomic_int started, go; /* a round's workers take their heaps one at a time */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* bench/wl_threads's mix: 90% 16..256 B, 9% to 2 KiB, 1% to 32 KiB */
static size_t pick(uint64_t *s)
{
	unsigned r = (unsigned)(rnd(s) % 100);
	if (r < 90)
		return 16 + (size_t)(rnd(s) % 241);
	if (r < 99)
		return 257 + (size_t)(rnd(s) % 1792);
	return 2049 + (size_t)(rnd(s) % 30720);
}

static unsigned char *make(size_t sz)
{
	unsigned char *p = malloc(sz);
	if (!p) { /* CHECK's counters belong to the main thread */
		fprintf(stderr, "malloc(%zu) failed in a worker\n", sz);
		abort();
	}
	memcpy(p, &sz, sizeof(uint16_t)); /* the size, for the live count below */
	p[sz - 1] = 1;
	return p;
}

static void *work(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg;
	unsigned char *mine[SLOTS];
	/* The first malloc takes a parked heap (heap.c, heap_take), one
	 * worker at a time: 4 heaps every round. Until a sweep took the parked
	 * heaps out one at a time (test_heap_sweep_take), a worker starting
	 * during a sweep made a new heap and took fresh slabs while a parked
	 * heap's slabs stayed unused (under load 5-7 heaps for 4 threads,
	 * 6.0-6.8 slots per object: the assertion below failed 2 of 40 runs). */
	free(make(16));
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&go))
		sched_yield();
	for (int i = 0; i < SLOTS; i++)
		mine[i] = make(pick(&s));
	for (int k = 0; k < STEPS; k++) {
		int i = (int)(rnd(&s) % SLOTS);
		free(mine[i]);
		mine[i] = make(pick(&s));
	}
	for (int i = 0; i < SLOTS; i++) {
		unsigned char *p = mine[i];
		if (i % 4 == 0)
			p = atomic_exchange(&shared[rnd(&s) % NSHARED], p);
		free(p);
	}
	return NULL;
}

/* Bytes of the live slabs; objects out and the slabs' capacity. */
static uint64_t slab_use(uint64_t *objects, uint64_t *cap)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	int n = _nd_slab_class_stats(st, ND_SLAB_CLASSES);
	uint64_t b = 0;
	*objects = *cap = 0;
	for (int c = 0; c < n; c++) {
		b += st[c].slab_bytes;
		*objects += st[c].objects;
		*cap += st[c].capacity;
	}
	return b;
}

int main(void)
{
	uint64_t slab_sum = 0, live_sum = 0;
	double sum_ratio = 0;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t t[NT];
		for (int i = 0; i < NT; i++) {
			CHECK(pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(0x9E3779B97F4A7C15ull * (uint64_t)(r * NT + i + 1))) == 0);
			while (atomic_load(&started) <= i)
				sched_yield();
		}
		atomic_store(&go, 1);
		for (int i = 0; i < NT; i++)
			pthread_join(t[i], NULL);
		atomic_store(&started, 0);
		atomic_store(&go, 0);
		uint64_t live = 0;
		for (int k = 0; k < NSHARED; k++) {
			unsigned char *p = atomic_load(&shared[k]);
			uint16_t sz;
			if (p) {
				memcpy(&sz, p, sizeof sz);
				live += sz;
			}
		}
		uint64_t objs, cap, b = slab_use(&objs, &cap);
		if (r >= ROUNDS / 2) { /* past the start: the mean of the second half */
			sum_ratio += (double)cap / (double)(objs ? objs : 1);
			slab_sum += b;
			live_sum += live;
		}
		if (r == ROUNDS - 1)
			printf("round %d: %llu KiB of slabs (%llu of %llu objects) for %llu KiB live\n", r,
			       (unsigned long long)(b >> 10), (unsigned long long)objs, (unsigned long long)cap,
			       (unsigned long long)(live >> 10));
	}
	/* Objects out (the shared array's, and remote frees not collected
	 * yet) against the capacity of the slabs held, mean of rounds 10-19:
	 * stealing 3.4-4.6 slots per object when written; on main of
	 * 2026-11-27, 40 runs each under load, 4.4-5.8 (gcc) and 5.7-6.0
	 * (ThreadSanitizer build: the old bound of 6 failed there). Absorbing
	 * heaps whole (the bug: steal off, sweep_pool absorbing) 8-11 then,
	 * 15-19 now. The bound sits between, away from both. */
	double n = ROUNDS - ROUNDS / 2;
	printf("rounds %d-%d: %.2f object slots per object out\n", ROUNDS / 2, ROUNDS - 1, sum_ratio / n);
	CHECK(sum_ratio / n <= 8.0, "rounds %d-%d: %.1f object slots per object out (%.0f KiB of slabs, %.0f KiB live)",
	      ROUNDS / 2, ROUNDS - 1, sum_ratio / n, (double)slab_sum / n / 1024, (double)live_sum / n / 1024);
	for (int k = 0; k < NSHARED; k++)
		free(atomic_load(&shared[k]));
	return CHECK_DONE();
}
