// SPDX-License-Identifier: MIT
/* A thread's exit gives back the committed free pages that were already
 * free at the node's thread exit before the previous one and that no
 * thread reused since,
 * once the node's committed free pages exceed half of its pages in use
 * and two purge blocks (heap.c, exit_trim, at most once per 10 ms and
 * node; issue 11, peak RSS of thread churn). Each worker here allocates 3
 * MiB of small objects, frees them all and exits: its slabs go back to the
 * page level at the exit, committed.
 *  - The next worker reuses them: it faults in few pages. Until
 *    2026-11-27 the exit purged every committed free page, so each worker
 *    faulted its 3 MiB in again (a held-out stress: 1.8x tcmalloc's time).
 *  - The first thread that exits after it without reusing them leaves
 *    them (threads that live two at a time and exit in turn: the pages
 *    wait for the successor, which has barely started at the other's
 *    exit); the second gives them back: after its exit the node keeps
 *    at most max(two purge blocks, half its pages in use) committed free
 *    pages. Without the trim they stayed (the page
 *    level's own limit keeps up to the recent peak of the pages in use for
 *    1 s), every exited thread's memory resident until the decay.
 *  - Exits closer together than the rate bound (10 ms) still trim after
 *    every 8 of them it skipped: the bound raised out of reach here, the
 *    9th exit after a worker's gives its pages back. Without the count a
 *    run of short-lived threads trimmed at most once per 10 ms (wl_threads
 *    peaked at 5.5 MiB instead of 5.1, glibc 5.0). */
#define _GNU_SOURCE
#include "exit_fixture.h"

enum { N = 3 * 1024 * 1024 / 192 };

static void *obj[N];
static long faults; /* the last worker's minor faults while it allocated */

static void *work(void *arg)
{
	(void)arg;
	long f0 = minflt();
	fill_192(obj, N);
	faults = minflt() - f0;
	for (int i = 0; i < N; i++)
		free(obj[i]);
	return NULL;
}

static void *idle(void *arg)
{
	(void)arg;
	free(malloc(16));
	return NULL;
}

static void run(void *(*fn)(void *))
{
	if (_nd_heap_exit_trim_ns == 10000000u)
		usleep(20 * 1000); /* past the rate bound (one exit trim per 10 ms and node) */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
	pthread_join(t, NULL);
}

int main(void)
{
	memset(obj, 0, sizeof obj); /* the workers' faults are their objects' */
	const long pages = (long)N * 192 / 4096;
	long first = 0; /* the first worker's faults: fresh pages (and, under TSan, shadow pages) */
	for (int r = 0; r < 4; r++) {
		run(work);
		check_reuse(r, faults, &first);
		_nd_page_info_t in;
		CHECK(_nd_page_info(0, &in) == 0);
		CHECK(in.dirty_pages >= (uint64_t)pages / 2, "after worker %d: %llu committed free pages (of its %ld)", r,
		      (unsigned long long)in.dirty_pages, pages);
	}
	for (int r = 0; r < 3; r++) {
		run(idle);
		_nd_page_info_t in;
		CHECK(_nd_page_info(0, &in) == 0);
		uint64_t lim = keep_limit(&in);
		if (r == 0)
			CHECK(in.dirty_pages >= (uint64_t)pages / 2, "after idle thread 0: %llu committed free pages",
			      (unsigned long long)in.dirty_pages);
		else
			CHECK(in.dirty_pages <= lim, "after idle thread %d: %llu committed free pages, %llu in use (at most %llu)",
			      r, (unsigned long long)in.dirty_pages, (unsigned long long)in.used_pages, (unsigned long long)lim);
	}
	_nd_heap_exit_trim_ns = UINT64_MAX; /* only the count of skipped exits trims now */
	run(work); /* its exit: skipped 1 */
	for (int r = 1; r <= 8; r++) {
		run(idle); /* skipped 2..8, then the trim */
		_nd_page_info_t in;
		CHECK(_nd_page_info(0, &in) == 0);
		uint64_t lim = keep_limit(&in);
		if (r < 8)
			CHECK(in.dirty_pages >= (uint64_t)pages / 2, "after skipped exit %d: %llu committed free pages", r + 1,
			      (unsigned long long)in.dirty_pages);
		else
			CHECK(in.dirty_pages <= lim, "after 8 skipped exits: %llu committed free pages, %llu in use (at most %llu)",
			      (unsigned long long)in.dirty_pages, (unsigned long long)in.used_pages, (unsigned long long)lim);
	}
	return CHECK_DONE();
}
