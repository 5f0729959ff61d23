// SPDX-License-Identifier: MIT
/*
 * The cache of freed spread runs (src/large.c, task spread64): a block
 * above one interleave granule is a spread run of the mixed slot; freed,
 * it stays placed, bound and committed, and the next spread allocation
 * whose granules a fresh run would put on the same nodes (same length,
 * same layout from the thread's spread cursor) takes it as it is: no
 * placement, no purge, no page fault. A run laid out otherwise is not
 * taken. The cache gives its memory back after NODALLOC_LARGE_DECAY_MS,
 * on malloc_trim, and when a node it holds pages of is full. A churn of
 * spread blocks through the cache keeps every node within its share. A
 * run placed again counts once in the statistics.
 *
 * Emulated machine (the placement by the cursor, not the kernel's by
 * address): node 0 has the CPUs, node 1 is CPU-less with 256 MiB.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <time.h>

#include "check.h"
#include "internal.h"
#include "stats_fixture.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define DELAY_MS 300
#define NBLK 128


static nd_policy_t policy(const char *s)
{
	nd_policy_t p;
	char err[256] = "";
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s: %s", s, err);
	return p;
}

static uint64_t cached_runs(void)
{
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	return runs;
}

static uint64_t cached_bytes(void)
{
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	return cached;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* The pages of [p, p + n) on node (per the page level), by 4 KiB page. */
static size_t pages_on(const char *p, size_t n, int node)
{
	size_t c = 0;
	for (size_t o = 0; o < n; o += ND_PAGE_SIZE)
		c += nd_node_of(p + o) == node;
	return c;
}

/* A freed 64 KiB interleaved block is reused by the next one as it is:
 * its data still there (no purge), the nodes' committed bytes unchanged
 * (no new placement), in use counted out and in again, the reuse counted
 * as interleave hits. Fails without the cache: the freed run is purged
 * and its charges go back (committed drops by 64 KiB). */
static void reused_as_is(void)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy("interleave:0,1");
	char *p = nd_malloc_policy(64 * KiB, &il);
	CHECK(p != NULL);
	memset(p, 0x5a, 64 * KiB);
	CHECK_EQ(pages_on(p, 64 * KiB, 0), 8);
	CHECK_EQ(pages_on(p, 64 * KiB, 1), 8);
	uint64_t c1 = node_stats(1)->bytes_committed, u1 = node_stats(1)->bytes_in_use;
	nd_free(p);
	CHECK_EQ(cached_runs(), 1);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	CHECK_EQ(node_stats(1)->bytes_in_use, u1 - 32 * KiB);
	uint64_t hits = node_stats(1)->interleave_hit;
	/* 16 whole granules: the cursor comes back to the same phase */
	char *q = nd_malloc_policy(64 * KiB, &il);
	CHECK(q == p, "reused: %p, freed %p", (void *)q, (void *)p);
	CHECK(q && q[0] == 0x5a && q[64 * KiB - 1] == 0x5a, "the reused run kept its pages (no purge)");
	CHECK_EQ(cached_runs(), 0);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	CHECK_EQ(node_stats(1)->bytes_in_use, u1);
	CHECK_EQ(node_stats(1)->interleave_hit - hits, 8);
	/* calloc of a reused run clears it */
	nd_free(q);
	il = policy("interleave:0,1");
	nd_set_policy(&il);
	unsigned char *z = calloc(1, 64 * KiB);
	CHECK(z == (unsigned char *)p, "calloc reused the run");
	long bad = 0;
	for (size_t i = 0; z && i < 64 * KiB; i++)
		bad += z[i] != 0;
	CHECK_EQ(bad, 0);
	free(z);
	nd_policy_t def = { .mode = ND_POLICY_DEFAULT };
	nd_set_policy(&def);
	_nd_large_flush(-1);
}

/* A cached run is taken only where its layout is the one a fresh run
 * would get: 100 KiB at @64K is 16 + 9 pages, the cursor moves by one
 * granule, so consecutive blocks start on alternate nodes. */
