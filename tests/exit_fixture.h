// SPDX-License-Identifier: MIT
/* Shared by the thread-exit tests of the page level (test_heap_exit_trim,
 * test_heap_exit_hold, test_heap_exit_burst, test_heap_exit_burst_node): a
 * thread's own minor page faults, n objects of 192 B (or blocks of a size,
 * each page) allocated and touched, node 0's committed free pages, those an
 * exit trim leaves. Include after _GNU_SOURCE. */
#ifndef ND_EXIT_FIXTURE_H
#define ND_EXIT_FIXTURE_H
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#ifndef RUSAGE_THREAD
#define RUSAGE_THREAD 1 /* Linux's; hidden when a build includes the headers before _GNU_SOURCE */
#endif

static inline long minflt(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : -1;
}

/* n objects of 192 B, each touched; aborts when one fails (from any
 * thread: CHECK's counters belong to the main thread). */
static inline void fill_192(void **obj, int n)
{
	for (int i = 0; i < n; i++) {
		obj[i] = malloc(192);
		if (!obj[i]) {
			fprintf(stderr, "malloc failed\n");
			abort();
		}
		((char *)obj[i])[0] = 1;
	}
}

/* n blocks of size, each page touched; aborts when one fails (as
 * fill_192). */
static inline void fill_pages(void **obj, int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		obj[i] = malloc(size);
		if (!obj[i]) {
			fprintf(stderr, "malloc failed\n");
			abort();
		}
		for (size_t o = 0; o < size; o += 4096)
			((char *)obj[i])[o] = 1;
	}
}

static inline void free_all(void **obj, int n)
{
	for (int i = 0; i < n; i++)
		free(obj[i]);
}

/* Worker r faulted f pages: the first one's in *first; each later one,
 * reusing the pages the last one gave back, fewer than half as many. */
static inline void check_reuse(int r, long f, long *first)
{
	if (r == 0)
		*first = f;
	else
		CHECK(f >= 0 && f < *first / 2, "worker %d faulted %ld pages, the first one %ld: the last one's pages were purged",
		      r, f, *first);
}

/* Node 0's committed free pages. */
static inline uint64_t dirty(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	return in.dirty_pages;
}

/* The committed free pages an exit trim leaves: two purge blocks or half the pages in use. */
static inline uint64_t keep_limit(const _nd_page_info_t *in)
{
	return in->used_pages / 2 > 2 * in->purge_pages ? in->used_pages / 2 : 2 * in->purge_pages;
}
#endif
