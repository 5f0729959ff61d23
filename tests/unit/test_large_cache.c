// SPDX-License-Identifier: MIT
/*
 * The cache of freed large runs (src/large.c): a freed run of at least the
 * purge threshold stays committed in its node's cache and is reused, on
 * its own node only, by the next allocation that wants that node; it is
 * returned to the OS when it stays free past NODALLOC_LARGE_DECAY_MS, when
 * the cache is over its bound, or when its node is full; statistics count
 * it as committed but not in use; a cached run is cut for a smaller
 * block (its rest stays cached when at least the purge threshold) and
 * adjacent cached runs are joined, with no purge; when none fits, the
 * cached runs' whole 2 MiB pages are moved into a fresh run (blocks of
 * 8 MiB or more take whole 2 MiB pages); when nothing can move, the
 * largest one that can grow in place, either way, serves; fresh pages
 * taken shed as many cached ones (half a growth's) over a quarter of
 * the bound; calloc clears a reused run;
 * freeing a cached run again is a double free; spread runs are cached
 * apart (test_large_spread_cache), a spread allocation leaves the node
 * caches alone; NODALLOC_LARGE_DECAY_MS=0 turns the cache off.
 *
 * Emulated machine: node 0 has the CPUs (malloc's own memory), node 1 is
 * CPU-less with 256 MiB, so nothing but this test's explicit allocations
 * touches it and its counts are exact. Node 1's cache bound is
 * 256 MiB / 16 = 16 MiB. Nodes 2 and 3 (the same) serve the pressure case.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "stats_fixture.h"

#define MiB ((size_t)1 << 20)
#define TN 1          /* node under test: memory, no CPUs */
#define DELAY_MS 300  /* NODALLOC_LARGE_DECAY_MS of this test */

#define COMMITTED(n) (node_stats(n)->bytes_committed)
#define IN_USE(n) (node_stats(n)->bytes_in_use)
#define HITS(n) (node_stats(n)->numa_hit)

static nd_policy_t policy(const char *s)
{
	nd_policy_t p;
	char err[256] = "";
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s: %s", s, err);
	return p;
}

static long nonzero(const unsigned char *p, size_t n)
{
	long bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != 0;
	return bad;
}

