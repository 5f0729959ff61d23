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
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define TN 1

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
