// SPDX-License-Identifier: MIT
/* A thread that frees a burst of small page runs just before it exits
 * hands them to the next threads (page.c counts its burst, purge.c's
 * _nd_purge_exit raises the dirty limit's floor by it):
 *  - A live thread that frees 64 MiB of 80 KiB blocks (page runs below
 *    the purge threshold) leaves at most the cap committed (16 purge
 *    blocks: the end of a program's big phase, bench footprint's end RSS).
 *  - Rounds of one worker each: it allocates 64 MiB of such blocks,
 *    touches them, frees them all and exits. The first one's burst goes
 *    back at the cap (nothing told the page level an exit was coming);
 *    from then on each worker's burst stays committed after its exit and
 *    the next worker faults in few pages. Before, the cap purged all but
 *    16 purge blocks of every burst and every worker faulted it all in
 *    again (a held-out stress: 873k faults, tcmalloc 153k).
 *  - They still go back when they stay free: malloc_trim, and the decay
 *    at the first page-level call after it (test_page_trim_decay). */
#define _GNU_SOURCE
#include "exit_fixture.h"

enum { BLOCK = 80 * 1024, N = 64 * 1024 * 1024 / BLOCK };

int malloc_trim(size_t pad);

static void *obj[N];
static long faults; /* the last worker's minor faults while it allocated */

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
	(void)arg;
	long f0 = minflt();
	fill();
	faults = minflt() - f0;
	empty();
	return NULL;
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

	/* a live thread's frees: the cap */
	fill();
	empty();
	CHECK(dirty() <= cap + in.purge_pages, "after a live thread freed %llu pages: %llu committed free pages (cap %llu)",
	      (unsigned long long)pages, (unsigned long long)dirty(), (unsigned long long)cap);

	long first = 0;
	for (int r = 0; r < 4; r++) {
		pthread_t t;
		CHECK(pthread_create(&t, NULL, work, NULL) == 0);
		pthread_join(t, NULL);
		if (r == 0) { /* its burst went at the cap: the next worker faults it in */
			first = faults;
			CHECK(dirty() <= cap + in.purge_pages, "after worker 0's exit: %llu committed free pages (cap %llu)",
			      (unsigned long long)dirty(), (unsigned long long)cap);
			continue;
		}
		if (r >= 2)
			check_reuse(r, faults, &first);
		CHECK(dirty() >= pages * 3 / 4, "after worker %d's exit: %llu committed free pages (of its %llu)", r,
		      (unsigned long long)dirty(), (unsigned long long)pages);
	}
	CHECK(malloc_trim(0) == 1 && dirty() == 0, "malloc_trim leaves %llu committed free pages",
	      (unsigned long long)dirty());
	return CHECK_DONE();
}
