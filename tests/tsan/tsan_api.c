// SPDX-License-Identifier: MIT
/* make tsan: the nd_* API from 4 threads at once, for ThreadSanitizer.
 * Each thread allocates (nd_malloc, nd_calloc, nd_aligned_alloc,
 * nd_malloc_onnode, nd_realloc; sizes skewed small, some page runs),
 * fills each block with a pattern and hands half of them to the next
 * thread, which checks and frees them (remote frees); a fifth thread
 * reads the statistics meanwhile. Content is checked too: a race that
 * corrupts shows here even where TSan is silent. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "nodalloc.h"

#define NT 4
#define OPS 6000

typedef struct item {
	unsigned char *p;
	size_t n;
	unsigned char pat;
} item_t;

static struct {
	pthread_mutex_t mu;
	item_t it[OPS];
	int n;
} box[NT];
static long bad, nulls, corrupt, small;
static int done;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int intact(const item_t *x)
{
	for (size_t i = 0; i < x->n; i += 1 + x->n / 64)
		if (x->p[i] != x->pat)
			return 0;
	return x->n == 0 || x->p[x->n - 1] == x->pat;
}

static void take_all(int t)
{
	pthread_mutex_lock(&box[t].mu);
	for (int i = 0; i < box[t].n; i++) {
		if (!intact(&box[t].it[i]))
			__atomic_add_fetch(&corrupt, 1, __ATOMIC_RELAXED);
		nd_free(box[t].it[i].p);
	}
	box[t].n = 0;
	pthread_mutex_unlock(&box[t].mu);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
	item_t mine[64] = { 0 };
	for (int op = 0; op < OPS; op++) {
		uint64_t r = rnd(&s);
		size_t n = (r & 15) == 0 ? (size_t)(r >> 40) % (600 << 10) : (size_t)(r >> 40) % 512;
		item_t x = { NULL, n, (unsigned char)(r >> 8) };
		switch ((r >> 4) % 5) {
		case 0: x.p = nd_malloc(n); break;
		case 1: x.p = nd_calloc(1, n); break;
		case 2: x.p = nd_aligned_alloc((size_t)64 << (r >> 20) % 8, n); break;
		case 3: x.p = nd_malloc_onnode(n, 0); break;
		default: /* realloc(p, 0) frees p and returns NULL, as glibc's */
			x.n = n = n ? n : 1;
			x.p = nd_realloc(nd_malloc(n / 2 + 1), n);
			break;
		}
		if (!x.p) {
			fprintf(stderr, "op %d kind %d size %zu: NULL\n", op, (int)((r >> 4) % 5), n);
			__atomic_add_fetch(&nulls, 1, __ATOMIC_RELAXED);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			x.p[i] = x.pat;
		if (r & 0x100000) { /* to the next thread */
			int to = (t + 1) % NT;
			pthread_mutex_lock(&box[to].mu);
			box[to].it[box[to].n++] = x;
			pthread_mutex_unlock(&box[to].mu);
		} else { /* kept a while, then freed here */
			item_t *slot = &mine[r % 64];
			if (slot->p) {
				if (!intact(slot))
					__atomic_add_fetch(&corrupt, 1, __ATOMIC_RELAXED);
				if (nd_usable_size(slot->p) < slot->n)
					__atomic_add_fetch(&small, 1, __ATOMIC_RELAXED);
				nd_free(slot->p);
			}
			*slot = x;
		}
		if (op % 200 == 0)
			take_all(t);
	}
	for (int i = 0; i < 64; i++)
		if (mine[i].p)
			nd_free(mine[i].p);
	return NULL;
}

static void *reader(void *arg)
{
	nd_stats_t *st = nd_malloc(sizeof *st);
	long rounds = 0;
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		st->version = ND_STATS_VERSION;
		if (nd_stats_get(st) != 0)
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		rounds++;
	}
	nd_free(st);
	return (void *)rounds;
}

int main(void)
{
	pthread_t th[NT], rd;
	for (int t = 0; t < NT; t++)
		pthread_mutex_init(&box[t].mu, NULL);
	pthread_create(&rd, NULL, reader, NULL);
	for (int t = 0; t < NT; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	for (int t = 0; t < NT; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < NT; t++)
		take_all(t);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	void *rounds;
	pthread_join(rd, &rounds);
	CHECK_EQ(bad, 0);
	CHECK_EQ(nulls, 0);
	CHECK_EQ(corrupt, 0);
	CHECK_EQ(small, 0);
	CHECK((long)(intptr_t)rounds > 0);
	printf("tsan_api: %d threads x %d operations, %ld statistics reads\n", NT, OPS, (long)(intptr_t)rounds);
	return CHECK_DONE();
}
