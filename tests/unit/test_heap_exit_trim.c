// SPDX-License-Identifier: MIT
/* A thread's exit gives back the memory it freed once the node's
 * committed free pages exceed half of its pages in use and two purge
 * blocks (heap.c, exit_trim, at most once per 10 ms and node; issue 11,
 * peak RSS of thread churn). Each thread here allocates 3 MiB of small
 * objects, frees them all and exits: its slabs go back to the page level
 * at the exit, committed. Without the trim they stayed there (the page
 * level's own limit is 4 MiB or 4x the pages in use, for 1 s), so every
 * exited thread's memory stayed resident until the decay; with it, after
 * each join the node keeps at most max(two purge blocks, half its pages
 * in use) committed free pages. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

enum { N = 3 * 1024 * 1024 / 192 };

static void *work(void *arg)
{
	(void)arg;
	static __thread void *obj[N];
	for (int i = 0; i < N; i++) {
		obj[i] = malloc(192);
		if (!obj[i]) { /* CHECK's counters belong to the main thread */
			fprintf(stderr, "malloc failed in the worker\n");
			abort();
		}
		((char *)obj[i])[0] = 1;
	}
	for (int i = 0; i < N; i++)
		free(obj[i]);
	return NULL;
}

int main(void)
{
	for (int r = 0; r < 4; r++) {
		usleep(20 * 1000); /* past the rate bound (one exit trim per 10 ms and node) */
		pthread_t t;
		CHECK(pthread_create(&t, NULL, work, NULL) == 0);
		pthread_join(t, NULL);
		_nd_page_info_t in;
		CHECK(_nd_page_info(0, &in) == 0);
		uint64_t lim = in.used_pages / 2 > 2 * in.purge_pages ? in.used_pages / 2 : 2 * in.purge_pages;
		CHECK(in.dirty_pages <= lim, "after thread %d: %llu committed free pages, %llu in use (at most %llu)", r,
		      (unsigned long long)in.dirty_pages, (unsigned long long)in.used_pages, (unsigned long long)lim);
	}
	return CHECK_DONE();
}
