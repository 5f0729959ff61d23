// SPDX-License-Identifier: MIT
/* Page level, returning memory: a freed run at or above the purge
 * threshold leaves the committed count and the resident set at once;
 * small freed runs stay committed (dirty) until the slot holds more than
 * its dirty limit (then the oldest excess goes) or a trim; committed bytes
 * follow exactly.
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
	_nd_opt_set("purge_decay_ms", "0"); /* the counts below are the limit's alone */
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

	/* The dirty limit: what brings the pages in use back to their recent
	 * peak, at most max(16 purge blocks, the pages in use), at least 4
	 * purge blocks (1024 pages); never more than that stays dirty. */
	for (int k = 0; k < 400; k++) {
		small[k] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(small[k] != NULL);
		small[k][0] = 1;
	}
	CHECK(_nd_page_info(TN, &in) == 0);
	uint64_t peak = in.used_pages, maxdirty = 0;
	for (int k = 0; k < 400; k++) {
		CHECK(_nd_page_free(small[k]) == 0);
		CHECK(_nd_page_info(TN, &in) == 0);
		if (in.dirty_pages > maxdirty)
			maxdirty = in.dirty_pages;
		uint64_t cap = in.used_pages > 4096 ? in.used_pages : 4096;
		uint64_t lim = peak - in.used_pages < cap ? peak - in.used_pages : cap;
		if (lim < 1024)
			lim = 1024;
		CHECK(in.dirty_pages <= lim, "dirty pages %llu over the limit %llu", (unsigned long long)in.dirty_pages,
		      (unsigned long long)lim);
	}
	CHECK(maxdirty <= 1600, "dirty pages reached %llu", (unsigned long long)maxdirty);
	CHECK(maxdirty >= 1000, "dirty pages only reached %llu", (unsigned long long)maxdirty);
	CHECK_EQ(committed(TN) - c0, in.dirty_pages * 4096);
	char e[200] = "";
	CHECK(_nd_page_check(TN, e, sizeof e) == 0, "%s", e);

	/* A phase that frees all its runs and allocates them again keeps its
	 * pages: nothing is purged, nothing new committed (the limit was
	 * max(1024 pages, 4x the pages in use): every round purged most of
	 * the 1600 pages freed and faulted them in again). */
	_nd_page_trim(TN);
	c0 = committed(TN);
	for (int round = 0; round < 5; round++) {
		for (int k = 0; k < 400; k++) {
			small[k] = _nd_page_alloc_exact(TN, 4, 1);
			CHECK(small[k] != NULL);
		}
		CHECK(committed(TN) - c0 == 1600 * 4096, "round %d: committed +%llu", round, (unsigned long long)(committed(TN) - c0));
		for (int k = 0; k < 400; k++)
			CHECK(_nd_page_free(small[k]) == 0);
		CHECK(committed(TN) - c0 == 1600 * 4096, "round %d: committed +%llu after the frees", round, (unsigned long long)(committed(TN) - c0));
	}
	_nd_page_trim(TN);

	/* On the way back to the peak the dirty pages stay while the excess
	 * over the limit is at most one purge block (256 pages), and
	 * past that only the excess goes: 16 MiB of runs, three in four
	 * freed (the dirty pages bring the pages in use back to the peak: the
	 * limit), then runs that no dirty block fits take clean pages and the
	 * next frees are past the limit. It purged the excess and one purge
	 * block (256 pages), which the way back faulted in again; before,
	 * down to 3/4 of the limit (bench footprint's refill). A thread's
	 * exit that gives back its slabs is such a way back: a held-out
	 * stress of short-lived threads faulted 128 pages in again per exit. */
	enum { N16 = 256 };
	static char *sixteen[N16];
	c0 = committed(TN);
	for (int k = 0; k < N16; k++) {
		sixteen[k] = _nd_page_alloc_exact(TN, 16, 1);
		CHECK(sixteen[k] != NULL);
	}
	CHECK(_nd_page_info(TN, &in) == 0);
	uint64_t top = in.used_pages;
	for (int k = 0; k < N16; k++)
		if (k % 4 != 3)
			CHECK(_nd_page_free(sixteen[k]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages, N16 / 4 * 3 * 16);
	char *fresh[6];
	fresh[0] = _nd_page_alloc_exact(TN, 64, 1);
	CHECK(fresh[0] != NULL);
	CHECK(_nd_page_free(sixteen[3]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.dirty_pages == N16 / 4 * 3 * 16 + 16, "%llu dirty pages: purged for an excess of 64",
	      (unsigned long long)in.dirty_pages);
	for (int k = 1; k < 6; k++) { /* one takes sixteen[0-3], merged */
		fresh[k] = _nd_page_alloc_exact(TN, 64, 1);
		CHECK(fresh[k] != NULL);
	}
	CHECK(_nd_page_free(sixteen[7]) == 0); /* 336 pages past the limit */
	CHECK(_nd_page_info(TN, &in) == 0);
	uint64_t keep = top - in.used_pages;
	CHECK(keep > in.used_pages && keep > 1024, "the peak bounds the limit (%llu, %llu in use)",
	      (unsigned long long)keep, (unsigned long long)in.used_pages);
	CHECK(in.dirty_pages <= keep && in.dirty_pages + 64 > keep, "%llu dirty pages for a limit of %llu (used %llu)",
	      (unsigned long long)in.dirty_pages, (unsigned long long)keep, (unsigned long long)in.used_pages);
	CHECK_EQ(committed(TN) - c0, (in.used_pages - 1 + in.dirty_pages) * 4096);
	for (int k = 0; k < 6; k++)
		CHECK(_nd_page_free(fresh[k]) == 0);
	for (int k = 11; k < N16; k += 4)
		CHECK(_nd_page_free(sixteen[k]) == 0);
	CHECK(_nd_page_check(TN, e, sizeof e) == 0, "%s", e);
	_nd_page_trim(TN);

	/* A steady level of pages in use keeps as many dirty pages: 16 MiB
	 * of runs of 32 pages, every other one freed (2048 dirty pages, the
	 * way back to the peak), then 64 runs of 64 pages take clean
	 * pages (no dirty block fits), and freeing one leaves the limit
	 * (the peak) 64 pages away while 2112 pages are dirty: they all
	 * stay, the pages in use (6081) bound the limit from below. With a
	 * floor of 4 purge blocks it purged down to 3/4 of it (768 pages),
	 * and a loop churning runs of many sizes faulted in 7 pages per
	 * malloc. The trim still takes them all. */
	enum { N32 = 128, N64 = 64 };
	static char *r32[N32], *r64[N64];
	for (int k = 0; k < N32; k++) {
		r32[k] = _nd_page_alloc_exact(TN, 32, 1);
		CHECK(r32[k] != NULL);
	}
	for (int k = 0; k < N32; k += 2)
		CHECK(_nd_page_free(r32[k]) == 0);
	for (int k = 0; k < N64; k++) {
		r64[k] = _nd_page_alloc_exact(TN, 64, 1);
		CHECK(r64[k] != NULL);
	}
	CHECK(_nd_page_free(r64[0]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.dirty_pages == N32 / 2 * 32 + 64, "%llu dirty pages, %llu in use", (unsigned long long)in.dirty_pages,
	      (unsigned long long)in.used_pages);
	CHECK(_nd_page_trim(TN) == (size_t)(N32 / 2 * 32 + 64) * 4096);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages, 0);
	for (int k = 1; k < N32; k += 2)
		CHECK(_nd_page_free(r32[k]) == 0);
	for (int k = 1; k < N64; k++)
		CHECK(_nd_page_free(r64[k]) == 0);
	_nd_page_trim(TN);

	/* Past the limit only the excess goes, the oldest first: 100 MiB
	 * freed in order leave the 16 purge blocks of the cap, at least 3/4
	 * of them, and the last freed run's pages are among them (the whole
	 * slot was purged each time). */
	enum { BIG = 400 };
	static char *run[BIG];
	c0 = committed(TN);
	for (int k = 0; k < BIG; k++) {
		run[k] = _nd_page_alloc_exact(TN, 64, 1);
		CHECK(run[k] != NULL);
	}
	for (int k = 0; k < BIG; k++)
		CHECK(_nd_page_free(run[k]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.dirty_pages <= 4096 && in.dirty_pages >= 3072, "dirty pages %llu after freeing %d",
	      (unsigned long long)in.dirty_pages, BIG * 64);
	CHECK_EQ(committed(TN) - c0, in.dirty_pages * 4096);
	CHECK(!(_nd_page_desc(run[0])->flags & ND_PGF_DIRTY), "the first run freed was kept");
	CHECK(_nd_page_desc(run[BIG - 1])->flags & ND_PGF_DIRTY, "the last run freed was purged");
	CHECK(_nd_page_check(TN, e, sizeof e) == 0, "%s", e);
	CHECK(_nd_page_free(warm) == 0);
	return CHECK_DONE();
}
