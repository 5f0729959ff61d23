// SPDX-License-Identifier: MIT
/* A live thread's burst of small run frees is held one decay period
 * after its last change (purge.c, the burst clock), not until the
 * thread's exit, and calls that serve memory without the page level
 * check the clock (a large block from large.c's cache, a heap's kept
 * empty slab). A worker (a pool's thread after a big request) allocates
 * 64 MiB of 80 KiB blocks (small page runs) and 4 MiB of 192 B objects,
 * frees them all and lives on: right after, its node holds its burst
 * (branch burst3: the next worker or round reuses it); a decay period
 * later, after one more call of the kind a server makes, the burst
 * no longer raises the node's dirty limit and the committed free pages
 * are back at the cap; its exit then hands on no burst (the main
 * thread's later frees go at the cap). Before, they stayed until the worker's exit or
 * a page-level call (a held-out program: 194 MiB of its 197 kept, 11
 * before branch burst3; with its large blocks from the cache, for good).
 * Run in a child with NODALLOC_PURGE_DECAY_MS=DECAY_MS and freed large
 * blocks cached for a minute; no timing is asserted (the sleeps only
 * pass the period). */
#define _GNU_SOURCE
#include "exit_fixture.h"

#include <time.h>

#define DECAY_MS "1000" /* the frees take far less, even under ThreadSanitizer and load */
enum { BLOCK = 80 * 1024, N = 64 * 1024 * 1024 / BLOCK, SMALL = 192, NS = 4 * 1024 * 1024 / SMALL,
       BIG = 1024 * 1024, REQ = 2000 };

static void *obj[N], *sobj[NS];
static pthread_barrier_t bar;
static int large_call; /* the call after the period: 1 a cached large block, 0 small objects */
static uint32_t kept;  /* the worker's heap's kept empty slab pages before that call */

static void wait_bar(void)
{
	pthread_barrier_wait(&bar);
}

static void *work(void *arg)
{
	(void)arg;
	free(malloc(BIG)); /* cached by large.c: the later call's block */
	fill_pages(obj, N, BLOCK);
	fill_192(sobj, NS);
	free_all(obj, N);
	free_all(sobj, NS);
	kept = ((_nd_heap_t *)_nd_tls->heap)->epages;
	wait_bar(); /* main: the burst held */
	wait_bar(); /* main: past the period */
	if (large_call) {
		free(malloc(BIG));
	} else {
		fill_192(sobj, REQ); /* past the current slab: a kept one */
		free_all(sobj, REQ);
	}
	wait_bar(); /* main: the burst gone */
	wait_bar();
	return NULL;
}

static _nd_page_info_t info(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	return in;
}

static void round_(int large)
{
	large_call = large;
	_nd_page_info_t in = info();
	const uint64_t cap = 16 * in.purge_pages, pages = (uint64_t)N * BLOCK / 4096;
	const char *what = large ? "a large block from the cache" : "small objects from a kept slab";
	pthread_t t;
	CHECK(pthread_create(&t, NULL, work, NULL) == 0);
	wait_bar();
	in = info();
	CHECK(in.burst_pages >= pages - in.purge_pages, "worker alive after its frees: its node holds a burst of %llu pages (it freed %llu)",
	      (unsigned long long)in.burst_pages, (unsigned long long)pages);
	CHECK(in.dirty_pages >= pages * 3 / 4, "worker alive after its frees: %llu committed free pages (of its %llu)",
	      (unsigned long long)in.dirty_pages, (unsigned long long)pages);
	if (!large)
		CHECK(kept > 0, "the worker's heap keeps empty slabs (the call's)");
	struct timespec ts = { atoi(DECAY_MS) * 3 / 2000, atoi(DECAY_MS) * 3 / 2 % 1000 * 1000000L }; /* 1.5 periods */
	nanosleep(&ts, NULL);
	wait_bar();
	wait_bar();
	in = info();
	CHECK(in.burst_pages == 0, "a period later, after %s: its node still holds a burst of %llu pages", what,
	      (unsigned long long)in.burst_pages);
	CHECK(in.dirty_pages <= cap + in.purge_pages,
	      "a period later, after %s: %llu committed free pages (cap %llu, the burst %llu)", what,
	      (unsigned long long)in.dirty_pages, (unsigned long long)cap, (unsigned long long)pages);
	const uint64_t used = info().used_pages;
	wait_bar();
	pthread_join(t, NULL);
	/* its exit hands on no burst its clock cut: the main thread's frees
	 * then go at the cap (they stayed under a floor raised by it) */
	fill_pages(obj, N / 2, BLOCK);
	free_all(obj, N / 2);
	const uint64_t lim = (cap > used ? cap : used) + in.purge_pages;
	in = info();
	CHECK(in.dirty_pages <= lim, "after the worker's exit (its burst cut) and the main thread's frees: %llu committed free pages (at most %llu)",
	      (unsigned long long)in.dirty_pages, (unsigned long long)lim);
}

int malloc_trim(size_t pad);

int main(int argc, char **argv)
{
	(void)argc;
	const char *d = getenv("NODALLOC_PURGE_DECAY_MS");
	if (!d || strcmp(d, DECAY_MS) != 0) {
		setenv("NODALLOC_PURGE_DECAY_MS", DECAY_MS, 1);
		setenv("NODALLOC_LARGE_DECAY_MS", "60000", 1);
		execv("/proc/self/exe", argv);
		CHECK(0, "exec");
		return CHECK_DONE();
	}
	_nd_page_info_t in = info();
	CHECK(BLOCK < in.purge_pages * 4096 && BIG >= in.purge_pages * 4096, "small runs and a cached large block (purge threshold %llu pages)",
	      (unsigned long long)in.purge_pages);
	CHECK(pthread_barrier_init(&bar, NULL, 2) == 0);
	round_(1);
	malloc_trim(0);
	round_(0);
	return CHECK_DONE();
}
