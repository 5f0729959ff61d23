// SPDX-License-Identifier: MIT
/* malloc_trim reaches the heaps of exited threads (audit14). A thread's
 * exit parks its heap trimmed of its empty slabs, and of the free pages
 * of its classes above 2 KiB only (giving back all the free pages inside
 * partial slabs there cost the thread-churn workloads faults and CPU:
 * docs/arenas.md, thrpeak; test_heap_exit_park), and malloc_trim trimmed the
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
#include "trim_fixture.h"

enum { N = 16384, SZ = 256, KEEP = 64 };
static unsigned char *o[N];

static uintptr_t seen[N];

static void *worker(void *arg)
{
	(void)arg;
	trim_fill(o, N, SZ, KEEP);
	return NULL;
}

static void *again(void *arg)
{
	(void)arg;
	trim_refill_free(o, N, SZ, KEEP);
	return NULL;
}

int main(void)
{
	void *warm = malloc(16); /* main's own heap: not the worker's */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	int n, res;
	trim_free_pages(o, N, SZ, KEEP, seen, &n, &res);
	printf("after the worker's exit: %d of %d free pages resident\n", res, n);
	CHECK(n >= (int)(N * SZ / ND_PAGE_SIZE / 2), "only %d pages without a live object", n);
	CHECK(res == n, "%d of %d free pages resident before malloc_trim (the parked heap keeps them)", res, n);
	CHECK(malloc_trim(0) == 1, "malloc_trim released nothing");
	trim_free_pages(o, N, SZ, KEEP, seen, &n, &res);
	printf("after main's malloc_trim: %d of %d free pages resident\n", res, n);
	CHECK(res == 0, "%d of %d free pages of the exited thread's partial slabs resident after malloc_trim", res, n);
	int bad = trim_live_changed(o, N, SZ, KEEP);
	CHECK(bad == 0, "%d live objects changed", bad);
	CHECK(pthread_create(&t, NULL, again, NULL) == 0);
	pthread_join(t, NULL);
	free(warm);
	return CHECK_DONE();
}