static void layout_kept(void)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy("interleave:0,1@64K");
	char *a = nd_malloc_policy(100 * KiB, &il);
	CHECK(a != NULL);
	int na = nd_node_of(a);
	nd_free(a);
	char *b = nd_malloc_policy(100 * KiB, &il); /* the other phase: fresh */
	CHECK(b != NULL && b != a && nd_node_of(b) == 1 - na, "b %p on %d, a %p on %d", (void *)b, b ? nd_node_of(b) : -1,
	      (void *)a, na);
	char *c = nd_malloc_policy(100 * KiB, &il); /* a's phase: a's run */
	CHECK(c == a && nd_node_of(c) == na, "c %p, a %p", (void *)c, (void *)a);
	nd_free(b);
	nd_free(c);
	_nd_large_flush(-1);
	CHECK_EQ(cached_runs(), 0);
}

/* A cached run of smaller granules is not taken for larger ones whose
 * granule starts it has on the right nodes: weighted 1:2 at 16 KiB puts
 * page 16k on the node 64 KiB granule k wants (4 = 1 mod 3). Before
 * spread65 only granule starts were compared: vm_policy's 3-node @2M
 * case at 38735f3 got a @32K run (64 = 1 mod 3), 8 pages per node. */
static void granule_kept(void)
{
	_nd_large_flush(-1);
	nd_policy_t small = policy("weighted:0=1,1=2@16K"), big = policy("weighted:0=1,1=2@64K");
	size_t n = 768 * KiB; /* whole rounds of both */
	char *a = nd_malloc_policy(n, &small);
	CHECK(a != NULL);
	nd_free(a);
	CHECK_EQ(cached_runs(), 1);
	char *b = nd_malloc_policy(n, &big);
	CHECK(b != NULL);
	size_t bad = 0;
	for (size_t o = 0; b && o < n; o += ND_PAGE_SIZE)
		bad += nd_node_of(b + o) != nd_node_of(b + (o & ~(64 * KiB - 1)));
	CHECK_EQ(bad, 0);
	nd_free(b);
	_nd_large_flush(-1);
}

/* Nor one of the same nodes page by page but not advised huge: weighted
 * 2:2 at 1 MiB is interleave at 2 MiB's layout, and a fresh @2M run asks
 * for huge pages (huge_spread). A @2M run is reused by @2M. */
static void huge_kept(void)
{
	_nd_large_flush(-1);
	nd_policy_t w = policy("weighted:0=2,1=2@1M"), il = policy("interleave:0,1@2M");
	size_t n = 4 * MiB; /* a list's share of the bound */
	_nd_policy_reset_spread_cursor(); /* a: granules 0,0,1,1 from index 0 */
	char *a = nd_malloc_policy(n, &w);
	CHECK(a != NULL);
	memset(a, 0x5a, n);
	nd_free(a);
	CHECK_EQ(cached_runs(), 1);
	char *b = nd_malloc_policy(n, &il); /* fresh: a purged (or not there) */
	CHECK(b && b[0] == 0 && b[n - 1] == 0, "a's run taken");
	_nd_large_flush(-1);
	memset(b, 0x5b, n);
	nd_free(b);
	char *c = nd_malloc_policy(n, &il);
	CHECK(c == b && c[0] == 0x5b, "c %p, b %p", (void *)c, (void *)b);
	nd_free(c);
	_nd_large_flush(-1);
}

/* The cache gives its memory back: after the decay delay (at the next
 * large call), at malloc_trim, and when a node it holds pages of is
 * full. */
