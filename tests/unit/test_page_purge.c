// SPDX-License-Identifier: MIT
/* Page level, returning memory: a freed run at or above the purge
 * threshold leaves the committed count and the resident set at once;
 * small freed runs stay committed (dirty) until the slot holds more than
 * its dirty limit or a trim; committed bytes follow exactly.
 * The binary runs on nodalloc's malloc, which takes pages (and commits
 * them) on the CPUs' memory nodes: the exact counts are taken on a CPU-less
 * emulated node (TN) that malloc never touches under the local policy. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define TN 1 /* the node under test: memory, no CPUs */

/* Resident pages; read with plain system calls so that measuring does not
 * allocate (and so move the resident set it measures). */
static long rss_pages(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *e;
	strtol(buf, &e, 10); /* size */
	return strtol(e, NULL, 10);
}

static uint64_t committed(int node)
{
	static nd_stats_t s;
	s.version = ND_STATS_VERSION;
	nd_stats_get(&s);
	return s.nodes[node].bytes_committed;
}

int main(void)
{
	/* Before anything allocates: node 0 has the CPUs and serves malloc. */
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_threshold", "1M");
	_nd_opt_set("purge", "dontneed");
	void *warm = _nd_page_alloc_exact(TN, 1, 1); /* sets the arenas up */
	CHECK(warm != NULL);
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.purge_pages, 256);
	CHECK_EQ(in.purge_order, 8);

	/* A 4 MiB run: committed on allocation, resident when touched. */
	uint64_t c0 = committed(TN);
	CHECK_EQ(c0, 4096); /* warm alone: nothing else commits on TN */
	long r0 = rss_pages();
	char *big = _nd_page_alloc_exact(TN, 1024, 1);
	CHECK(big != NULL);
	CHECK_EQ(committed(TN) - c0, 4u << 20);
	memset(big, 0x5a, 4u << 20);
	long r1 = rss_pages();
	CHECK(r1 - r0 >= 1000, "touching 1024 pages raised RSS by %ld pages", r1 - r0);
	CHECK(_nd_page_free(big) == 0);
	long r2 = rss_pages();
	CHECK_EQ(committed(TN), c0);
	CHECK(r1 - r2 >= 1000, "freeing 1024 pages lowered RSS by %ld pages", r1 - r2);
	CHECK(_nd_page_info(TN, &in) == 0);
	uint64_t dirty0 = in.dirty_pages;
	/* The purged range reads back as zeros (DONTNEED) when reused. */
	char *again = _nd_page_alloc_exact(TN, 1024, 1);
	CHECK(again == big);
	CHECK(again && again[12345] == 0 && again[(4u << 20) - 1] == 0);
	CHECK(_nd_page_free(again) == 0);

	/* Small runs: freed but kept committed (dirty), not purged. */
	static char *small[400];
	for (int k = 0; k < 100; k++) {
		small[k] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(small[k] != NULL);
		memset(small[k], 1, 4 * 4096);
	}
	CHECK_EQ(committed(TN) - c0, 400 * 4096);
	for (int k = 0; k < 100; k++)
		CHECK(_nd_page_free(small[k]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages - dirty0, 400);
	CHECK_EQ(committed(TN) - c0, 400 * 4096);
	/* Reuse takes dirty pages first: no new commitment. */
	char *re = _nd_page_alloc_exact(TN, 4, 1);
	CHECK_EQ(committed(TN) - c0, 400 * 4096);
	CHECK(_nd_page_free(re) == 0);
	long r3 = rss_pages();
	size_t trimmed = _nd_page_trim(TN);
	CHECK_EQ(trimmed, (400 + dirty0) * 4096);
	CHECK_EQ(committed(TN), c0 - dirty0 * 4096);
	CHECK(r3 - rss_pages() >= 300, "trim lowered RSS by %ld pages", r3 - rss_pages());
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages, 0);
	c0 = committed(TN);

	/* A freed run that is not a power of two (13 pages: cut from a block
	 * of 16, its clean tail of 3 given back) serves four runs of 4 pages
	 * (a slab's) from its own pages: 13 dirty ones and 3 fresh, none left
	 * over. Issue 11: its dirty pieces did not merge with the clean tail,
	 * a dirty page stayed stranded and a clean block elsewhere served. */
	char *odd = _nd_page_alloc_exact(TN, 13, 1);
	CHECK(odd != NULL);
	memset(odd, 2, 13 * 4096);
	CHECK(_nd_page_free(odd) == 0);
	CHECK_EQ(committed(TN) - c0, 13 * 4096);
	char *four[4];
	for (int k = 0; k < 4; k++) {
		four[k] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(four[k] >= odd && four[k] < odd + 16 * 4096, "run %d at %p, outside the freed 16 pages at %p", k,
		      (void *)four[k], (void *)odd);
	}
	CHECK_EQ(committed(TN) - c0, 16 * 4096);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages, 0);
	for (int k = 0; k < 4; k++)
		CHECK(_nd_page_free(four[k]) == 0);
	_nd_page_trim(TN);
	c0 = committed(TN);

	/* Past the dirty limit (4 << purge_order = 1024 pages, or 4x the
	 * pages in use) a free purges every dirty block: never more than the
	 * limit stays dirty. */
	for (int k = 0; k < 400; k++) {
		small[k] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(small[k] != NULL);
		small[k][0] = 1;
	}
	uint64_t maxdirty = 0;
	for (int k = 0; k < 400; k++) {
		CHECK(_nd_page_free(small[k]) == 0);
		CHECK(_nd_page_info(TN, &in) == 0);
		if (in.dirty_pages > maxdirty)
			maxdirty = in.dirty_pages;
		uint64_t lim = 4 * in.used_pages > 1024 ? 4 * in.used_pages : 1024;
		CHECK(in.dirty_pages <= lim, "dirty pages %llu over the limit %llu", (unsigned long long)in.dirty_pages,
		      (unsigned long long)lim);
	}
	CHECK(maxdirty <= 1600, "dirty pages reached %llu", (unsigned long long)maxdirty);
	CHECK(maxdirty >= 1000, "dirty pages only reached %llu", (unsigned long long)maxdirty);
	CHECK_EQ(committed(TN) - c0, in.dirty_pages * 4096);
	char e[200] = "";
	CHECK(_nd_page_check(TN, e, sizeof e) == 0, "%s", e);
	CHECK(_nd_page_free(warm) == 0);
	return CHECK_DONE();
}