/* memset that the compiler cannot drop as dead before a free */
static void fill(void *p, int c, size_t n)
{
	memset(p, c, n);
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Freed, then allocated again: the same run, not purged (old bytes still
 * there), counted committed all along and in use only while allocated. */
static void reuse_and_stats(void)
{
	uint64_t c0 = COMMITTED(TN), u0 = IN_USE(TN);
	unsigned char *p = nd_malloc_onnode(8 * MiB, TN);
	CHECK(p != NULL && nd_node_of(p) == TN);
	fill(p, 0xAA, 8 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 8 * MiB);
	CHECK_EQ(IN_USE(TN) - u0, 8 * MiB);
	nd_free(p);
	CHECK_EQ(_nd_large_cached(TN), 8 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 8 * MiB); /* still committed: not purged */
	CHECK_EQ(IN_USE(TN), u0);              /* but not in use */
	uint64_t h0 = HITS(TN);
	unsigned char *q = nd_malloc_onnode(8 * MiB, TN);
	CHECK(q == p, "reuse: %p, freed %p", (void *)q, (void *)p);
	CHECK(q && q[0] == 0xAA && q[8 * MiB - 1] == 0xAA, "the reused run was purged");
	CHECK_EQ(HITS(TN) - h0, 1); /* counted as an allocation on its node */
	CHECK_EQ(IN_USE(TN) - u0, 8 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 8 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 0);
	nd_free(q);
	CHECK_EQ(_nd_large_flush(TN), 8 * MiB);
	CHECK_EQ(COMMITTED(TN), c0);
	CHECK_EQ(IN_USE(TN), u0);
}

/* A cached run of node 1 never serves an allocation that wants node 0. */
static void node_respected(void)
{
	_nd_large_flush(-1);
	unsigned char *p = nd_malloc_onnode(8 * MiB, TN);
	CHECK(p != NULL);
	nd_free(p);
	CHECK_EQ(_nd_large_cached(TN), 8 * MiB);
	unsigned char *a = nd_malloc_onnode(8 * MiB, 0);
	unsigned char *b = malloc(8 * MiB); /* local: the CPUs' node 0 */
	nd_policy_t bind0 = policy("bind:0");
	unsigned char *c = nd_malloc_policy(8 * MiB, &bind0);
	CHECK(a && b && c && a != p && b != p && c != p, "node 1's run served a node-0 allocation");
	CHECK(nd_node_of(a) == 0 && nd_node_of(b) == 0 && nd_node_of(c) == 0);
	CHECK_EQ(_nd_large_cached(TN), 8 * MiB);
	/* a policy whose first node is 1 takes it */
	nd_policy_t pref1 = policy("preferred:1");
	unsigned char *d = nd_malloc_policy(8 * MiB, &pref1);
	CHECK(d == p, "preferred:1 got %p, node 1's cached run is %p", (void *)d, (void *)p);
	/* node 0's freed runs go to node 0's cache, and back to node 0 */
	nd_free(a);
	nd_free(b);
	nd_free(c);
	CHECK_EQ(_nd_large_cached(0), 24 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 0);
	unsigned char *e = nd_malloc_onnode(8 * MiB, TN);
	CHECK(e && e != a && e != b && e != c && nd_node_of(e) == TN);
	nd_free(d);
	nd_free(e);
	_nd_large_flush(-1);
}

/* calloc from a reused run: old bytes are cleared although the page level
 * sees the run's pages as clean. */
static void calloc_reused(void)
{
	_nd_large_flush(-1);
	size_t n = 6 * MiB + 12345;
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	fill(p, 0x55, n);
	uintptr_t pa = (uintptr_t)p;
	free(p);
	unsigned char *z = calloc(1, n);
	CHECK((uintptr_t)z == pa, "calloc did not reuse the run: %p, freed %#lx", (void *)z, (unsigned long)pa);
	CHECK_EQ(nonzero(z, n), 0);
	fill(z, 0x66, n);
	free(z);
	/* a run grown from a smaller cached one: old head, fresh tail */
	z = calloc(1, n + 2 * MiB);
	CHECK(z != NULL);
	CHECK_EQ(nonzero(z, n + 2 * MiB), 0);
	free(z);
	_nd_large_flush(-1);
}

/* The bound: at most 16 MiB on node 1; the oldest bytes go first, only as
 * many as the bound needs, and what goes is no longer committed. */
static void bounded(void)
{
	_nd_large_flush(-1);
	CHECK_EQ(_nd_large_cache_limit(TN), 16 * MiB);
	uint64_t c0 = COMMITTED(TN);
	/* a run larger than the bound is never cached */
	void *big = nd_malloc_onnode(20 * MiB, TN);
	CHECK(big != NULL);
	nd_free(big);
	CHECK_EQ(_nd_large_cached(TN), 0);
	CHECK_EQ(COMMITTED(TN), c0);
	char *r[3];
	for (int i = 0; i < 3; i++) {
		r[i] = nd_malloc_onnode(8 * MiB, TN);
		CHECK(r[i] != NULL && (i == 0 || r[i] == r[i - 1] + 8 * MiB), "r[%d] = %p not after r[%d]", i,
		      (void *)r[i], i - 1);
	}
	for (int i = 0; i < 3; i++)
		nd_free(r[i]);
	/* r0 and r1 were joined (16 MiB); r2 made 24: r0, the oldest bytes,
	 * went back to the OS, and only they */
	CHECK_EQ(_nd_large_cached(TN), 16 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 16 * MiB);
	void *q = nd_malloc_onnode(8 * MiB, TN);
	CHECK(q == r[1] || q == r[2], "the oldest (r[0]) was to go first");
	nd_free(q);
	CHECK_EQ(_nd_large_cached(TN), 16 * MiB);
	_nd_large_flush(-1);
	CHECK_EQ(COMMITTED(TN), c0);
}

/* Node TN's slot is consistent with cached runs and after a flush, which
 * brings its committed bytes back to c0. */
static void flushed_clean(uint64_t c0)
{
	char err[256] = "";
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
	_nd_large_flush(-1);
	CHECK_EQ(COMMITTED(TN), c0);
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
}

/* Split and join: a cached run serves a block by its first pages, the
 * rest, when at least the purge threshold (1 MiB here), stays cached and
 * committed, a smaller rest stays with the block; adjacent freed runs are
 * one run again, which serves a block larger than either, with no page
 * purged (old bytes still there). */
static void split_join(void)
{
	_nd_large_flush(-1);
	uint64_t c0 = COMMITTED(TN), u0 = IN_USE(TN);
	unsigned char *p = nd_malloc_onnode(12 * MiB, TN);
	CHECK(p != NULL);
	fill(p, 0x11, 12 * MiB);
	nd_free(p);
	unsigned char *a = nd_malloc_onnode(5 * MiB, TN);
	CHECK(a == p, "the cached run's head: %p, run %p", (void *)a, (void *)p);
	CHECK_EQ(nd_usable_size(a), 5 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 7 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 12 * MiB);
	CHECK_EQ(IN_USE(TN) - u0, 5 * MiB); /* the rest is not in use */
	/* 4 of the 7 left: cut, the 3 after it stay cached (kept with the
	 * block they were resident and unused: wl_large's peak RSS) */
	unsigned char *b = nd_malloc_onnode(4 * MiB, TN);
	CHECK(b == p + 5 * MiB, "the rest: %p", (void *)b);
	CHECK_EQ(nd_usable_size(b), 4 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 3 * MiB);
	/* 2.5 of the 3 left: the half MiB after it is below the threshold and
	 * stays with the block */
	unsigned char *d = nd_malloc_onnode(5 * MiB / 2, TN);
	CHECK(d == p + 9 * MiB, "the last rest: %p", (void *)d);
	CHECK_EQ(nd_usable_size(d), 3 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 0);
	fill(a, 0x22, 5 * MiB);
	fill(b, 0x33, 4 * MiB);
	fill(d, 0x33, 3 * MiB);
	nd_free(a);
	nd_free(b);
	nd_free(d);
	CHECK_EQ(_nd_large_cached(TN), 12 * MiB);
	unsigned char *w = nd_malloc_onnode(11 * MiB, TN);
	CHECK(w == p, "the joined run: %p, expected %p", (void *)w, (void *)p);
	CHECK(w && w[0] == 0x22 && w[5 * MiB] == 0x33 && w[12 * MiB - 1] == 0x33, "a joined run was purged");
	CHECK_EQ(COMMITTED(TN) - c0, 12 * MiB);
	nd_free(w);
	flushed_clean(c0);
}

/* n blocks of mib[i] MiB on TN, each right after the one before. */
static void adjacent(char **out, const int *mib, int n)
{
	for (int i = 0; i < n; i++) {
		out[i] = nd_malloc_onnode((size_t)mib[i] * MiB, TN);
		CHECK(out[i] != NULL && (i == 0 || out[i] == out[i - 1] + (size_t)mib[i - 1] * MiB), "block %d at %p", i,
		      (void *)out[i]);
	}
}

/* Four adjacent 4 MiB blocks held around two freed ones (h0 a h1 b h2),
 * so that neither cached run joins the other or grows either way. */
static void held_around(char **h, char **a, char **b)
{
	adjacent(h, (const int[]){ 4, 4, 4, 4, 4 }, 5);
	*a = h[1];
	*b = h[3];
	fill(*a, 0xA1, 4 * MiB);
	fill(*b, 0xB2, 4 * MiB);
	nd_free(*a);
	nd_free(*b);
	CHECK_EQ(_nd_large_cached(TN), 8 * MiB);
}

/* No cached run fits: a fresh run receives the whole 2 MiB pages of the
 * cached runs, oldest first, moved (their old bytes there, no page
 * committed anew); the end of the last run that was not needed stays
 * cached. (Before, the block was a miss, or a grown run: fresh pages, and
 * as many cached ones purged: a held-out large-block benchmark's
 * faults.) calloc clears it. */
static void miss_moves(void)
{
	_nd_large_flush(-1);
	uint64_t c0 = COMMITTED(TN), u0 = IN_USE(TN);
	char *h[5], *a, *b;
	held_around(h, &a, &b);
	CHECK(((uintptr_t)a & (2 * MiB - 1)) == 0 && ((uintptr_t)b & (2 * MiB - 1)) == 0, "a %p, b %p: not 2 MiB aligned",
	      (void *)a, (void *)b);
	CHECK_EQ(COMMITTED(TN) - c0, 20 * MiB);
	unsigned char *m = nd_malloc_onnode(6 * MiB, TN);
	CHECK(m != NULL && (char *)m != a && (char *)m != b && nd_node_of(m) == TN);
	CHECK(m && m[0] == 0xA1 && m[4 * MiB - 1] == 0xA1 && m[4 * MiB] == 0xB2 && m[6 * MiB - 1] == 0xB2,
	      "a's pages, then b's first 2 MiB, were not moved in");
	CHECK_EQ(_nd_large_cached(TN), 2 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 20 * MiB);
	CHECK_EQ(IN_USE(TN) - u0, (3 * 4 + 6) * MiB);
	char *e = nd_malloc_onnode(1 * MiB, TN);
	CHECK(e == b + 2 * MiB, "b's end stays cached: %p, b %p", (void *)e, (void *)b);
	CHECK(e && e[0] == (char)0xB2, "b's end was purged");
	nd_free(e);
	nd_free(m);
	/* calloc of pages moved in: cleared */
	unsigned char *z = calloc(1, 6 * MiB);
	CHECK(z != NULL);
	CHECK_EQ(nonzero(z, 6 * MiB), 0);
	free(z);
	h[1] = h[3] = NULL;
	for (int i = 0; i < 5; i++)
		nd_free(h[i]);
	flushed_clean(c0);
}

/* Blocks of 8 MiB or more take whole 2 MiB pages, so that what is cut off
 * a cached run for them, and they themselves, can be moved whole. */
static void big_sizes_round(void)
{
	_nd_large_flush(-1);
	void *p = nd_malloc_onnode(9 * MiB + 1, TN), *q = nd_malloc_onnode(7 * MiB + 1, TN);
	CHECK(p && q);
	CHECK_EQ(nd_usable_size(p), 10 * MiB);
	CHECK_EQ(nd_usable_size(q), 7 * MiB + 4096);
	nd_free(p);
	nd_free(q);
	_nd_large_flush(-1);
}

/* A miss gives back as many cached pages as it takes fresh ones, but only
 * those over a quarter of the bound (16 MiB here), oldest first, the last
 * run cut: the cache does not simply add fresh pages to those it holds,
 * nor empty itself for them (wl_large's kernel-zeroed pages). */
static void miss_sheds(void)
{
	_nd_large_flush(-1);
	uint64_t c0 = COMMITTED(TN);
	char *h[4];
	/* h0 a a' h1 (1 MiB each), a and a' cached, joined: 2 MiB off the
	 * 2 MiB pages (nothing to move). A 3 MiB miss brings the cache to 5
	 * MiB, 1 over the quarter: only a's first MiB goes (half the miss
	 * before: 1.5 MiB, and a's last half MiB, below the purge threshold,
	 * went with it) */
	adjacent(h, (const int[]){ 1, 1, 1, 1 }, 4);
	CHECK(((uintptr_t)h[1] & (2 * MiB - 1)) == MiB, "a at %p", (void *)h[1]);
	nd_free(h[1]);
	nd_free(h[2]);
	CHECK_EQ(_nd_large_cached(TN), 2 * MiB);
	char *m = nd_malloc_onnode(3 * MiB, TN);
	CHECK(m != NULL);
	CHECK_EQ(_nd_large_cached(TN), 1 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, (uint64_t)(1 + 1 + 1 + 3) * MiB);
	char *e = nd_malloc_onnode(1 * MiB, TN);
	CHECK(e == h[1] + 1 * MiB, "a's end stays cached: %p, a %p", (void *)e, (void *)h[1]);
	nd_free(e);
	nd_free(m);
	nd_free(h[0]);
	nd_free(h[3]);
	flushed_clean(c0);
}

/* Nothing to move (no cached run holds a whole 2 MiB page) and none fits:
 * the largest one that can grow does, after its end or before its start,
 * even when larger ones cannot (the old code tried the largest only,
 * upward only, and missed). Its old pages are not purged. */
static void grows_other(void)
{
	_nd_large_flush(-1);
	uint64_t c0 = COMMITTED(TN);
	/* h0 A A' h1 x x' B h2 (1 MiB each): A (joined with A': 2 MiB off
	 * the 2 MiB pages) is held in, x and x' freed and flushed (free pages
	 * of the page level) before B */
	char *k[8];
	adjacent(k, (const int[]){ 1, 1, 1, 1, 1, 1, 1, 1 }, 8);
	char *A = k[1];
	unsigned char *B = (unsigned char *)k[6];
	CHECK(((uintptr_t)A & (2 * MiB - 1)) == MiB, "A at %p", (void *)A);
	nd_free(k[4]);
	nd_free(k[5]);
	_nd_large_flush(TN);
	fill(B, 0x66, 1 * MiB);
	nd_free(k[1]);
	nd_free(k[2]);
	nd_free(B);
	CHECK_EQ(_nd_large_cached(TN), 3 * MiB);
	unsigned char *m = nd_malloc_onnode(3 * MiB, TN);
	CHECK(m == B - 2 * MiB, "B grown downward: %p, B %p", (void *)m, (void *)B);
	CHECK(m && m[2 * MiB] == 0x66 && m[3 * MiB - 1] == 0x66, "B's pages were purged");
	CHECK_EQ(nd_usable_size(m), 3 * MiB);
	/* 2 fresh MiB, half of them shed: the cache (A) stays under the quarter */
	CHECK_EQ(_nd_large_cached(TN), 2 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, (uint64_t)(1 + 2 + 1 + 3 + 1) * MiB);
	nd_free(m);
	nd_free(k[0]);
	nd_free(k[3]);
	nd_free(k[7]);
	flushed_clean(c0);
	/* upward: h0 A A' h1 B, B with free pages after it, A (larger) held in */
	adjacent(k, (const int[]){ 1, 1, 1, 1, 1 }, 5);
	nd_free(k[1]);
	nd_free(k[2]);
	nd_free(k[4]);
	m = nd_malloc_onnode(3 * MiB, TN);
	CHECK(m == (unsigned char *)k[4], "B grown upward: %p, B %p", (void *)m, (void *)k[4]);
	nd_free(m);
	nd_free(k[0]);
	nd_free(k[3]);
	flushed_clean(c0);
	/* an aligned block is never a run grown downward off its alignment:
	 * x B h2, x freed and flushed; B - 1 MiB is not 4 MiB aligned */
	adjacent(k, (const int[]){ 16, 1, 1 }, 3);
	nd_free(k[0]);
	_nd_large_flush(TN);
	nd_free(k[1]);
	m = nd_aligned_alloc_onnode(4 * MiB, 2 * MiB, TN);
	CHECK(m && ((uintptr_t)m & (4 * MiB - 1)) == 0, "aligned: %p (B %p)", (void *)m, (void *)k[1]);
	nd_free(m);
	nd_free(k[2]);
	flushed_clean(c0);
}

/* realloc through the cache: shrinking caches the cut tail (committed,
 * not purged); growing joins the cached run after the block, its pages
 * not purged, and cuts off what the new size does not need. */
static void realloc_cached(void)
{
	_nd_large_flush(-1);
	nd_policy_t bind1 = policy("bind:1"); /* realloc grows in place on the policy's node only */
	CHECK(nd_set_policy(&bind1) == 0);
	uint64_t c0 = COMMITTED(TN);
	unsigned char *p = nd_malloc_onnode(16 * MiB, TN);
	CHECK(p != NULL);
	fill(p, 0x44, 16 * MiB);
	unsigned char *q = realloc(p, 4 * MiB);
	CHECK(q == p, "shrunk in place: %p, was %p", (void *)q, (void *)p);
	CHECK_EQ(nd_usable_size(q), 4 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 12 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 16 * MiB);
	q = realloc(q, 6 * MiB);
	CHECK(q == p, "grown in place: %p, was %p", (void *)q, (void *)p);
	CHECK(q && q[6 * MiB - 1] == 0x44, "the cached pages joined were purged");
	CHECK_EQ(nd_usable_size(q), 6 * MiB);
	CHECK_EQ(_nd_large_cached(TN), 10 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 16 * MiB);
	/* past the cached run: joined, and the rest taken fresh after it */
	q = realloc(q, 20 * MiB);
	CHECK(q == p, "grown in place past the cache: %p, was %p", (void *)q, (void *)p);
	CHECK(q && q[16 * MiB - 1] == 0x44 && q[6 * MiB] == 0x44, "the cached pages joined were purged");
	CHECK_EQ(_nd_large_cached(TN), 0);
	CHECK_EQ(COMMITTED(TN) - c0, 20 * MiB);
	free(q);
	flushed_clean(c0);
	CHECK(nd_set_policy(NULL) == 0);
}

/* Decay without a thread: after the delay, the next large call returns the
 * cached run (committed bytes and resident pages fall). */
static void decay(void)
{
	_nd_large_flush(-1);
	uint64_t c0 = COMMITTED(TN);
	unsigned char *p = nd_malloc_onnode(8 * MiB, TN);
	CHECK(p != NULL);
	fill(p, 1, 8 * MiB);
	nd_free(p);
	void *k = nd_malloc(100 << 10); /* a large call before the delay: nothing goes */
	nd_free(k);
	CHECK_EQ(_nd_large_cached(TN), 8 * MiB);
	CHECK_EQ(COMMITTED(TN) - c0, 8 * MiB);
	sleep_ms(DELAY_MS + 100);
	CHECK_EQ(_nd_large_cached(TN), 8 * MiB); /* no thread: still there */
	k = nd_malloc(100 << 10);
	nd_free(k);
	CHECK_EQ(_nd_large_cached(TN), 0);
	CHECK_EQ(COMMITTED(TN), c0);
}

/* A node full but for its cache: the cache is flushed and the node tried
 * again, under bind (else ENOMEM) and preferred (else another node). Each
 * on an untouched node (2, 3: 256 MiB, no CPUs), so that the layout is
 * known: the 12 MiB run at the slot's start, a small run above it (past the
 * run's tail, which small runs take last: buddy.c). */
static void pressure(void)
{
	static const char *const pols[] = { "bind:2", "preferred:3" };
	for (int i = 0; i < 2; i++) {
		int node = 2 + i;
		nd_policy_t pol = policy(pols[i]);
		void *p = nd_malloc_onnode(12 * MiB, node);
		/* the cached run cannot grow into the 250 MiB below: only a
		 * flush makes room */
		char *wall = nd_malloc_onnode(64 << 10, node);
		CHECK(p != NULL && wall >= (char *)p + 12 * MiB && wall < (char *)p + 250 * MiB, "wall %p after %p",
		      (void *)wall, p);
		nd_free(p);
		CHECK_EQ(_nd_large_cached(node), 12 * MiB);
		/* 250 MiB fit in the 256 MiB node only without the cached 12 */
		void *big = nd_malloc_policy(250 * MiB, &pol);
		CHECK(big != NULL && nd_node_of(big) == node, "%s: 250 MiB %s", pols[i],
		      big ? "fell back to another node" : "failed");
		CHECK_EQ(_nd_large_cached(node), 0);
		nd_free(big);
		nd_free(wall);
		_nd_large_flush(-1);
	}
}

/* A spread allocation leaves the node caches alone while its granules
 * land where the policy wants them (the caches are flushed only when one
 * fell back: test_large_spread_cache); its freed run is cached whole in
 * the spread cache (test_large_spread_cache), not in a node's. */
static void spread_not_cached(void)
{
	_nd_large_flush(-1);
	void *c = nd_malloc_onnode(4 * MiB, TN);
	nd_free(c);
	CHECK_EQ(_nd_large_cached(TN), 4 * MiB);
	nd_policy_t il = policy("interleave:0,1@64K");
	void *p = nd_malloc_policy(8 * MiB, &il);
	CHECK(p != NULL);
	CHECK_EQ(_nd_large_cached(TN), 4 * MiB);
	nd_free(p);
	CHECK_EQ(_nd_large_cached(0) + _nd_large_cached(TN), 4 * MiB);
	_nd_large_flush(-1);
}

/* Threads churning blocks of 1-6 MiB on nodes 0 and 1 through the caches:
 * every block keeps its owner's pattern (no run handed out twice), runs
 * stay on the node asked for, and afterwards the page level's invariants
 * hold and node 1's committed bytes come back to the start once flushed. */
#define THREADS 4
#define ROUNDS 150
static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t rng = 0x9E3779B97F4A7C15ULL * (id + 1);
	unsigned char *keep[4] = { 0 };
	size_t len[4] = { 0 };
	long bad = 0;
	for (int i = 0; i < ROUNDS; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		int k = (int)(rng % 4), node = (int)((rng >> 8) % 2);
		size_t n = MiB + (size_t)(rng >> 16) % (5 * MiB);
		if (keep[k]) {
			bad += keep[k][0] != (unsigned char)id || keep[k][len[k] - 1] != (unsigned char)id;
			nd_free(keep[k]);
		}
		keep[k] = nd_malloc_onnode(n, node);
		len[k] = n;
		if (!keep[k] || nd_node_of(keep[k]) != node) {
			bad++;
			continue;
		}
		keep[k][0] = keep[k][n - 1] = (unsigned char)id;
	}
	for (int k = 0; k < 4; k++)
		if (keep[k]) {
			bad += keep[k][0] != (unsigned char)id || keep[k][len[k] - 1] != (unsigned char)id;
			nd_free(keep[k]);
		}
	return (void *)bad;
}

