// SPDX-License-Identifier: MIT
/*
 * A run of the purge order never hands out old data as clean: calloc of a
 * large block zeroes only the pages whose DIRTY flag says they may hold
 * old data (_nd_page_zero), and big runs carry no flags, so a big run must
 * come from clean blocks (invariant I). Regression: make fuzz, seed
 * 1795732585, "calloc not zero" for a block of 1 MiB. Branch purge2 let a
 * run of the purge order take two free dirty buddies of the order below
 * whole (to save their page faults); node_alloc then cleared the pages'
 * DIRTY flags, and _nd_page_zero skipped memory still holding old data.
 *
 * First, that it writes exactly the pages that may hold old data (branch
 * burst4): (1) a small run (below the purge threshold) taken from fresh
 * pages is left untouched, though its pages all carry DIRTY once taken
 * (they count as committed): its head's ND_PGF_FRESH says so (before,
 * calloc of fresh small runs wrote, so faulted in, every page: bench
 * wl_burst's first round); (2) the same pages taken again after a free
 * hold old data: zeroed; (3) dirty stretches are zeroed whole (one memset
 * each), clean pages and the bytes past the end are not, a last partial
 * page included.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "internal.h"

#define TN 1
#define NP 24 /* pages of the small run */
#define PG ND_PAGE_SIZE

/* Pages of [p, p + n pages) resident (mincore). */
static int resident(const void *p, int n)
{
	unsigned char v[NP];
	if (mincore((void *)p, (size_t)n * PG, v) != 0)
		return -1;
	int r = 0;
	for (int k = 0; k < n; k++)
		r += v[k] & 1;
	return r;
}

/* (1)-(3) above, on fresh memory of node TN. */
static void fresh_and_stretches(void)
{
	/* (1) fresh: untouched */
	unsigned char *r = _nd_page_alloc_exact(TN, NP, 1);
	CHECK(r != NULL);
	_nd_pagedesc_t *h = _nd_page_desc(r);
	CHECK(h && h->state == ND_PG_RUN && (h->flags & ND_PGF_FRESH), "a run of fresh pages is marked fresh");
	CHECK(h && (h[NP - 1].flags & ND_PGF_DIRTY), "a small run's pages count as committed");
	_nd_page_zero(r, (size_t)NP * PG);
	CHECK_EQ(resident(r, NP), 0);

	/* (2) written, freed, taken again (the same pages: the only dirty
	 * block of the slot): not fresh, zeroed */
	memset(r, 0xAA, (size_t)NP * PG);
	CHECK(_nd_page_free(r) == 0);
	unsigned char *q = _nd_page_alloc_exact(TN, NP, 1);
	CHECK(q == r, "run %p taken again at %p", (void *)r, (void *)q);
	h = _nd_page_desc(q);
	CHECK(h && !(h->flags & ND_PGF_FRESH), "a run of dirty pages is not fresh");
	_nd_page_zero(q, (size_t)NP * PG);
	long old = 0;
	for (size_t i = 0; i < (size_t)NP * PG; i++)
		old += q[i] != 0;
	CHECK_EQ(old, 0);

	/* (3) stretches: pages 0-2, 5, 9-10 and 12-13 dirty, the rest
	 * clean (flags cleared by hand, restored before the free); zero 13.5
	 * pages: page 13's first half only */
	static const int dirty[NP] = { 1, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0, 0 };
	memset(q, 0xAA, (size_t)NP * PG);
	for (int k = 0; k < NP; k++)
		if (!dirty[k])
			h[k].flags &= (uint8_t)~ND_PGF_DIRTY;
	size_t bytes = 13 * PG + PG / 2;
	_nd_page_zero(q, bytes);
	long wrong = 0;
	for (size_t i = 0; i < (size_t)NP * PG; i++) {
		bool zeroed = i < bytes && dirty[i / PG];
		wrong += q[i] != (zeroed ? 0 : 0xAA);
	}
	CHECK_EQ(wrong, 0);
	for (int k = 0; k < NP; k++)
		h[k].flags |= ND_PGF_DIRTY;
	CHECK(_nd_page_free(q) == 0);
	char err[256] = "";
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_threshold", "1M");
	_nd_opt_set("purge", "dontneed");
	_nd_opt_set("purge_decay_ms", "0"); /* nothing purged behind the test's back */
	void *warm = _nd_page_alloc_exact(TN, 1, 1);
	CHECK(warm != NULL);
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.purge_pages, 256);
	if (!_nd_page_g.lazy) /* an eager reservation: clean pages are mapped, mincore sees them */
		fresh_and_stretches();

	/* dirty free blocks of 128 pages, buddies side by side */
	enum { NS = 16, HALF = 128, BIG = 256, NB = 8 };
	char *s[NS];
	for (int k = 0; k < NS; k++) {
		s[k] = _nd_page_alloc_exact(TN, HALF, HALF);
		CHECK(s[k] != NULL);
		memset(s[k], 0x5a, (size_t)HALF << ND_PAGE_SHIFT);
	}
	for (int k = 0; k < NS; k++)
		CHECK(_nd_page_free(s[k]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.dirty_pages >= (uint64_t)NS * HALF / 2, "dirty pages %llu", (unsigned long long)in.dirty_pages);

	/* runs of the purge order, zeroed as calloc does: never old data */
	char *b[NB];
	long old = 0;
	for (int k = 0; k < NB; k++) {
		size_t bytes = (size_t)BIG << ND_PAGE_SHIFT;
		b[k] = _nd_page_alloc_exact(TN, BIG, 1);
		CHECK(b[k] != NULL);
		if (!b[k])
			continue;
		_nd_page_zero(b[k], bytes);
		for (size_t i = 0; i < bytes; i += 512)
			old += b[k][i] != 0;
	}
	CHECK(old == 0, "%ld bytes sampled held old data after _nd_page_zero", old);
	for (int k = 0; k < NB; k++)
		if (b[k])
			CHECK(_nd_page_free(b[k]) == 0);
	CHECK(_nd_page_free(warm) == 0);
	return CHECK_DONE();
}