static void gives_back(void)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy("interleave:0,1");
	uint64_t c1 = node_stats(1)->bytes_committed;
	void *p = nd_malloc_policy(256 * KiB, &il);
	memset(p, 1, 256 * KiB);
	nd_free(p);
	CHECK_EQ(node_stats(1)->bytes_committed, c1 + 128 * KiB);
	sleep_ms(DELAY_MS + 100);
	free(malloc(2 * MiB)); /* any large call checks the expiry */
	CHECK_EQ(cached_bytes() - _nd_large_cached(0), 0);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	_nd_large_flush(-1); /* the 2 MiB block's run, cached on node 0 */

	p = nd_malloc_policy(256 * KiB, &il);
	memset(p, 1, 256 * KiB);
	nd_free(p);
	CHECK_EQ(cached_runs(), 1);
	malloc_trim(0);
	CHECK_EQ(cached_runs(), 0);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);

	/* node 1 full: the spread runs of 1 MiB cached (their list's share of
	 * the bound: 4 MiB) hold 2 MiB of it; the largest block node 1 takes
	 * before and after must be the same */
	size_t most = 0;
	for (size_t sz = 256 * MiB; sz >= 16 * MiB && !most; sz -= 4 * MiB) {
		void *q = nd_malloc_onnode(sz, 1);
		if (q && nd_node_of(q) == 1)
			most = sz;
		nd_free(q);
	}
	_nd_large_flush(-1);
	CHECK(most >= 200 * MiB, "node 1 took %zu MiB", most / MiB);
	void *blk[32];
	for (int i = 0; i < 32; i++) {
		blk[i] = nd_malloc_policy(MiB, &il);
		CHECK(blk[i] != NULL);
		memset(blk[i], 1, MiB);
	}
	for (int i = 0; i < 32; i++)
		nd_free(blk[i]);
	CHECK(cached_bytes() >= 4 * MiB, "cached %llu", (unsigned long long)cached_bytes());
	nd_policy_t bind1 = policy("bind:1");
	void *q = nd_malloc_policy(most, &bind1);
	CHECK(q != NULL && nd_node_of(q) == 1, "%zu MiB on node 1 with spread runs cached", most / MiB);
	CHECK(cached_bytes() - _nd_large_cached(0) - _nd_large_cached(1) == 0, "the spread cache gave way");
	nd_free(q);
	_nd_large_flush(-1);
}

/* A churn of spread blocks of many sizes, through the cache: at every
 * step the live blocks hold each node's share (by weight) to within one
 * granule per live block, and at least some blocks are reused (the
 * cache's point); the page level's invariants hold after. */
static void churn_shares(const char *spec, size_t gp, int w0, int w1)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy(spec);
	enum { LIVE = 6, ROUNDS = 400 };
	char *blk[LIVE] = { 0 };
	size_t len[LIVE] = { 0 };
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	long reused = 0, worst = 0;
	for (int i = 0; i < ROUNDS; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		int k = (int)(rng % LIVE);
		size_t n = (64 * KiB) << ((rng >> 8) % 4); /* 64 KiB - 512 KiB: above a 64K granule */
		n += ((rng >> 16) % 4) * gp;
		nd_free(blk[k]);
		uint64_t runs = cached_runs();
		blk[k] = nd_malloc_policy(n, &il);
		CHECK(blk[k] != NULL);
		reused += cached_runs() < runs; /* taken out of the cache */
		len[k] = nd_usable_size(blk[k]);
		size_t on[2] = { 0, 0 }, all = 0;
		for (int j = 0; j < LIVE; j++) {
			if (!blk[j])
				continue;
			on[0] += pages_on(blk[j], len[j], 0);
			on[1] += pages_on(blk[j], len[j], 1);
			all += len[j] / ND_PAGE_SIZE;
		}
		CHECK_EQ(on[0] + on[1], all);
		long d = (long)on[0] - (long)(all * (size_t)w0 / (size_t)(w0 + w1));
		d = d < 0 ? -d : d;
		worst = d > worst ? d : worst;
	}
	long bound = LIVE * (long)(gp / ND_PAGE_SIZE) * (w0 > w1 ? w0 : w1);
	CHECK(worst <= bound, "%s: node 0 %ld pages off its share (at most %ld)", spec, worst, bound);
	CHECK(reused >= ROUNDS / 10, "%s: %ld of %d blocks reused", spec, reused, ROUNDS);
	printf("%s: %ld of %d blocks from the cache, node 0 at most %ld pages off its share\n", spec, reused, ROUNDS,
	       worst);
	for (int j = 0; j < LIVE; j++)
		nd_free(blk[j]);
	_nd_large_flush(-1);
	char err[256] = "";
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
}

/* A freed 1 MiB interleaved block serves a 640 KiB one with its first
 * 640 KiB (same layout: whole rounds keep the cursor's phase), no fresh
 * placement: data kept, committed unchanged; its last 384 KiB stay
 * cached as a run of their own and serve a 384 KiB block the same way.
 * Fails without prefix reuse (task spread65): lengths differ, so the
 * 640 KiB block was placed fresh elsewhere. */
