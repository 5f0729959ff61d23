// SPDX-License-Identifier: MIT
/*
 * The buddy allocator alone (src/buddy.c), driven on a static descriptor
 * array: no mapping, no lock, no page level (issue 15). Split and merge,
 * natural alignment of every block, exact runs (tails given back),
 * exhaustion, clean and dirty blocks kept apart and dirty ones kept at or
 * below purge_order, those of purge_order for small runs only (invariant
 * I), dirty blocks taken before clean ones (issue 11), a freed run whose
 * block is free again made that block again, merge after a purge, and the
 * checker's verdict on a good and on a corrupted slot.
 */
#include "check.h"
#include "internal.h"

#define ORDER 10 /* a slot of 1024 pages */
#define PAGES (1u << ORDER)
static _nd_pagedesc_t desc[PAGES];
static _nd_buddy_t b;
static char err[256];
static uint64_t purge_pages = 16; /* of the slot under test */

static void check_ok(const char *when)
{
	err[0] = '\0';
	CHECK(_nd_buddy_check(&b, err, sizeof err) == 0, "%s: %s", when, err);
}

/* A run of n pages as the page level makes it: a block of order k, its
 * tail back, the head marked. */
static uint32_t run(uint64_t n, unsigned k)
{
	uint64_t d;
	uint32_t i = _nd_buddy_take(&b, k, n < purge_pages, &d);
	if (i == ND_BUDDY_NIL)
		return i;
	if (n < (1ull << k))
		_nd_buddy_give_tail(&b, i, k, d, n);
	_nd_buddy_mark_run(&b, i, n, 0);
	return i;
}

static void unrun(uint32_t i, bool dirty)
{
	uint64_t n = desc[i].npages;
	for (uint64_t j = 0; j < n; j++)
		desc[i + j].flags = dirty ? ND_PGF_DIRTY : 0;
	_nd_buddy_give(&b, i, n, dirty, true);
}

/* A run of n pages (129..255) in a block of order 8, freed dirty: that
 * block is one free block again, holding the run's n dirty pages. */
static uint32_t run_freed_whole(uint64_t n)
{
	uint32_t i = run(n, 8);
	unrun(i, true);
	check_ok("run freed");
	CHECK(desc[i].state == ND_PG_FREE && desc[i].order == 8 && desc[i].npages == n,
	      "freed %llu-page run: block of order %u, %llu dirty", (unsigned long long)n, desc[i].order,
	      (unsigned long long)desc[i].npages);
	return i;
}

