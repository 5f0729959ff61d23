// SPDX-License-Identifier: MIT
/*
 * Workload 10: random allocation patterns across threads.
 *
 *   wl_rpat [threads [blocks [ops [min [max [dist [cross [loops [rounds]]]]]]]]]
 *
 * Models the public description of rpmalloc's benchmark tool (written
 * here from that description; a held-out benchmark of this kind had
 * nodalloc's peak RSS at 2.4x the best peer's, docs/benchmarks.md).
 * `threads` (default 2) threads, each with an array of `blocks` (default
 * 1000) slots. Sizes are random in [min, max] (default 16..16000) with
 * distribution `dist`: 1 even; 2 linear falloff (default): an even size
 * scaled by a weight whose density falls linearly from 1 to 0; 3
 * exponential-like falloff: scaled by the product of two even weights.
 * Each of a thread's `loops` (default 10000) iterations:
 *   - frees 0.8 x a random 30..99% of `ops` (default 100) slots, walking
 *     the array with one prime stride (an empty slot is skipped),
 *   - frees every batch other threads handed it since its last loop,
 *   - allocates a random 30..99% of `ops` blocks into slots walked with
 *     another prime stride, freeing what a slot still holds first,
 *   - every `cross` (default 2; 0: never) loops, allocates as many
 *     blocks again into a batch that it hands to the next other thread
 *     (round robin), which frees them (cross-thread frees).
 * Every block is written as a program that uses it would: its first
 * word (the size, checked at the free), one byte in each of its pages,
 * its last byte. The loops hold about 55% of the slots full. A thread
 * has at most 2 batches in flight to it (a sender waits, taking its own
 * inbox meanwhile): the peak does not depend on how the scheduler runs
 * the threads. `rounds` (default 2) times: all threads run their loops,
 * then each frees its inbox and all its slots.
 * One malloc (block or batch) = one malloc/free pair. Sizes, counts and
 * strides come from fixed seeds: every allocator does the same work.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "wl_common.h"

struct batch {
	struct batch *next;
	long n;
	uint32_t *p[]; /* the blocks, freed by the thread it is handed to */
};

struct worker {
	pthread_t th;
	long id;
	uint64_t seed;
	_Alignas(64) _Atomic(struct batch *) inbox; /* pushed by others, taken whole by its owner */
	atomic_long queued;                          /* batches in the inbox */
	_Alignas(64) long mallocs, bad;
};

static long nthreads, nblocks, ops, minsz, maxsz, dist, cross, nloops, nrounds;
static size_t stride_alloc, stride_free;
static struct worker *workers;
static pthread_barrier_t bar;
static atomic_long finished; /* threads done with the round's loops (rounds x threads) */

/* Batches in flight to one thread at most: a thread the scheduler leaves
 * behind would otherwise collect its senders' batches (165 MiB under
 * glibc in a run on the loaded 2-core machine, 7 MiB when they keep
 * pace), and the peak would measure the scheduler. */
#define QMAX 2

static size_t pick(uint64_t *rng)
{
	double range = (double)(maxsz - minsz);
	double u = (double)(wl_rand(rng) >> 11) * 0x1p-53;
	if (dist == 2) { /* |w0 + w1 - 1|: a triangle, density 2 (1 - x) */
		double w0 = (double)(wl_rand(rng) >> 11) * 0x1p-53, w1 = (double)(wl_rand(rng) >> 11) * 0x1p-53;
		u *= w0 + w1 > 1 ? w0 + w1 - 1 : 1 - w0 - w1;
	} else if (dist == 3) {
		double w0 = (double)(wl_rand(rng) >> 11) * 0x1p-53, w1 = (double)(wl_rand(rng) >> 11) * 0x1p-53;
		u *= w0 * w1;
	}
	return (size_t)minsz + (size_t)(range * u + 0.5);
}

/* A block of sz bytes written as rpmalloc's tool writes it: the size in
 * the first word, a byte in each page, the last byte. */
static uint32_t *make(size_t sz, long *count)
{
	unsigned char *p = malloc(sz);
	if (!p)
		wl_oom("wl_rpat", sz);
	for (size_t off = 4096; off < sz; off += 4096)
		p[off] = 1;
	p[sz - 1] = (unsigned char)(sz >> 3);
	uint32_t s32 = (uint32_t)sz;
	memcpy(p, &s32, sizeof s32);
	++*count;
	return (uint32_t *)p;
}

/* the size in the first word and its stamp in the last byte */
static long broken(const uint32_t *p)
{
	uint32_t sz = p[0];
	return sz < (uint32_t)minsz || sz > (uint32_t)maxsz ||
	       ((const unsigned char *)p)[sz - 1] != (unsigned char)(sz >> 3);
}

/* 30..99% of ops, at least 1 */
static long count(uint64_t *rng, double scale)
{
	long n = (long)(scale * (double)ops * (double)wl_range(rng, 30, 99) / 100.0);
	return n > 0 ? n : 1;
}

