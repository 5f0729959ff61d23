// SPDX-License-Identifier: MIT
/* make tsan: nd_stats_classes while other threads allocate and free.
 * The statistics read the slab headers' used, fbias, cls, cap and npages
 * while the owners change them (pops and pushes, the full list's bias,
 * collects, headers reused for new slabs and kept empty slabs taking
 * another class): every such field is a relaxed atomic on both sides,
 * else ThreadSanitizer reports the reads; and each thread record's
 * counters, which a starting thread reset outside the lock the reader
 * holds. Also mallinfo2's parts (not in this build: no override): the
 * headers alone, and the large runs in use and cached. Workers churn
 * objects of several classes (most freed by their owner, some by the next
 * worker) and a large block a round (cached at its free); a reader thread
 * reads the figures in a loop. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

#define NT 3
#define ROUNDS 400
#define NOBJ 96

static void *handed[NT][NOBJ]; /* worker t -> worker t + 1 */
static int hn[NT];              /* objects published (release); 0 once freed */
static int done, reads;
static long bad;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
	static const size_t sizes[] = { 16, 48, 128, 320, 1024, 3000, 9000 };
	void *mine[NOBJ];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NOBJ; i++) {
			mine[i] = nd_malloc(sizes[rnd(&s) % (sizeof sizes / sizeof sizes[0])]);
			if (mine[i])
				*(volatile char *)mine[i] = 1;
		}
		/* the previous worker's objects: remote frees */
		int p = (t + NT - 1) % NT, n = __atomic_load_n(&hn[p], __ATOMIC_ACQUIRE);
		for (int i = 0; i < n; i++)
			nd_free(handed[p][i]);
		if (n)
			__atomic_store_n(&hn[p], 0, __ATOMIC_RELEASE);
		/* a quarter handed on (when the next worker took the last), the
		 * rest freed by the owner: slabs go full, partial, empty */
		int k = 0;
		bool give = __atomic_load_n(&hn[t], __ATOMIC_ACQUIRE) == 0;
		for (int i = 0; i < NOBJ; i++) {
			if (give && (i & 3) == 0)
				handed[t][k++] = mine[i];
			else
				nd_free(mine[i]);
		}
		if (give)
			__atomic_store_n(&hn[t], k, __ATOMIC_RELEASE);
		void *big = nd_malloc(600 << 10); /* above the purge threshold: cached at its free */
		if (big)
			*(volatile char *)big = 1;
		nd_free(big);
		if ((r & 15) == 15)
			_nd_heap_trim_self(false); /* kept slabs back: headers made again */
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	nd_class_stats_t cs[64];
	_nd_slab_class_stats_t hs[ND_SLAB_CLASSES];
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		if (nd_stats_classes(cs, 64) <= 0)
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		uint64_t in_use, cached, runs;
		_nd_slab_class_usage(hs);
		_nd_large_usage(&in_use, &cached, &runs);
		if (hs[0].size != 16 || (runs && !cached))
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(void)
{
	pthread_t w[NT], rd;
	CHECK(pthread_create(&rd, NULL, reader, NULL) == 0, "reader");
	for (int t = 0; t < NT; t++)
		CHECK(pthread_create(&w[t], NULL, worker, (void *)(intptr_t)t) == 0, "worker");
	for (int t = 0; t < NT; t++)
		pthread_join(w[t], NULL);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(rd, NULL);
	for (int t = 0; t < NT; t++)
		for (int i = 0; i < hn[t]; i++)
			nd_free(handed[t][i]);
	CHECK(reads > 0, "the reader read the statistics");
	CHECK_EQ(bad, 0);
	printf("tsan_stats_classes: %d workers x %d rounds, %d statistics reads\n", NT, ROUNDS, reads);
	return CHECK_DONE();
}