int main(void)
{
	_nd_buddy_init(&b, desc, ORDER, 4); /* dirty blocks stay below 16 pages */
	CHECK_EQ(_nd_buddy_largest(&b), -1);
	_nd_buddy_push(&b, 0, ORDER, 0);
	check_ok("fresh");
	CHECK_EQ(b.free_pages, PAGES);

	/* split: one page leaves one free block of each lower order */
	uint32_t a = run(1, 0);
	CHECK_EQ(a, 0);
	CHECK_EQ(b.nblocks, ORDER);
	for (unsigned o = 0; o < ORDER; o++)
		CHECK(b.head[o] == (1u << o), "order %u block at %u", o, b.head[o]);
	check_ok("one page");

	/* alignment: every run of order k starts at a multiple of 2^k */
	uint32_t r[8];
	unsigned ks[8] = { 3, 5, 1, 6, 2, 4, 0, 7 };
	for (int t = 0; t < 8; t++) {
		r[t] = run(1u << ks[t], ks[t]);
		CHECK(r[t] != ND_BUDDY_NIL && (r[t] & ((1u << ks[t]) - 1)) == 0, "order %u at %u", ks[t], r[t]);
	}
	/* exact runs: 5 pages take an order-3 block and give 3 back */
	uint64_t before = b.free_pages;
	uint32_t five = run(5, 3);
	CHECK(five != ND_BUDDY_NIL);
	CHECK_EQ(before - b.free_pages, 5);
	check_ok("runs");

	/* merge: everything back gives the one slot-sized block again */
	unrun(five, false);
	for (int t = 7; t >= 0; t--)
		unrun(r[t], false);
	unrun(a, false);
	check_ok("all freed");
	CHECK_EQ(b.nblocks, 1);
	CHECK_EQ(_nd_buddy_largest(&b), ORDER);

	/* exhaustion: 1024 single pages, then nothing; order too big: nothing */
	static uint32_t pg[PAGES];
	for (unsigned t = 0; t < PAGES; t++)
		pg[t] = run(1, 0);
	uint64_t d;
	CHECK(_nd_buddy_take(&b, 0, true, &d) == ND_BUDDY_NIL);
	CHECK_EQ(b.free_pages, 0);
	check_ok("exhausted");

	/* dirty and clean: even pages back dirty, odd clean; they merge (issue
	 * 11: a freed run's dirty pieces beside the clean tail it gave back
	 * were stranded), up to purge_order only, counts exact */
	for (unsigned t = 0; t < PAGES; t += 2)
		unrun(pg[t], true);
	for (unsigned t = 1; t < PAGES; t += 2)
		unrun(pg[t], false);
	check_ok("mixed dirty");
	CHECK_EQ(b.dirty_free, PAGES / 2);
	CHECK_EQ(b.nblocks, PAGES / 16);
	CHECK_EQ(_nd_buddy_largest(&b), 4);
	CHECK(b.dhead[4] != ND_BUDDY_NIL && b.head[4] == ND_BUDDY_NIL, "half-dirty blocks are on the dirty list");
	uint32_t p2 = _nd_buddy_take(&b, 1, true, &d);
	CHECK(p2 != ND_BUDDY_NIL && d == 1, "2 pages cut from a half-dirty block hold 1 dirty page, not %llu",
	      (unsigned long long)d);
	_nd_buddy_mark_run(&b, p2, 2, 0);
	check_ok("split");
	CHECK_EQ(b.dirty_free, PAGES / 2 - 1);
	desc[p2].flags = ND_PGF_DIRTY; /* the page level marks a small run dirty */
	desc[p2 + 1].flags = ND_PGF_DIRTY;
	_nd_buddy_give(&b, p2, 2, true, true);
	check_ok("merged back");
	CHECK_EQ(b.nblocks, PAGES / 16);
	CHECK_EQ(b.dirty_free, PAGES / 2 + 1);

	/* invariant I: dirty pages merge only up to purge_order */
	for (unsigned t = 0; t < PAGES; t++)
		pg[t] = run(1, 0);
	for (unsigned t = 0; t < PAGES; t++)
		unrun(pg[t], true);
	check_ok("all dirty");
	CHECK_EQ(_nd_buddy_largest(&b), 4);
	CHECK_EQ(b.nblocks, PAGES / 16);
	/* a dirty block of purge_order serves a small run, never a big one */
	uint32_t s15 = _nd_buddy_take(&b, 4, true, &d);
	CHECK(s15 != ND_BUDDY_NIL && d == 16, "a 15-page run reuses 16 dirty pages, not %llu", (unsigned long long)d);
	_nd_buddy_give(&b, s15, 16, true, true);
	CHECK(_nd_buddy_take(&b, 4, false, &d) == ND_BUDDY_NIL, "a 16-page run cut from dirty pages");
	check_ok("big runs from clean blocks only");

	/* a purge pass (purge.c) marks them clean; then they merge whole */
	for (int o = 0; o <= ORDER; o++) {
		CHECK(b.head[o] == ND_BUDDY_NIL, "no clean block of order %d", o);
		while (b.dhead[o] != ND_BUDDY_NIL)
			CHECK_EQ(_nd_buddy_mark_clean(&b, b.dhead[o]), 1ull << o);
	}
	CHECK_EQ(b.dirty_free, 0);
	for (int pass = 0; pass < ORDER; pass++)
		_nd_buddy_merge_clean(&b);
	check_ok("purged and merged");
	CHECK_EQ(b.nblocks, 1);
	CHECK_EQ(b.dirty_free, 0);

	/* dirty first (issue 11): with a clean block of the exact order and a
	 * dirty one of a bigger order free, a run is cut from the dirty one
	 * (it was the clean one: a fresh fault while committed pages wait) */
	uint32_t c4 = run(4, 2), d8 = run(8, 3);
	uint32_t keep = run(4, 2); /* keeps d8's order-3 block from merging */
	unrun(c4, false);
	unrun(d8, true);
	check_ok("one clean, one dirty");
	uint32_t t4 = _nd_buddy_take(&b, 2, true, &d);
	CHECK(t4 >= d8 && t4 < d8 + 8, "run at %u cut from the dirty block at %u (clean one at %u)", t4, d8, c4);
	CHECK_EQ(d, 4);
	if (d != 4)
		return CHECK_DONE(); /* the rest assumes the dirty block served */
	_nd_buddy_give(&b, t4, 4, true, true);
	unrun(keep, false);
	check_ok("dirty first");
	/* a dirty block too small does not count (nor, for a big run, one of
	 * purge_order): the clean block serves */
	uint32_t t8 = _nd_buddy_take(&b, 4, false, &d);
	CHECK(t8 != ND_BUDDY_NIL && d == 0, "order 4 from clean memory, dirty %llu", (unsigned long long)d);
	_nd_buddy_give(&b, t8, 16, false, true);
	check_ok("clean when no dirty fits");
	for (int o = 0; o <= 4; o++)
		while (b.dhead[o] != ND_BUDDY_NIL)
			_nd_buddy_mark_clean(&b, b.dhead[o]);
	for (int pass = 0; pass < ORDER; pass++)
		_nd_buddy_merge_clean(&b);
	CHECK_EQ(b.nblocks, 1);

	/* one dirty page among clean ones merges while the block stays 1/4
	 * dirty (order 2), not further (a 1-page pair would split it out of a
	 * big block again each time); a 1-page run is cut from the dirty
	 * page, not from the clean ones beside it */
	uint32_t q[4];
	for (int k = 0; k < 4; k++)
		q[k] = run(1, 0);
	CHECK(q[0] == 0 && q[3] == 3, "pages %u..%u", q[0], q[3]);
	for (int k = 0; k < 3; k++)
		unrun(q[k], false);
	uint32_t one = q[3]; /* the upper page of its block: taking must choose it */
	unrun(one, true);
	check_ok("one dirty page back");
	uint32_t blk = one & ~3u;
	CHECK(desc[blk].state == ND_PG_FREE && desc[blk].order == 2 && desc[blk].npages == 1,
	      "block at %u: state %u order %u dirty %llu", blk, desc[blk].state, desc[blk].order,
	      (unsigned long long)desc[blk].npages);
	uint32_t again1 = _nd_buddy_take(&b, 0, true, &d);
	CHECK(again1 == one && d == 1, "1 page at %u (dirty %llu), the dirty page is %u", again1,
	      (unsigned long long)d, one);
	_nd_buddy_mark_run(&b, again1, 1, 0);
	check_ok("dirty page taken again");
	_nd_buddy_give(&b, again1, 1, true, true);
	while (b.dhead[2] != ND_BUDDY_NIL)
		_nd_buddy_mark_clean(&b, b.dhead[2]);
	for (int pass = 0; pass < ORDER; pass++)
		_nd_buddy_merge_clean(&b);
	CHECK_EQ(b.nblocks, 1);

	/* spare tails: 1-page runs kept while 9-page runs (order 4 >=
	 * purge_order) come and go stay out of the big runs' tails; taken
	 * from them, each pinned an order-4 block until no big run fitted
	 * with 1/8 of the slot in use (fuzz_malloc: 16-64 MiB runs failed
	 * on 2 GiB nodes holding 120 MiB) */
	static uint32_t sm[PAGES / 8];
	unsigned nsm = 0;
	for (; nsm < PAGES / 8; nsm++) {
		uint32_t big = run(9, 4);
		CHECK(big != ND_BUDDY_NIL, "9 pages failed with %u 1-page runs in the slot", nsm);
		if (big == ND_BUDDY_NIL)
			break;
		sm[nsm] = run(1, 0);
		unrun(big, false);
	}
	check_ok("big and small runs");
	CHECK(_nd_buddy_largest(&b) >= ORDER - 1, "largest free order %d", _nd_buddy_largest(&b));
	/* a tail is still taken when nothing else fits: every page serves */
	uint32_t big = run(9, 4);
	unsigned npg = 0;
	while ((pg[npg] = run(1, 0)) != ND_BUDDY_NIL)
		npg++;
	CHECK_EQ(b.free_pages, 0);
	check_ok("tails taken last");
	unrun(big, false);
	for (unsigned t = 0; t < npg; t++)
		unrun(pg[t], false);
	for (unsigned t = 0; t < nsm; t++)
		unrun(sm[t], false);
	check_ok("big and small runs freed");
	CHECK_EQ(b.nblocks, 1);

	/* the checker sees a corrupted descriptor */
	a = run(4, 2);
	desc[a + 2].state = ND_PG_FREE;
	CHECK(_nd_buddy_check(&b, err, sizeof err) != 0);
	CHECK(strstr(err, "not a tail") != NULL, "%s", err);
	desc[a + 2].state = ND_PG_TAIL;
	check_ok("repaired");

	/* a hole (lazy slot): never handed out, walked over by the checker */
	_nd_buddy_init(&b, desc, ORDER, 4);
	for (unsigned t = 0; t < PAGES; t++)
		desc[t] = (_nd_pagedesc_t){ 0 };
	_nd_buddy_give(&b, 0, 48, false, true);
	desc[48].state = ND_PG_HOLE;
	desc[48].npages = PAGES - 48;
	check_ok("with a hole");
	CHECK(_nd_buddy_take(&b, 6, true, &d) == ND_BUDDY_NIL);
	CHECK(_nd_buddy_take(&b, 5, true, &d) == 0);

	/* runs of more than half a purge block (issue 11, a held-out stress:
	 * blocks of 640-800 KB, purge threshold 1 MiB): freed dirty, such a
	 * run's block is one dirty block again and serves the next one,
	 * without a fresh page. Before, dirty blocks stopped below
	 * purge_order, so every such run took a clean block and faulted it
	 * in. */
	_nd_buddy_init(&b, desc, ORDER, 8);
	purge_pages = 256;
	for (unsigned t = 0; t < PAGES; t++)
		desc[t] = (_nd_pagedesc_t){ 0 };
	_nd_buddy_push(&b, 0, ORDER, 0);
	uint32_t m192 = run_freed_whole(192);
	uint32_t m150 = _nd_buddy_take(&b, 8, true, &d);
	CHECK(m150 == m192 && d == 192, "150 pages at %u (dirty %llu), the freed run was at %u", m150,
	      (unsigned long long)d, m192);
	_nd_buddy_give_tail(&b, m150, 8, d, 150);
	_nd_buddy_mark_run(&b, m150, 150, 0);
	unrun(m150, true);
	check_ok("150 pages freed");
	/* a freed run that is not a power of two: its pieces met the clean
	 * tail given back when it was cut and stopped at the 1/4 rule (a
	 * 4-page dirty piece beside 16 and 32 clean pages); the block is
	 * made whole again when all of it is free */
	while (b.dhead[8] != ND_BUDDY_NIL)
		_nd_buddy_mark_clean(&b, b.dhead[8]);
	for (int pass = 0; pass < ORDER; pass++)
		_nd_buddy_merge_clean(&b);
	CHECK_EQ(b.nblocks, 1);
	uint32_t m196 = run_freed_whole(196);
	uint32_t big256 = _nd_buddy_take(&b, 8, false, &d);
	CHECK(big256 != m196 && d == 0, "a 256-page run at %u (dirty %llu) beside the dirty block at %u", big256,
	      (unsigned long long)d, m196);
	return CHECK_DONE();
}
