// SPDX-License-Identifier: MIT
/* Page level: growing and shrinking a run in place (_nd_page_grow,
 * _nd_page_shrink, for realloc; _nd_page_grow_down, for the large cache). Exact page counts on CPU-less emulated
 * nodes that malloc never touches under the local policy: TN (1 GiB) and
 * SN (64 MiB, for the capacity limit). */
#include <errno.h>

#include "check.h"
#include "internal.h"

static char err[256];

#define TN 1
#define SN 2

static void check_slot(int node, const char *when)
{
	err[0] = '\0';
	int r = _nd_page_check(node, err, sizeof err);
	CHECK(r == 0, "%s: %s", when, err);
}

static _nd_page_info_t info(int node)
{
	_nd_page_info_t in;
	memset(&in, 0, sizeof in);
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

/* Head RUN with n pages on node, every other page TAIL. */
static void check_run(char *p, uint64_t n, int node, const char *when)
{
	_nd_pagedesc_t *h = _nd_page_desc(p);
	CHECK(h && h->state == ND_PG_RUN && h->npages == n && h->node == node, "%s: head state %d npages %llu",
	      when, h ? h->state : -1, h ? (unsigned long long)h->npages : 0ull);
	for (uint64_t j = 1; j < n; j++)
		if (_nd_page_desc(p + j * ND_PAGE_SIZE)->state != ND_PG_TAIL) {
			CHECK(0, "%s: page %llu of the run is not a tail", when, (unsigned long long)j);
			break;
		}
}

/* The slot is back to one clean block holding every page. */
static void check_empty(int node, const char *when)
{
	_nd_page_trim(node);
	check_slot(node, when);
	_nd_page_info_t in = info(node);
	CHECK_EQ(in.free_pages, in.slot_pages);
	CHECK_EQ(in.free_blocks, 1);
	CHECK_EQ(in.used_pages, 0);
	CHECK_EQ(in.committed_pages, 0);
}

int main(void)
{
	int rc = nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G; 2: mem=64M", err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	_nd_opt_set("arena_reserve", "1G");
	_nd_opt_set("purge_threshold", "1M"); /* runs of 256 pages and more are big */

	/* Phase 1: grow into free neighbours, small -> small -> big. */
	char *a = _nd_page_alloc_exact(TN, 3, 1);
	CHECK(a != NULL, "errno %d", errno);
	_nd_page_info_t in = info(TN);
	CHECK_EQ(in.purge_pages, 256);
	uint64_t slot = in.slot_pages;
	CHECK_EQ(in.free_pages, slot - 3);
	CHECK_EQ(in.committed_pages, 3);
	char *base = in.base;
	CHECK(a == base, "first run at %p, slot at %p", (void *)a, (void *)base);
	a[0] = 1;
	CHECK_EQ(_nd_page_grow(a, 5), 0); /* page 3 (order 0) and part of 4-7 */
	check_run(a, 5, TN, "grow 3->5");
	check_slot(TN, "grow 3->5");
	in = info(TN);
	CHECK_EQ(in.free_pages, slot - 5);
	CHECK_EQ(in.used_pages, 5);
	CHECK_EQ(in.committed_pages, 5);
	for (uint64_t j = 0; j < 5; j++) /* a small run: every page DIRTY */
		CHECK(_nd_page_desc(a + j * ND_PAGE_SIZE)->flags & ND_PGF_DIRTY, "page %llu", (unsigned long long)j);
	a[5 * ND_PAGE_SIZE - 1] = 2;
	CHECK_EQ(_nd_page_grow(a, 100), 0);
	check_run(a, 100, TN, "grow 5->100");
	check_slot(TN, "grow 5->100");
	CHECK_EQ(info(TN).free_pages, slot - 100);
	CHECK_EQ(_nd_page_grow(a, 300), 0); /* becomes big: no DIRTY flags */
	check_run(a, 300, TN, "grow 100->300");
	check_slot(TN, "grow 100->300");
	in = info(TN);
	CHECK_EQ(in.free_pages, slot - 300);
	CHECK_EQ(in.used_pages, 300);
	CHECK_EQ(in.committed_pages, 300);
	CHECK(!(_nd_page_desc(a)->flags & ND_PGF_DIRTY));
	CHECK(a[0] == 1 && a[5 * ND_PAGE_SIZE - 1] == 2, "contents kept");
	CHECK_EQ(_nd_page_grow(a, 300), -1); /* not a growth */
	CHECK_EQ(_nd_page_grow(a, 10), -1);
	CHECK_EQ(_nd_page_grow(a + ND_PAGE_SIZE, 400), -1); /* not a head */
	CHECK_EQ(_nd_page_free(a), 0);
	check_empty(TN, "phase 1 freed"); /* grew, freed: one block again */

	/* Phase 2: refused when a neighbour is allocated; nothing changes. */
	a = _nd_page_alloc_exact(TN, 4, 1);
	char *b = _nd_page_alloc_exact(TN, 4, 1);
	CHECK(a == base && b == base + 4 * ND_PAGE_SIZE, "a %p b %p", (void *)a, (void *)b);
	in = info(TN);
	CHECK_EQ(_nd_page_grow(a, 5), -1);
	check_run(a, 4, TN, "refused");
	check_slot(TN, "refused");
	_nd_page_info_t in2 = info(TN);
	CHECK_EQ(in2.free_pages, in.free_pages);
	CHECK_EQ(in2.free_blocks, in.free_blocks);
	CHECK_EQ(in2.used_pages, in.used_pages);
	CHECK_EQ(in2.committed_pages, in.committed_pages);
	/* b freed: its pages are a dirty block; growing a takes them (no new
	 * commit for them) and clean ones past them. */
	CHECK_EQ(_nd_page_free(b), 0);
	in = info(TN);
	CHECK_EQ(in.dirty_pages, 4);
	CHECK_EQ(in.committed_pages, 8);
	CHECK_EQ(_nd_page_grow(a, 12), 0);
	check_run(a, 12, TN, "grow into a dirty block");
	check_slot(TN, "grow into a dirty block");
	in = info(TN);
	CHECK_EQ(in.dirty_pages, 0);
	CHECK_EQ(in.committed_pages, 12);
	CHECK_EQ(in.free_pages, slot - 12);
	/* A run in the middle of the way stops a longer growth. */
	b = _nd_page_alloc_exact(TN, 1, 1);
	CHECK(b == base + 12 * ND_PAGE_SIZE, "b %p", (void *)b);
	CHECK_EQ(_nd_page_grow(a, 64), -1);
	check_run(a, 12, TN, "refused past a run");
	CHECK_EQ(_nd_page_free(b), 0);
	CHECK_EQ(_nd_page_grow(a, 64), 0);
	check_slot(TN, "grow 12->64");

	/* Shrink: small tail back dirty, big tail purged. */
	CHECK_EQ(_nd_page_shrink(a, 64), -1);
	CHECK_EQ(_nd_page_shrink(a, 0), -1);
	CHECK_EQ(_nd_page_shrink(a, 10), 0);
	check_run(a, 10, TN, "shrink 64->10");
	check_slot(TN, "shrink 64->10");
	in = info(TN);
	CHECK_EQ(in.used_pages, 10);
	CHECK_EQ(in.dirty_pages, 54);
	CHECK_EQ(in.committed_pages, 64);
	CHECK_EQ(_nd_page_grow(a, 1000), 0);
	check_slot(TN, "grow 10->1000");
	CHECK_EQ(info(TN).committed_pages, 1000);
	CHECK_EQ(_nd_page_shrink(a, 600), 0); /* big -> big: tail purged */
	check_run(a, 600, TN, "shrink 1000->600");
	check_slot(TN, "shrink 1000->600");
	in = info(TN);
	CHECK_EQ(in.committed_pages, 600);
	CHECK_EQ(in.dirty_pages, 0);
	CHECK_EQ(_nd_page_shrink(a, 7), 0); /* big -> small: DIRTY on what stays */
	check_run(a, 7, TN, "shrink 600->7");
	check_slot(TN, "shrink 600->7");
	in = info(TN);
	CHECK_EQ(in.committed_pages, 7);
	CHECK_EQ(in.used_pages, 7);
	CHECK_EQ(in.free_pages, slot - 7);
	CHECK(_nd_page_desc(a + 6 * ND_PAGE_SIZE)->flags & ND_PGF_DIRTY);
	CHECK_EQ(_nd_page_free(a), 0);
	check_empty(TN, "phase 2 freed");

	/* Phase 3: the slot end. Two halves; the upper one cannot pass it. */
	uint64_t half = slot / 2;
	a = _nd_page_alloc_exact(TN, half, 1);
	b = _nd_page_alloc_exact(TN, half - 1, 1);
	CHECK(a == base && b == base + half * ND_PAGE_SIZE, "a %p b %p", (void *)a, (void *)b);
	CHECK_EQ(_nd_page_grow(b, half + 1), -1);
	CHECK_EQ(_nd_page_grow(a, half + 1), -1); /* b is in the way */
	CHECK_EQ(_nd_page_grow(b, half), 0);       /* the last page of the slot */
	check_run(b, half, TN, "slot end");
	check_slot(TN, "slot end");
	CHECK_EQ(info(TN).free_pages, 0);
	CHECK_EQ(_nd_page_free(a), 0);
	CHECK_EQ(_nd_page_free(b), 0);
	check_empty(TN, "phase 3 freed");

	/* Phase 4: capacity (SN has 64 MiB = 16384 pages in a 1 GiB slot). */
	a = _nd_page_alloc_exact(SN, 16000, 1);
	CHECK(a != NULL, "errno %d", errno);
	in = info(SN);
	CHECK_EQ(in.capacity_pages, 16384);
	CHECK_EQ(_nd_page_grow(a, 16385), -1);
	check_run(a, 16000, SN, "over capacity");
	in2 = info(SN);
	CHECK_EQ(in2.used_pages, 16000);
	CHECK_EQ(in2.free_pages, in.free_pages);
	CHECK_EQ(_nd_page_grow(a, 16384), 0);
	CHECK_EQ(info(SN).used_pages, 16384);
	CHECK(_nd_page_alloc_exact(SN, 1, 1) == NULL); /* the node is full */
	check_slot(SN, "full");
	CHECK_EQ(_nd_page_shrink(a, 8000), 0);
	CHECK_EQ(info(SN).used_pages, 8000);
	CHECK_EQ(_nd_page_free(a), 0);
	check_empty(SN, "phase 4 freed");

	/* Phase 5: growing a big run downward (_nd_page_grow_down): into the
	 * free blocks right before it, its contents then its end. */
	char *x = _nd_page_alloc_exact(TN, 256, 1), *y = _nd_page_alloc_exact(TN, 256, 1);
	b = _nd_page_alloc_exact(TN, 512, 1);
	CHECK(x == base && y == base + 256 * ND_PAGE_SIZE && b == base + 512 * ND_PAGE_SIZE, "x %p y %p b %p",
	      (void *)x, (void *)y, (void *)b);
	b[0] = 0x5a;
	CHECK(_nd_page_grow_down(b, 600) == NULL); /* y is in the way */
	check_run(b, 512, TN, "down: refused");
	char *sm = _nd_page_alloc_exact(TN, 4, 1);
	CHECK(sm != NULL && _nd_page_grow_down(sm, 8) == NULL); /* small runs do not */
	CHECK_EQ(_nd_page_free(sm), 0);
	CHECK_EQ(_nd_page_free(y), 0);
	in = info(TN);
	a = _nd_page_grow_down(b, 700);
	CHECK(a == base + 324 * ND_PAGE_SIZE, "down 512->700: %p", (void *)a);
	check_run(a, 700, TN, "down 512->700");
	check_slot(TN, "down 512->700");
	CHECK(a[188 * ND_PAGE_SIZE] == 0x5a, "the old pages end the run");
	in2 = info(TN);
	CHECK_EQ(in2.used_pages, in.used_pages + 188);
	CHECK_EQ(in2.free_pages, in.free_pages - 188);
	CHECK_EQ(in2.committed_pages, in.committed_pages + 188);
	CHECK(_nd_page_grow_down(a, 800) == NULL); /* x is in the way */
	CHECK_EQ(_nd_page_free(x), 0);
	CHECK(_nd_page_grow_down(a, 1025) == NULL); /* the slot start */
	CHECK(_nd_page_grow_down(a, 1024) == base);
	check_run(base, 1024, TN, "down to the slot start");
	check_slot(TN, "down to the slot start");
	CHECK_EQ(_nd_page_free(base), 0);
	check_empty(TN, "phase 5 freed");
	/* Dirty pages before it (a freed small run) are taken without a new
	 * commit and lose their DIRTY flag. */
	sm = _nd_page_alloc_exact(TN, 4, 1);
	b = _nd_page_alloc_exact(TN, 512, 1);
	CHECK(sm == base && b == base + 512 * ND_PAGE_SIZE, "sm %p b %p", (void *)sm, (void *)b);
	CHECK_EQ(_nd_page_free(sm), 0);
	CHECK_EQ(info(TN).committed_pages, 516);
	CHECK(_nd_page_grow_down(b, 1024) == base);
	check_slot(TN, "down into dirty pages");
	in = info(TN);
	CHECK_EQ(in.committed_pages, 1024);
	CHECK_EQ(in.dirty_pages, 0);
	CHECK(!(_nd_page_desc(base)->flags & ND_PGF_DIRTY));
	CHECK_EQ(_nd_page_free(base), 0);
	check_empty(TN, "phase 5 dirty freed");

	/* Spread runs (mixed slot) keep their layout. */
	nd_policy_t il;
	CHECK(nd_policy_parse("interleave:1,2@4K", &il, err, sizeof err) == 0, "%s", err);
	char *s = _nd_page_alloc_spread(8, &il);
	CHECK(s != NULL, "errno %d", errno);
	CHECK_EQ(_nd_page_grow(s, 9), -1);
	CHECK_EQ(_nd_page_shrink(s, 4), -1);
	CHECK_EQ(_nd_page_free(s), 0);
	static char not_ours[8192];
	CHECK_EQ(_nd_page_grow(not_ours, 4), -1);
	return CHECK_DONE();
}
