// SPDX-License-Identifier: MIT
/*
 * Workload 2: producer/consumer across threads.
 *
 *   wl_prodcons [pairs [objects-per-pair [ring-batches]]]
 *
 * Each pair is one producer thread that mallocs objects of 16..512 bytes,
 * stamps them with a sequence number and hands them over in batches of 64
 * through a single-producer single-consumer lock-free ring (default 16
 * batches), and one consumer thread that takes each batch, checks the stamps
 * and frees the objects: every free is a cross-thread (remote) free. One
 * object = one malloc/free pair (the count is rounded up to whole batches).
 * Batching keeps the ring's own cache traffic small next to the allocator's
 * and makes the timing stable: handing over single objects made run times
 * bimodal (ring near empty vs near full). Each side caches the other's
 * index and re-reads it only when the ring looks full or empty; then it
 * spins a little and yields (the machine may have fewer cores than threads).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "wl_common.h"

#define BATCH 64

struct ring {
	_Alignas(64) atomic_size_t head; /* batches published by the producer */
	_Alignas(64) atomic_size_t tail; /* batches released by the consumer */
	_Alignas(64) size_t mask;        /* ring batches - 1 */
	uint64_t *(*slot)[BATCH];        /* the batches: harness memory, not malloc'd in the loop */
	long batches;                    /* batches to send */
	uint64_t seed;
	long bad;
};

static void wait_a_bit(unsigned *spins)
{
	if (++*spins < 64) {
		__asm__ volatile("pause");
	} else {
		*spins = 0;
		sched_yield();
	}
}

static void *producer(void *arg)
{
	struct ring *r = arg;
	uint64_t rng = r->seed;
	size_t head = 0, tail = 0; /* tail: last seen consumer index (stale is safe) */
	uint64_t seq = 0;
	for (long b = 0; b < r->batches; b++) {
		unsigned spins = 0;
		while (head - tail > r->mask) {
			tail = atomic_load_explicit(&r->tail, memory_order_acquire);
			if (head - tail > r->mask)
				wait_a_bit(&spins);
		}
		uint64_t **batch = r->slot[head & r->mask];
		for (int i = 0; i < BATCH; i++) {
			size_t sz = wl_range(&rng, 16, 512);
			uint64_t *p = malloc(sz);
			if (!p)
				wl_oom("wl_prodcons", sz);
			p[0] = seq++;
			batch[i] = p;
		}
		atomic_store_explicit(&r->head, ++head, memory_order_release);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct ring *r = arg;
	size_t tail = 0, head = 0; /* head: last seen producer index (stale is safe) */
	uint64_t seq = 0;
	for (long b = 0; b < r->batches; b++) {
		unsigned spins = 0;
		while (head == tail) {
			head = atomic_load_explicit(&r->head, memory_order_acquire);
			if (head == tail)
				wait_a_bit(&spins);
		}
		uint64_t **batch = r->slot[tail & r->mask];
		for (int i = 0; i < BATCH; i++) {
			if (batch[i][0] != seq++)
				r->bad++;
			free(batch[i]);
		}
		atomic_store_explicit(&r->tail, ++tail, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long pairs = wl_arg(argc, argv, 1, 1, "pair count");
	long count = wl_arg(argc, argv, 2, 4000000, "objects per pair");
	long ring = wl_arg(argc, argv, 3, 16, "ring batch count");
	if (ring & (ring - 1)) {
		fprintf(stderr, "%s: bad ring batch count '%ld': expected a power of two\n", argv[0], ring);
		return 2;
	}
	long batches = (count + BATCH - 1) / BATCH;
	struct ring *rs = aligned_alloc(64, sizeof *rs * (size_t)pairs);
	pthread_t *th = calloc((size_t)pairs * 2, sizeof *th);
	if (!rs || !th)
		wl_oom(argv[0], sizeof *rs * (size_t)pairs);
	for (long i = 0; i < pairs; i++) {
		memset(&rs[i], 0, sizeof rs[i]);
		rs[i].mask = (size_t)ring - 1;
		rs[i].slot = calloc((size_t)ring, sizeof *rs[i].slot);
		if (!rs[i].slot)
			wl_oom(argv[0], (size_t)ring * sizeof *rs[i].slot);
		rs[i].batches = batches;
		rs[i].seed = 0x9E3779B97F4A7C15ULL + (uint64_t)i * 7919;
	}
	double t0 = wl_now();
	for (long i = 0; i < pairs; i++) {
		if (pthread_create(&th[2 * i], NULL, consumer, &rs[i]) ||
		    pthread_create(&th[2 * i + 1], NULL, producer, &rs[i])) {
			fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
			return 1;
		}
	}
	for (long i = 0; i < 2 * pairs; i++)
		pthread_join(th[i], NULL);
	double t = wl_now() - t0;
	long bad = 0;
	for (long i = 0; i < pairs; i++) {
		bad += rs[i].bad;
		free(rs[i].slot);
	}
	free(rs);
	free(th);
	if (bad) {
		fprintf(stderr, "%s: %ld objects arrived corrupted\n", argv[0], bad);
		return 1;
	}
	wl_result("prodcons", (int)(2 * pairs), pairs * batches * BATCH, t, "");
	return 0;
}