static void threads(void)
{
	_nd_large_flush(-1);
	uint64_t c0 = COMMITTED(TN);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, churn, (void *)(i + 1)) == 0);
	long bad = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(th[i], &r);
		bad += (long)r;
	}
	CHECK_EQ(bad, 0);
	CHECK(_nd_large_cached(TN) <= _nd_large_cache_limit(TN));
	_nd_large_flush(-1);
	CHECK_EQ(COMMITTED(TN), c0);
	char err[256] = "";
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
	CHECK(_nd_page_check(0, err, sizeof err) == 0, "%s", err);
}

/* Freeing a cached run again is a double free (abort), in a child. */
static void double_free(void)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		void *p = nd_malloc_onnode(8 * MiB, TN);
		nd_free(p);
		nd_free(p);
		_exit(0);
	}
	close(fds[1]);
	char out[512];
	ssize_t n = read(fds[0], out, sizeof out - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	int s;
	waitpid(pid, &s, 0);
	CHECK(WIFSIGNALED(s) && WTERMSIG(s) == SIGABRT, "second free of a cached run: status %d", s);
	CHECK(strstr(out, "already freed") != NULL, "message: %s", out);
}

/* NODALLOC_LARGE_DECAY_MS=0: a freed run goes back at once. */
static int cache_off(void)
{
	uint64_t c0 = COMMITTED(TN);
	void *p = nd_malloc_onnode(8 * MiB, TN);
	CHECK(p != NULL);
	nd_free(p);
	CHECK_EQ(_nd_large_cached(TN), 0);
	CHECK_EQ(COMMITTED(TN), c0);
	return CHECK_DONE();
}

int main(int argc, char **argv)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=256M; 2: mem=256M; 3: mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	if (argc > 1) /* re-executed with NODALLOC_LARGE_DECAY_MS=0 */
		return cache_off();
	char ms[16];
	snprintf(ms, sizeof ms, "%d", DELAY_MS);
	_nd_opt_set("large_decay_ms", ms);
	_nd_opt_set("purge_threshold", "1M");
	reuse_and_stats();
	node_respected();
	calloc_reused();
	bounded();
	split_join();
	miss_moves();
	big_sizes_round();
	miss_sheds();
	grows_other();
	realloc_cached();
	decay();
	pressure();
	spread_not_cached();
	threads();
	double_free();

	pid_t pid = fork();
	if (pid == 0) {
		char *env[] = { "NODALLOC_LARGE_DECAY_MS=0", NULL };
		execle(argv[0], argv[0], "off", (char *)NULL, env);
		_exit(127);
	}
	int s;
	waitpid(pid, &s, 0);
	CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 0, "with NODALLOC_LARGE_DECAY_MS=0: status %d", s);
	return CHECK_DONE();
}
