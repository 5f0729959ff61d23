// SPDX-License-Identifier: MIT
/* A thread's burst of run frees before its exit (page.c, page_drop)
 * raises the dirty limit's floor of the node its runs were on only, not
 * of every node it had heaps on (purge.c, _nd_purge_exit). Two emulated
 * nodes: the main thread (node 1) allocates and frees 40 MiB of 80 KiB
 * blocks (node 1's peak; the cap, 16 purge blocks, stays committed);
 * workers with a heap on node 1 too (a malloc on CPU 2) allocate, touch
 * and free 40 MiB of such blocks on node 0 and exit: their burst stays
 * committed on node 0 for the next (since branch burst3 the first one's
 * too: it lived until its exit). The main thread
 * then allocates and frees its blocks again: node 1 keeps at most the cap,
 * as without the workers. Before, each worker's burst raised node 1's
 * floor as well and node 1 kept all 10,240 pages. */
#define _GNU_SOURCE
#include "borrow_fixture.h"
#include "exit_fixture.h"

enum { BLOCK = 80 * 1024, N = 40 * 1024 * 1024 / BLOCK };

static void *mine[N], *theirs[N];

static uint64_t dirty_of(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in.dirty_pages;
}

static void fill(void **obj)
{
	fill_pages(obj, N, BLOCK);
}

static void empty(void **obj)
{
	free_all(obj, N);
}

static void *work(void *arg)
{
	(void)arg;
	nd_emulate_cpu(2);
	free(malloc(100)); /* a heap on node 1 */
	nd_emulate_cpu(0);
	fill(theirs);
	empty(theirs);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0) /* nodes 0 (CPUs 0-1) and 1 (CPUs 2-3) */
		return 1;
	nd_emulate_cpu(2);
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	const uint64_t cap = 16 * in.purge_pages, pages = (uint64_t)N * BLOCK / 4096;
	CHECK(BLOCK < in.purge_pages * 4096 && pages > 2 * cap, "small runs (%llu-page threshold), more than twice the cap",
	      (unsigned long long)in.purge_pages);
	fill(mine);
	empty(mine);
	CHECK(dirty_of(1) <= cap + in.purge_pages, "node 1 after its own frees: %llu committed free pages (cap %llu)",
	      (unsigned long long)dirty_of(1), (unsigned long long)cap);
	for (int r = 0; r < 3; r++) {
		pthread_t t;
		CHECK(pthread_create(&t, NULL, work, NULL) == 0);
		pthread_join(t, NULL);
		CHECK(dirty_of(0) >= pages * 3 / 4, "node 0 after worker %d's exit: %llu committed free pages (of %llu)",
		      r, (unsigned long long)dirty_of(0), (unsigned long long)pages);
	}
	fill(mine);
	empty(mine);
	CHECK(dirty_of(1) <= cap + in.purge_pages,
	      "node 1 after its frees, the workers' bursts on node 0: %llu committed free pages (cap %llu)",
	      (unsigned long long)dirty_of(1), (unsigned long long)cap);
	return CHECK_DONE();
}
