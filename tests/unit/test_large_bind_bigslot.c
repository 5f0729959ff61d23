// SPDX-License-Identifier: MIT
/* A bound node whose memory is all free serves a block of most of it
 * (task bigslot). Under bind:1 on an emulated 1 GiB node 1 (a 2 GiB
 * slot), a churn of 1 B - 64 MiB blocks (malloc, realloc, free; live
 * requests under 850 MiB) is freed whole and trimmed; then malloc(1000
 * MiB) must succeed on node 1. Before, what the library itself kept split
 * the slot: the heaps' empty current slabs (one per class, where the
 * churn left them; fails without the failure path's whole trim) and the
 * slab headers' metadata chunks (never freed, taken wherever packing
 * was; fails without _nd_page_alloc_low). A second 1000 MiB block, for
 * which the node has no room, still fails with ENOMEM. First, at the
 * page level: a part of the slot shrunk to end past half the slot, whose
 * free tail and hole alone hold a run, which the span fallback did not
 * look past (fails without its growth into the hole). */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "churn_fixture.h"
#include "internal.h"

#ifndef NSLOT
#define NSLOT 65536
#endif
#ifndef STEPS
#define STEPS 300000
#endif
#define LIVE_MAX (850ull << 20)

static char err[256];
/* The page level alone: one-page runs at pages 0, 2^17 and 2^18 of node
 * 1's slot (2^19 pages), then a trim: the slot's part shrinks to end right
 * after the last (the rest a hole). 200000 pages fit only past it, in the
 * part's end and the hole: no aligned block of order 18 can be grown
 * there, and the span fallback looked only below the part's end (ENOMEM). */
static void span_past_part(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0 && in.slot_pages == 1u << 19, "slot of %llu pages", (unsigned long long)in.slot_pages);
	char *base = in.base;
	char *pin[3];
	for (int k = 0; k < 3; k++) {
		pin[k] = _nd_page_alloc_exact(1, 1, k ? 1u << (16 + k) : 1);
		CHECK(pin[k] != NULL);
		CHECK_EQ((pin[k] - base) >> ND_PAGE_SHIFT, k ? 1u << (16 + k) : 0);
	}
	_nd_page_trim(1);
	uint64_t part = _nd_page_g.arenas[1].mapped; /* single-threaded: no lock needed */
	CHECK(part > 1u << 18 && part < 1u << 19, "the part (%llu pages) ends past the last pin", (unsigned long long)part);
	errno = 0;
	char *r = _nd_page_alloc_exact(1, 200000, 1);
	CHECK(r != NULL, "200000 pages past the part's end: errno %d", errno);
	CHECK(r >= pin[2] + ND_PAGE_SIZE, "the run starts past the last pin");
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);
	if (r)
		CHECK_EQ(_nd_page_free(r), 0);
	for (int k = 0; k < 3; k++)
		if (pin[k])
			CHECK_EQ(_nd_page_free(pin[k]), 0);
	_nd_page_trim(1);
}

int main(void)
{
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "%s", err);
	span_past_part();
	nd_policy_t bind1;
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&bind1) == 0);

	static char *p[NSLOT];
	static size_t sz[NSLOT];
	size_t live = 0;
	for (int step = 0; step < STEPS; step++) {
		int i = (int)(rnd() % NSLOT);
		if (p[i] && rnd() % 2) {
			free(p[i]);
			live -= sz[i];
			p[i] = NULL;
			continue;
		}
		size_t n = pick();
		if (live - sz[i] + n > LIVE_MAX)
			continue;
		char *q = p[i] ? realloc(p[i], n) : malloc(n);
		if (!q)
			continue; /* the live blocks may split the slot: not this test's point */
		live += n - sz[i];
		p[i] = q;
		sz[i] = n;
		q[0] = 1;
		q[n - 1] = 1;
	}
	for (int i = 0; i < NSLOT; i++) {
		free(p[i]);
		p[i] = NULL;
		sz[i] = 0;
	}
	malloc_trim(0); /* every free page back: the slot's part shrinks to its last run */

	errno = 0;
	char *big = malloc(1000u << 20);
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK(big != NULL, "malloc(1000 MiB) on the emptied 1 GiB node: errno %d; %llu pages in use, largest free order %d",
	      errno, (unsigned long long)in.used_pages, in.largest_order);
	if (big) {
		/* from the slot, which the churn left whole: not a run outside it
		 * (outrun.c), which would serve it anyway */
		CHECK(big >= (char *)in.base && big < (char *)in.base + in.slot_bytes, "1000 MiB in node 1's slot");
		CHECK_EQ(_nd_page_node_of(big), 1);
		CHECK_EQ(_nd_page_node_of(big + (1000u << 20) - 1), 1);
		big[0] = big[(1000u << 20) - 1] = 1;
	}
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);

	/* no room left on the node: ENOMEM, nothing broken */
	errno = 0;
	char *more = malloc(1000u << 20);
	CHECK(more == NULL && errno == ENOMEM, "a second 1000 MiB on the 1 GiB node: %p errno %d", (void *)more, errno);
	free(more);
	/* that failure released the heaps' current slabs: every class serves
	 * again (the thread's dir[] followed them) */
	static void *o[64];
	for (int k = 0; k < 64; k++) {
		size_t n = 16 + (size_t)k * 512;
		o[k] = malloc(n);
		CHECK(o[k] != NULL && _nd_page_node_of(o[k]) == 1, "%zu B after the failure", n);
		if (o[k])
			memset(o[k], 0xA5, n);
	}
	for (int k = 0; k < 64; k++)
		free(o[k]);
	free(big);
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
