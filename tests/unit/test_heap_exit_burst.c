// SPDX-License-Identifier: MIT
/* A thread that frees a burst of small page runs just before it exits
 * hands them to the next threads (page.c counts its burst, purge.c's
 * _nd_purge_exit raises the dirty limit's floor by it):
 *  - The main thread that frees 64 MiB of 80 KiB blocks (page runs below
 *    the purge threshold) leaves at most the cap committed (16 purge
 *    blocks: the end of a program's big phase, bench footprint's end RSS):
 *    no thread exit follows its frees.
 *  - Rounds of one worker each: it allocates 64 MiB of such blocks,
 *    touches them, frees them all and exits. A worker's burst stays
 *    committed while it lives (its node's burst_live raises the cap:
 *    the first worker waits after its frees, and its node holds its
 *    burst), then after its exit, and every later worker faults in few
 *    pages. Before, the first worker's burst went at the cap in its own
 *    frees (nothing had told the page level an exit was coming) and the
 *    second worker faulted it all in again (bench wl_burst's second
 *    round: 32k faults of 66k); before branch burst every worker's did
 *    (a held-out stress: 873k faults, tcmalloc 153k).
 *    A fork child holds none of its parent's threads' bursts.
 *  - They still go back when they stay free: malloc_trim, and the decay
 *    at the first page-level call after it (test_page_trim_decay). */
#define _GNU_SOURCE
#include "exit_fixture.h"

#include <sys/wait.h>

enum { BLOCK = 80 * 1024, N = 64 * 1024 * 1024 / BLOCK };

int malloc_trim(size_t pad);

static void *obj[N];
static long faults; /* the last worker's minor faults while it allocated */
static pthread_barrier_t bar;

static void fill(void)
{
	fill_pages(obj, N, BLOCK);
}

static void empty(void)
{
	free_all(obj, N);
}

static void *work(void *arg)
{
	long f0 = minflt();
	fill();
	faults = minflt() - f0;
	empty();
	if (arg) { /* main looks at its burst while it lives */
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

static uint64_t burst(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	return in.burst_pages;
}

int main(void)
{
	memset(obj, 0, sizeof obj); /* the workers' faults are their blocks' */
	const uint64_t pages = (uint64_t)N * BLOCK / 4096;
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	const uint64_t cap = 16 * in.purge_pages;
	CHECK(BLOCK < in.purge_pages * 4096, "the blocks are small runs (purge threshold %llu pages)",
	      (unsigned long long)in.purge_pages);
	CHECK(pages > 4 * cap, "the test frees more than 4x the cap (%llu pages, cap %llu)", (unsigned long long)pages,
	      (unsigned long long)cap);

	/* the main thread's frees: the cap */
	fill();
	empty();
	CHECK(dirty() <= cap + in.purge_pages, "after the main thread freed %llu pages: %llu committed free pages (cap %llu)",
	      (unsigned long long)pages, (unsigned long long)dirty(), (unsigned long long)cap);
	CHECK(burst() == 0, "the main thread's burst is held by no node (%llu pages)", (unsigned long long)burst());

	CHECK(pthread_barrier_init(&bar, NULL, 2) == 0);
	long first = 0;
	for (int r = 0; r < 4; r++) {
		pthread_t t;
		CHECK(pthread_create(&t, NULL, work, r == 0 || r == 3 ? &bar : NULL) == 0);
		if (r == 0) { /* its frees done, before its exit */
			pthread_barrier_wait(&bar);
			CHECK(burst() >= pages - in.purge_pages && burst() <= pages,
			      "worker 0 alive after its frees: its node holds a burst of %llu pages (it freed %llu)",
			      (unsigned long long)burst(), (unsigned long long)pages);
			CHECK(dirty() >= pages * 3 / 4, "worker 0 alive after its frees: %llu committed free pages (of its %llu)",
			      (unsigned long long)dirty(), (unsigned long long)pages);
			pthread_barrier_wait(&bar);
		} else if (r == 3) { /* the last (a fork's copy-on-write faults no later worker's) */
			pthread_barrier_wait(&bar);
			CHECK(burst() >= pages - in.purge_pages, "worker 3 alive after its frees: a burst of %llu pages",
			      (unsigned long long)burst());
			pid_t pid = fork(); /* the child has no worker: no burst held */
			if (pid == 0)
				_exit(burst() == 0 ? 0 : 1);
			int st = -1;
			CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "a fork child holds no burst of its parent's threads (status %d)", st);
			pthread_barrier_wait(&bar);
		}
		pthread_join(t, NULL);
		check_reuse(r, faults, &first);
		CHECK(burst() == 0, "after worker %d's exit its node holds no burst (%llu pages)", r,
		      (unsigned long long)burst());
		CHECK(dirty() >= pages * 3 / 4, "after worker %d's exit: %llu committed free pages (of its %llu)", r,
		      (unsigned long long)dirty(), (unsigned long long)pages);
	}
	CHECK(malloc_trim(0) == 1 && dirty() == 0, "malloc_trim leaves %llu committed free pages",
	      (unsigned long long)dirty());
	return CHECK_DONE();
}
