// SPDX-License-Identifier: MIT
/*
 * free leaves errno alone (as glibc's, and POSIX 2024), also when it
 * makes a thread's block of kept runs (src/large.c, "The thread cache":
 * meta.c's _nd_meta_blk_get, task mixed28) and that takes a new chunk of
 * metadata while the thread's node is full: the chunk came from the next
 * node, but the full node's refusal had set errno to ENOMEM (audit27).
 *
 * Emulated: node 0 (the CPUs, 64 MiB) filled at the page level, node 1
 * (256 MiB) holds the blocks. Threads kept alive one after the other
 * each free one 40 KiB block of node 1 (a block of kept runs each, about
 * 1 KiB of node 0's metadata) until far more than a 64 KiB chunk's worth
 * are made; each checks its errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define KiB ((size_t)1 << 10)
#define NT 150

static void *blocks[NT];
static int report[2], release_fd[2];

static void *freer(void *arg)
{
	errno = 0;
	nd_free(arg);
	int e = errno;
	CHECK(write(report[1], &e, sizeof e) == sizeof e);
	char c;
	CHECK(read(release_fd[0], &c, 1) == 1);
	return NULL;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=64M; 1: mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("large_decay_ms", "60000");
	free(malloc(64)); /* the init, the heaps */
	void *hold = nd_malloc_onnode(4 << 20, 1); /* large pages in use on node 1: runs are kept */
	CHECK(hold != NULL);
	for (int i = 0; i < NT; i++)
		CHECK((blocks[i] = nd_malloc_onnode(40 * KiB, 1)) != NULL && nd_node_of(blocks[i]) == 1);
	/* node 0 full at the page level */
	static void *fill[4096];
	int nfill = 0;
	while (nfill < 4096 && (fill[nfill] = _nd_page_alloc_exact(0, 16, 1)) != NULL)
		nfill++;
	CHECK(nfill > 0 && nfill < 4096, "%d runs of 16 pages fill node 0", nfill);
	CHECK(pipe(report) == 0 && pipe(release_fd) == 0);
	pthread_t th[NT];
	int bad = 0, first_bad = -1, e_bad = 0;
	for (int i = 0; i < NT; i++) {
		CHECK(pthread_create(&th[i], NULL, freer, blocks[i]) == 0);
		int e = -1;
		CHECK(read(report[0], &e, sizeof e) == sizeof e);
		if (e != 0 && bad++ == 0) {
			first_bad = i;
			e_bad = e;
		}
	}
	CHECK(bad == 0, "free changed errno in %d of %d threads (first: thread %d, errno %d)", bad, NT, first_bad, e_bad);
	for (int i = 0; i < NT; i++)
		CHECK(write(release_fd[1], "x", 1) == 1);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < nfill; i++)
		CHECK_EQ(_nd_page_free(fill[i]), 0);
	nd_free(hold);
	return CHECK_DONE();
}
