// SPDX-License-Identifier: MIT
/* Page level, one node: run sizes and alignments, descriptor invariants,
 * interior frees rejected, coalescing back to one block, and a randomized
 * alloc/free sequence checked against a shadow model of the slot.
 * The test binary runs on nodalloc's malloc, which takes pages of the CPUs'
 * memory nodes; the exact page counts are therefore taken on a CPU-less
 * emulated node (TN) that malloc never touches under the local policy. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static char err[256];

#define TN 1 /* the node under test: memory, no CPUs */

static void check_slot(int node, const char *when)
{
	err[0] = '\0';
	int r = _nd_page_check(node, err, sizeof err);
	CHECK(r == 0, "%s: %s", when, err);
}

/* Deterministic generator (no libc rand state shared with anything). */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define MAXLIVE 256
static struct {
	char *p;
	size_t n;
} live[MAXLIVE];
static int nlive;

int main(void)
{
	/* Before anything allocates (no output before this): node 0 has the
	 * CPUs and serves malloc, node TN is only for this test. */
	int rc = nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	/* Small slots keep the walks short; ignored if the arenas exist. */
	_nd_opt_set("arena_reserve", "1G");
	_nd_opt_set("purge_threshold", "1M");

	void *first = _nd_page_alloc_exact(TN, 1, 1);
	CHECK(first != NULL, "errno %d", errno);
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.usable);
	CHECK((uintptr_t)in.base % in.slot_bytes == 0, "slot base %p not aligned to %zu", in.base, in.slot_bytes);
	CHECK_EQ(in.slot_pages * ND_PAGE_SIZE, in.slot_bytes);
	CHECK_EQ(in.slot_bytes, 1u << 30);
	uint64_t base_free = in.free_pages + 1; /* as if first were free */
	CHECK_EQ(base_free, in.slot_pages); /* nothing else holds pages of TN */
	char *sb = in.base;
	CHECK((char *)first >= sb && (char *)first < sb + in.slot_bytes);
	CHECK(_nd_page_free(first) == 0);
	CHECK(_nd_page_free(first) == -1); /* double free rejected */

	/* Sizes 1..300 and alignments: aligned, inside the slot, descriptors. */
	for (size_t n = 1; n <= 300; n++) {
		size_t al = (size_t)1 << (n % 7); /* 1..64 pages */
		char *p = _nd_page_alloc_exact(TN, n, al);
		CHECK(p != NULL, "n=%zu align=%zu", n, al);
		if (!p)
			continue;
		CHECK(((uintptr_t)(p - sb) >> ND_PAGE_SHIFT) % al == 0, "n=%zu not aligned to %zu pages", n, al);
		_nd_pagedesc_t *h = _nd_page_desc(p);
		CHECK(h && h->state == ND_PG_RUN && h->npages == n && h->use == ND_USE_NONE && h->node == TN);
		for (size_t j = 1; j < n; j++) {
			_nd_pagedesc_t *d = _nd_page_desc(p + j * ND_PAGE_SIZE);
			if (d->state != ND_PG_TAIL) {
				CHECK(d->state == ND_PG_TAIL, "page %zu of a %zu-page run", j, n);
				break;
			}
		}
		for (size_t j = 0; j < n; j++)
			CHECK_EQ(_nd_page_node_of(p + j * ND_PAGE_SIZE + 123), TN);
		p[0] = 1;
		p[n * ND_PAGE_SIZE - 1] = 2; /* the whole run is writable */
		/* Interior pointers and unaligned heads are rejected. */
		if (n > 1)
			CHECK(_nd_page_free(p + ND_PAGE_SIZE) == -1);
		CHECK(_nd_page_free(p + 8) == -1);
		live[nlive].p = p;
		live[nlive].n = n;
		if (++nlive == MAXLIVE || n == 300) {
			check_slot(TN, "after sizes");
			while (nlive)
				CHECK(_nd_page_free(live[--nlive].p) == 0);
		}
	}
	check_slot(TN, "after freeing sizes");
	CHECK(_nd_page_free(NULL) == -1);
	static char not_ours[8192];
	CHECK(_nd_page_free(not_ours) == -1);
	CHECK(_nd_page_desc(not_ours) == NULL);
	CHECK_EQ(_nd_page_node_of(not_ours), -1);

	/* Bad arguments. */
	errno = 0;
	CHECK(_nd_page_alloc_exact(TN, 0, 1) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(_nd_page_alloc_exact(TN, 1, 3) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(_nd_page_alloc_exact(TN, in.slot_pages + 1, 1) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(_nd_page_alloc_exact(nd_node_limit() + 5, 1, 1) == NULL && errno == ENOMEM);

	/* Randomized alloc/free against a shadow bitmap of the slot. */
	uint64_t np = in.slot_pages;
	uint8_t *shadow = calloc(np, 1);
	int ops = 0, fails = 0;
	for (int step = 0; step < 6000; step++) {
		bool do_alloc = nlive == 0 || (nlive < MAXLIVE && next_rand() % 100 < 55);
		if (do_alloc) {
			uint64_t r = next_rand();
			size_t n = r % 4 == 0 ? 1 + (r >> 8) % 600 : 1 + (r >> 8) % 24;
			size_t al = (size_t)1 << ((r >> 40) % 5);
			char *p = _nd_page_alloc_exact(TN, n, al);
			if (!p) {
				_nd_page_info_t fi;
				_nd_page_info(TN, &fi);
				if (fails < 3)
					fprintf(stderr, "alloc of %zu pages align %zu failed: free %llu in %llu blocks, largest order %d, dirty %llu, used %llu\n",
						n, al, (unsigned long long)fi.free_pages, (unsigned long long)fi.free_blocks,
						fi.largest_order, (unsigned long long)fi.dirty_pages, (unsigned long long)fi.used_pages);
				fails++;
				continue;
			}
			uint64_t i = (uint64_t)(p - sb) >> ND_PAGE_SHIFT;
			bool overlap = i + n > np;
			for (size_t j = 0; !overlap && j < n; j++)
				overlap = shadow[i + j] != 0;
			CHECK(!overlap, "run at page %llu of %zu pages overlaps a live run", (unsigned long long)i, n);
			for (size_t j = 0; i + j < np && j < n; j++)
				shadow[i + j] = 1;
			p[0] = (char)step;
			live[nlive].p = p;
			live[nlive].n = n;
			nlive++;
		} else {
			int k = (int)(next_rand() % (uint64_t)nlive);
			uint64_t i = (uint64_t)(live[k].p - sb) >> ND_PAGE_SHIFT;
			CHECK(_nd_page_free(live[k].p) == 0);
			for (size_t j = 0; j < live[k].n; j++)
				shadow[i + j] = 0;
			live[k] = live[--nlive];
		}
		ops++;
		if (step % 500 == 0) {
			check_slot(TN, "random sequence");
			/* Free page count = slot minus live pages. */
			uint64_t used = 0;
			for (int k = 0; k < nlive; k++)
				used += live[k].n;
			CHECK(_nd_page_info(TN, &in) == 0);
			CHECK_EQ(in.free_pages, base_free - used);
		}
	}
	CHECK_EQ(fails, 0);
	while (nlive)
		CHECK(_nd_page_free(live[--nlive].p) == 0);
	check_slot(TN, "after random");
	free(shadow);

	/* Coalescing: once the committed free pages are trimmed, the slot is
	 * one block again (nothing else holds pages of TN). */
	_nd_page_trim(TN);
	check_slot(TN, "after trim");
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.free_pages, base_free);
	CHECK_EQ(in.dirty_pages, 0);
	CHECK_EQ(in.largest_order, __builtin_ctzll(in.slot_pages));
	CHECK_EQ(in.free_blocks, 1);
	/* Small frees stop merging dirty blocks below the purge order, so
	 * before a trim there is more than one block, all small ones dirty. */
	char *a = _nd_page_alloc_exact(TN, 3, 1), *b = _nd_page_alloc_exact(TN, 1, 1);
	CHECK(a && b);
	CHECK(_nd_page_free(a) == 0 && _nd_page_free(b) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages, 4);
	check_slot(TN, "dirty small blocks");
	CHECK_EQ(_nd_page_trim(TN), 4 * ND_PAGE_SIZE);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK_EQ(in.dirty_pages, 0);
	CHECK_EQ(in.free_blocks, 1);
	check_slot(TN, "trimmed");
	printf("%d random operations\n", ops);
	return CHECK_DONE();
}