static void drain(struct worker *w)
{
	struct batch *b = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
	long n = 0;
	for (struct batch *c = b; c; c = c->next)
		n++;
	if (n)
		atomic_fetch_sub_explicit(&w->queued, n, memory_order_relaxed);
	while (b) {
		struct batch *next = b->next;
		for (long i = 0; i < b->n; i++) {
			w->bad += broken(b->p[i]);
			free(b->p[i]);
		}
		free(b);
		b = next;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = w->seed;
	uint32_t **slot = calloc((size_t)nblocks, sizeof *slot);
	if (!slot)
		wl_oom("wl_rpat", (size_t)nblocks * sizeof *slot);
	size_t ia = 0, ifr = 0;
	long to = w->id;
	for (long r = 0; r < nrounds; r++) {
		pthread_barrier_wait(&bar); /* the round starts */
		for (long l = 0; l < nloops; l++) {
			long nf = count(&rng, 0.8), na = count(&rng, 1.0);
			for (long i = 0; i < nf; i++, ifr = (ifr + stride_free) % (size_t)nblocks) {
				if (!slot[ifr])
					continue;
				w->bad += broken(slot[ifr]);
				free(slot[ifr]);
				slot[ifr] = NULL;
			}
			drain(w);
			for (long i = 0; i < na; i++, ia = (ia + stride_alloc) % (size_t)nblocks) {
				if (slot[ia]) {
					w->bad += broken(slot[ia]);
					free(slot[ia]);
				}
				slot[ia] = make(pick(&rng), &w->mallocs);
			}
			if (!cross || nthreads < 2 || l % cross)
				continue;
			if ((to = (to + 1) % nthreads) == w->id)
				to = (to + 1) % nthreads;
			struct worker *t = &workers[to];
			while (atomic_load_explicit(&t->queued, memory_order_relaxed) >= QMAX) {
				drain(w); /* two threads waiting for each other both drain */
				sched_yield();
			}
			struct batch *b = malloc(sizeof *b + (size_t)na * sizeof b->p[0]);
			if (!b)
				wl_oom("wl_rpat", sizeof *b + (size_t)na * sizeof b->p[0]);
			w->mallocs++;
			b->n = na;
			for (long i = 0; i < na; i++)
				b->p[i] = make(pick(&rng), &w->mallocs);
			atomic_fetch_add_explicit(&t->queued, 1, memory_order_relaxed);
			b->next = atomic_load_explicit(&t->inbox, memory_order_relaxed);
			while (!atomic_compare_exchange_weak_explicit(&t->inbox, &b->next, b, memory_order_release,
								      memory_order_relaxed))
				;
		}
		/* a thread done early keeps taking batches until every
		 * thread is done, so every thread sends all of its own */
		atomic_fetch_add(&finished, 1);
		while (atomic_load(&finished) < (r + 1) * nthreads) {
			drain(w);
			sched_yield();
		}
		pthread_barrier_wait(&bar); /* no batch is sent any more */
		drain(w);
		for (long i = 0; i < nblocks; i++) {
			if (slot[i]) {
				w->bad += broken(slot[i]);
				free(slot[i]);
				slot[i] = NULL;
			}
		}
		pthread_barrier_wait(&bar); /* the round ends */
	}
	free(slot);
	return NULL;
}

/* the smallest of these primes that does not divide n, after skip */
static size_t stride(long n, size_t skip)
{
	static const size_t primes[] = {7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61};
	for (size_t i = 0; i < sizeof primes / sizeof primes[0]; i++)
		if (primes[i] > skip && n % (long)primes[i])
			return primes[i];
	return 1;
}

int main(int argc, char **argv)
{
	nthreads = wl_arg(argc, argv, 1, 2, "thread count");
	nblocks = wl_arg(argc, argv, 2, 1000, "block count");
	ops = wl_arg(argc, argv, 3, 100, "op count");
	minsz = wl_arg(argc, argv, 4, 16, "smallest size");
	maxsz = wl_arg(argc, argv, 5, 16000, "largest size");
	dist = wl_arg(argc, argv, 6, 2, "distribution (1 even, 2 linear, 3 exp)");
	cross = argc > 7 && strcmp(argv[7], "0") == 0 ? 0 : wl_arg(argc, argv, 7, 2, "cross rate");
	nloops = wl_arg(argc, argv, 8, 10000, "loop count");
	nrounds = wl_arg(argc, argv, 9, 2, "round count");
	if (minsz < 8 || maxsz < minsz || maxsz > 0x7fffffffL || dist > 3 || nthreads > 1024) {
		fprintf(stderr,
			"%s: bad arguments: expected 8 <= min <= max < 2 GiB, distribution 1, 2 or 3, at most 1024 threads\n",
			argv[0]);
		return 2;
	}
	stride_alloc = stride(nblocks, 0);
	stride_free = stride(nblocks, stride_alloc);
	workers = calloc((size_t)nthreads, sizeof *workers);
	if (!workers)
		wl_oom(argv[0], (size_t)nthreads * sizeof *workers);
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
	for (long i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].seed = wl_seed(0, nthreads, i);
		wl_spawn(&workers[i].th, work, &workers[i], argv[0]);
	}
	double t = 0;
	for (long r = 0; r < nrounds; r++) {
		double t0 = wl_now();
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		t += wl_now() - t0;
	}
	long mallocs = 0, bad = 0;
	for (long i = 0; i < nthreads; i++) {
		pthread_join(workers[i].th, NULL);
		mallocs += workers[i].mallocs;
		bad += workers[i].bad;
	}
	pthread_barrier_destroy(&bar);
	free(workers);
	if (bad) {
		fprintf(stderr, "%s: %ld blocks found corrupted\n", argv[0], bad);
		return 1;
	}
	wl_result("rpat", (int)nthreads, mallocs, t, "");
	return 0;
}
