// SPDX-License-Identifier: MIT
/* malloc_trim reaches the heaps of exited threads (audit14). A thread's
 * exit parks its heap trimmed of its empty slabs only (giving the free
 * pages inside partial slabs back there cost the thread-churn workloads
 * faults and CPU: docs/arenas.md, thrpeak), and malloc_trim trimmed the
 * calling thread's heaps only: the pages of a worker that freed 63 of 64
 * of its objects stayed resident until some thread adopted its heap
 * (glibc's malloc_trim gives them back: every arena). Now malloc_trim
 * takes each parked heap out of its pool in turn (as a sweep does) and
 * purges its partial slabs. A worker allocates 16,384 256-byte objects,
 * frees all but one in 64 and exits; after main's malloc_trim the pages
 * that hold no live object are not resident, and the live objects keep
 * their bytes; then a new thread adopts the heap and allocates again. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "internal.h"

enum { N = 16384, SZ = 256, KEEP = 64 };
static unsigned char *o[N];

static int live_page(uintptr_t pg)
{
	for (int i = 0; i < N; i += KEEP) {
		uintptr_t a = (uintptr_t)o[i] & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		uintptr_t b = ((uintptr_t)o[i] + SZ - 1) & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		if (pg == a || pg == b)
			return 1;
	}
	return 0;
}

/* Pages the freed objects start in that hold no live object: how many
 * (each counted once) and how many resident. */
static void free_pages(int *n, int *res)
{
	static uintptr_t seen[N];
	int ns = 0;
	*n = *res = 0;
	for (int i = 0; i < N; i++) {
		if (i % KEEP == 0)
			continue;
		uintptr_t pg = (uintptr_t)o[i] & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		int dup = 0;
		for (int j = ns - 1; j >= 0 && j >= ns - 64 && !dup; j--)
			dup = seen[j] == pg;
		if (dup || live_page(pg))
			continue;
		seen[ns++] = pg;
		unsigned char v = 0;
		CHECK(mincore((void *)pg, ND_PAGE_SIZE, &v) == 0, "mincore");
		(*n)++;
		*res += v & 1;
	}
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++) {
		o[i] = malloc(SZ);
		CHECK(o[i] != NULL);
		memset(o[i], (int)(i & 0x7f) + 1, SZ);
	}
	for (int i = 0; i < N; i++)
		if (i % KEEP)
			free(o[i]);
	return NULL;
}

static void *again(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++)
		if (i % KEEP) {
			o[i] = malloc(SZ);
			CHECK(o[i] != NULL);
			memset(o[i], 0x5a, SZ);
		}
	for (int i = 0; i < N; i++)
		free(o[i]);
	return NULL;
}

int main(void)
{
	void *warm = malloc(16); /* main's own heap: not the worker's */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	int n, res;
	free_pages(&n, &res);
	printf("after the worker's exit: %d of %d free pages resident\n", res, n);
	CHECK(n >= (int)(N * SZ / ND_PAGE_SIZE / 2), "only %d pages without a live object", n);
	CHECK(res == n, "%d of %d free pages resident before malloc_trim (the parked heap keeps them)", res, n);
	CHECK(malloc_trim(0) == 1, "malloc_trim released nothing");
	free_pages(&n, &res);
	printf("after main's malloc_trim: %d of %d free pages resident\n", res, n);
	CHECK(res == 0, "%d of %d free pages of the exited thread's partial slabs resident after malloc_trim", res, n);
	for (int i = 0; i < N; i += KEEP) {
		int ok = 1;
		for (int j = 0; j < SZ; j++)
			ok &= o[i][j] == (unsigned char)((i & 0x7f) + 1);
		CHECK(ok, "live object %d changed", i);
	}
	CHECK(pthread_create(&t, NULL, again, NULL) == 0);
	pthread_join(t, NULL);
	free(warm);
	return CHECK_DONE();
}