static void prefix_reused(void)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy("interleave:0,1");
	uint64_t u0 = node_stats(1)->bytes_in_use;
	char *p = nd_malloc_policy(MiB, &il);
	CHECK(p != NULL);
	memset(p, 0x5a, MiB);
	uint64_t c1 = node_stats(1)->bytes_committed;
	nd_free(p);
	CHECK_EQ(cached_runs(), 1);
	char *q = nd_malloc_policy(640 * KiB, &il);
	CHECK(q == p, "prefix reused: %p, freed %p", (void *)q, (void *)p);
	CHECK(q && q[0] == 0x5a && q[640 * KiB - 1] == 0x5a, "the prefix kept its pages (no purge)");
	CHECK_EQ(pages_on(q, 640 * KiB, 1), 80);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	CHECK_EQ(node_stats(1)->bytes_in_use, u0 + 320 * KiB);
	CHECK_EQ(cached_runs(), 1);
	CHECK_EQ(cached_bytes(), 384 * KiB);
	CHECK_EQ(nd_usable_size(q), 640 * KiB);
	char *r = nd_malloc_policy(384 * KiB, &il);
	CHECK(r == p + 640 * KiB, "the tail reused: %p, expected %p", (void *)r, (void *)(p + 640 * KiB));
	CHECK(r && r[0] == 0x5a && r[384 * KiB - 1] == 0x5a, "the tail kept its pages");
	CHECK_EQ(cached_runs(), 0);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	CHECK_EQ(node_stats(1)->bytes_in_use, u0 + 512 * KiB);
	nd_free(q);
	nd_free(r);
	_nd_large_flush(-1);
	CHECK_EQ(node_stats(1)->bytes_in_use, u0);
	char err[256] = "";
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
}

/* A cached run laid out from the other phase of the round serves a block
 * from its second granule on: 512 KiB at @64K over 2 nodes (8 granules)
 * freed after the cursor moved by an odd count (a 192 KiB block), then
 * 256 KiB wanted from the other node: its pages [64, 320) KiB, no fresh
 * placement (committed unchanged), data kept, each granule on the node
 * the fresh run would put it; the granule before (16 pages) and the rest
 * after stay cached. Fails without the fit at an offset (task spread66):
 * only the run's first pages were compared, the block placed fresh. */
static void phase_fit(void)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy("interleave:0,1@64K");
	char *x = nd_malloc_policy(512 * KiB, &il);
	char *z = nd_malloc_policy(192 * KiB, &il); /* 3 granules: the cursor's phase turns */
	CHECK(x != NULL && z != NULL);
	memset(x, 0x5a, 512 * KiB);
	int nx = nd_node_of(x);
	nd_free(x);
	uint64_t c0 = node_stats(0)->bytes_committed, c1 = node_stats(1)->bytes_committed;
	char *w = nd_malloc_policy(256 * KiB, &il);
	CHECK(w == x + 64 * KiB, "fit in the cached run: %p, expected %p", (void *)w, (void *)(x + 64 * KiB));
	CHECK(w && w[0] == 0x5a && w[256 * KiB - 1] == 0x5a, "the run kept its pages (no purge)");
	for (size_t k = 0; w && k < 4; k++)
		CHECK_EQ(nd_node_of(w + k * 64 * KiB), (int)((1 - nx + k) % 2));
	CHECK_EQ(node_stats(0)->bytes_committed, c0);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	CHECK_EQ(cached_runs(), 2);
	CHECK_EQ(cached_bytes(), 256 * KiB);
	nd_free(w);
	nd_free(z);
	_nd_large_flush(-1);
	char err[256] = "";
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
}

/* Two adjacent freed 256 KiB interleaved blocks are cached as one run of
 * 512 KiB, which then serves a 512 KiB block as it is (data kept,
 * committed unchanged). Fails without the join (task spread65): two runs
 * of 256 KiB cached, the 512 KiB block placed fresh. */
