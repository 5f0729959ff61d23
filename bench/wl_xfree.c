// SPDX-License-Identifier: MIT
/*
 * Workload 6: cross-thread free, every object freed by another thread.
 *
 *   wl_xfree [threads [objects-per-thread [ring-batches]]]
 *
 * `threads` (default 2) threads in a ring. Each one mallocs objects of
 * 16..512 bytes, stamps them and hands them in batches of 64 to the next
 * thread through a single-producer single-consumer lock-free ring (default
 * 16 batches), and frees the batches the previous thread hands it, after
 * checking the stamps. So every thread both allocates and frees, and every
 * free is of an object another thread allocated (a remote free), unlike
 * prodcons where one thread only allocates and one only frees. A thread
 * whose outgoing ring is full drains its incoming one meanwhile, so the
 * ring cannot deadlock. One object = one malloc/free pair; the count is
 * rounded up to whole batches.
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
	uint64_t *(*slot)[BATCH];        /* harness memory, not malloc'd in the loop */
};

struct worker {
	pthread_t th;
	struct ring *out, *in; /* to the next thread, from the previous one */
	long batches;          /* to send, and to receive */
	uint64_t seed;
	long bad;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = w->seed, seq_out = 0, seq_in = 0;
	size_t out_head = 0, out_tail = 0, in_tail = 0, in_head = 0; /* *_tail/in_head: last seen (stale is safe) */
	long sent = 0, got = 0;
	unsigned idle = 0;
	while (sent < w->batches || got < w->batches) {
		int progress = 0;
		if (sent < w->batches) {
			if (out_head - out_tail > w->out->mask)
				out_tail = atomic_load_explicit(&w->out->tail, memory_order_acquire);
			if (out_head - out_tail <= w->out->mask) {
				uint64_t **b = w->out->slot[out_head & w->out->mask];
				for (int i = 0; i < BATCH; i++) {
					size_t sz = wl_range(&rng, 16, 512);
					uint64_t *p = malloc(sz);
					if (!p)
						wl_oom("wl_xfree", sz);
					p[0] = seq_out++;
					b[i] = p;
				}
				atomic_store_explicit(&w->out->head, ++out_head, memory_order_release);
				sent++;
				progress = 1;
			}
		}
		if (got < w->batches) {
			if (in_head == in_tail)
				in_head = atomic_load_explicit(&w->in->head, memory_order_acquire);
			if (in_head != in_tail) {
				uint64_t **b = w->in->slot[in_tail & w->in->mask];
				for (int i = 0; i < BATCH; i++) {
					if (b[i][0] != seq_in++)
						w->bad++;
					free(b[i]);
				}
				atomic_store_explicit(&w->in->tail, ++in_tail, memory_order_release);
				got++;
				progress = 1;
			}
		}
		if (progress) {
			idle = 0;
		} else if (++idle < 64) {
			__asm__ volatile("pause");
		} else {
			idle = 0;
			sched_yield(); /* the machine may have fewer cores than threads */
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long nt = wl_arg(argc, argv, 1, 2, "thread count");
	long count = wl_arg(argc, argv, 2, 2000000, "objects per thread");
	long ring = wl_arg(argc, argv, 3, 16, "ring batch count");
	if (nt < 2) {
		fprintf(stderr, "%s: bad thread count '%ld': at least 2 (each object is freed by another thread)\n", argv[0], nt);
		return 2;
	}
	if (ring & (ring - 1)) {
		fprintf(stderr, "%s: bad ring batch count '%ld': expected a power of two\n", argv[0], ring);
		return 2;
	}
	long batches = (count + BATCH - 1) / BATCH;
	struct ring *rs = aligned_alloc(64, sizeof *rs * (size_t)nt);
	struct worker *ws = calloc((size_t)nt, sizeof *ws);
	if (!rs || !ws)
		wl_oom(argv[0], sizeof *rs * (size_t)nt);
	for (long i = 0; i < nt; i++) {
		memset(&rs[i], 0, sizeof rs[i]);
		rs[i].mask = (size_t)ring - 1;
		rs[i].slot = calloc((size_t)ring, sizeof *rs[i].slot);
		if (!rs[i].slot)
			wl_oom(argv[0], (size_t)ring * sizeof *rs[i].slot);
	}
	for (long i = 0; i < nt; i++) {
		ws[i].out = &rs[i];
		ws[i].in = &rs[(i + nt - 1) % nt];
		ws[i].batches = batches;
		ws[i].seed = 0x9E3779B97F4A7C15ULL + (uint64_t)i * 7919;
	}
	double t0 = wl_now();
	for (long i = 0; i < nt; i++)
		if (pthread_create(&ws[i].th, NULL, work, &ws[i])) {
			fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
			return 1;
		}
	long bad = 0;
	for (long i = 0; i < nt; i++) {
		pthread_join(ws[i].th, NULL);
		bad += ws[i].bad;
	}
	double t = wl_now() - t0;
	for (long i = 0; i < nt; i++)
		free(rs[i].slot);
	free(rs);
	free(ws);
	if (bad) {
		fprintf(stderr, "%s: %ld objects arrived corrupted\n", argv[0], bad);
		return 1;
	}
	wl_result("xfree", (int)nt, nt * batches * BATCH, t, "");
	return 0;
}