static void neighbours_joined(void)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy("interleave:0,1");
	char *a = nd_malloc_policy(256 * KiB, &il), *b = nd_malloc_policy(256 * KiB, &il);
	CHECK(a != NULL && b == a + 256 * KiB, "adjacent runs: %p, %p", (void *)a, (void *)b);
	memset(a, 0x5a, 256 * KiB);
	memset(b, 0xa5, 256 * KiB);
	uint64_t c1 = node_stats(1)->bytes_committed;
	nd_free(b);
	nd_free(a);
	CHECK_EQ(cached_runs(), 1);
	CHECK_EQ(cached_bytes(), 512 * KiB);
	char *q = nd_malloc_policy(512 * KiB, &il);
	CHECK(q == a, "joined run reused: %p, freed %p", (void *)q, (void *)a);
	CHECK(q && q[0] == 0x5a && q[512 * KiB - 1] == (char)0xa5, "the joined run kept its pages");
	CHECK_EQ(pages_on(q, 512 * KiB, 1), 64);
	CHECK_EQ(node_stats(1)->bytes_committed, c1);
	CHECK_EQ(cached_runs(), 0);
	nd_free(q);
	_nd_large_flush(-1);
	char err[256] = "";
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
}

typedef struct {
	uint64_t hit, miss, foreign, il, local, other;
} counts_t;

static counts_t counts(void)
{
	counts_t c = { 0 };
	for (int n = 0; n < 2; n++) {
		const nd_node_stats_t *s = node_stats(n);
		c.hit += s->numa_hit;
		c.miss += s->numa_miss;
		c.foreign += s->numa_foreign;
		c.il += s->interleave_hit;
		c.local += s->local_node;
		c.other += s->other_node;
	}
	return c;
}

/* A spread allocation whose fresh run fell back (a node short) while
 * cached runs held that node's pages gives the run back, flushes the
 * caches and places it again (spread_run): the first placement's
 * statistics go with it, the block counted once as the run it got. Node
 * 1 is filled with bound 4 MiB blocks, one freed (node 1's cache keeps
 * it, committed), then an 8 MiB block interleaved wants 4 MiB of node 1.
 * Fails before audit26: 2048 + 2048 granule counts, 1024 numa_miss and
 * numa_foreign for granules the block never had. */
static void counted_once(void)
{
	_nd_large_flush(-1);
	nd_policy_t bind1 = policy("bind:1"), il = policy("interleave:0,1");
	static char *blk[NBLK];
	int n = 0;
	while (n < NBLK && (blk[n] = nd_malloc_policy(4 * MiB, &bind1)) != NULL)
		n++;
	CHECK(n >= 32 && n < NBLK, "node 1 took %d blocks of 4 MiB", n);
	nd_free(blk[--n]); /* cached: node 1 keeps it committed */
	CHECK(_nd_large_cached(1) == 4 * MiB, "node 1 caches %zu", _nd_large_cached(1));
	counts_t a = counts();
	char *p = nd_malloc_policy(8 * MiB, &il);
	counts_t b = counts();
	CHECK(p != NULL);
	/* placed as the policy wants after the flush: every granule a hit */
	size_t on1 = 0;
	for (size_t o = 0; p && o < 8 * MiB; o += ND_PAGE_SIZE)
		on1 += nd_node_of(p + o) == 1;
	CHECK_EQ(on1, 1024);
	CHECK_EQ(_nd_large_cached(1), 0); /* the flush happened: the path under test ran */
	/* 2048 granules of 4 KiB, counted once each */
	CHECK_EQ(b.hit + b.miss - a.hit - a.miss, 2048);
	CHECK_EQ(b.hit - a.hit, 2048);
	CHECK_EQ(b.il - a.il, 2048);
	CHECK_EQ(b.miss - a.miss, 0);
	CHECK_EQ(b.foreign - a.foreign, 0);
	CHECK_EQ(b.local + b.other - a.local - a.other, 2048);
	nd_free(p);
	while (n > 0)
		nd_free(blk[--n]);
	_nd_large_flush(-1);
	char err[256] = "";
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	char ms[16];
	snprintf(ms, sizeof ms, "%d", DELAY_MS);
	_nd_opt_set("large_decay_ms", ms);
	reused_as_is();
	layout_kept();
	granule_kept();
	huge_kept();
	prefix_reused();
	phase_fit();
	neighbours_joined();
	counted_once();
	gives_back();
	churn_shares("interleave:0,1", ND_PAGE_SIZE, 1, 1);
	churn_shares("interleave:0,1@64K", 64 * KiB, 1, 1);
	churn_shares("weighted:0=3,1=1", ND_PAGE_SIZE, 3, 1);
	return CHECK_DONE();
}
