// SPDX-License-Identifier: MIT
/* Kept empty slabs (slab.c, keep_empty): a heap keeps the slabs its frees
 * empty (up to EMPTY_KEEP pages, and only while the page level would keep
 * as many dirty pages) and takes them again before the page level.
 *  - churn:  rounds of 3000 blocks of 1..1000 B (a held-out
 *            shell-like benchmark's pattern: freed in allocation order,
 *            allocated again, freed in a 7-stride order) take page runs in
 *            the first round only; each round took ~70 runs when emptied
 *            slabs went back to the page level; the same with 10000
 *            blocks (~6 MiB of slabs: past 4 MiB kept, ~75 runs a round
 *            went back and came again: 38 -> 25 ms wall on 150 rounds);
 *  - other:  the empty slabs of one class serve another class of as many
 *            pages (2 KiB -> 512 B: both 16 KiB slabs) without a run, and
 *            its objects are whole and distinct, and pass free's check
 *            with the slab map's mul (the map follows the class);
 *  - pages:  those of a class of 4 pages (512 B) serve a class of 8
 *            (1 KiB) too, 16 objects a slab, before a run is taken (their
 *            pages went back and 8-page runs were taken: bench order
 *            rows), and a full slab's room is its own cap less its objects
 *            out (heap.c, full_best: a full 4-page slab of 16 was taken
 *            for room beside a slab of 32 with 26 out);
 *  - trim:   malloc_trim gives the calling thread's kept slabs back;
 *  - exit:   a thread's exit gives its kept slabs back;
 *  - room:   kept pages count against the page level's dirty limit: the
 *            page level's dirty pages make way for them;
 *  - cap:    past the limit's cap they go back (bench wl_footprint's end
 *            RSS);
 *  - thread: a spawned thread keeps them too (bench order1t);
 *  - idle:   the empty current slab of a class no longer used serves
 *            another class before a run is taken (bench order rows: 23
 *            classes' current slabs, 544 KiB, idle while 768-1024 B
 *            took fresh pages), and its own class refills afterwards;
 *  - tiny:   kept 8-page slabs serve class 16 too, ANY_CAP_MAX objects
 *            each (their first 16 KiB), before a run is taken (a 4-page
 *            run was taken each cycle of sizes in bench order: 16 KiB
 *            more in use a cycle).
 * churn .. exit run in the main thread of this process, in this order;
 * thread, pages, idle, tiny, room and cap each in a child process. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

/* Page runs the page level handed out so far (every node). */
static uint64_t runs(void)
{
	nd_stats_t st;
	st.version = ND_STATS_VERSION;
	if (nd_stats_get(&st) != 0)
		return 0;
	uint64_t n = 0;
	for (int i = 0; i < st.node_limit && i < ND_STATS_NODES; i++)
		n += st.nodes[i].numa_hit + st.nodes[i].numa_miss;
	return n;
}

/* Slabs alive (kept ones count: their headers name a heap). */
static uint64_t slabs(void)
{
	nd_class_stats_t cs[64];
	int n = nd_stats_classes(cs, 64);
	uint64_t k = 0;
	for (int i = 0; i < n; i++)
		k += cs[i].slabs;
	return k;
}

static _nd_heap_t *my_heap(void) { return (_nd_heap_t *)_nd_tls->heap; }

enum { N = 3000, NBIG = 10000, ROUNDS = 6 };
static void *p[NBIG]; /* static: no run of its own between the counts */

static void fill_round_n(uint32_t seed, int n)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t sz = 1 + seed % 1000;
		p[i] = malloc(sz);
		memset(p[i], i & 0xff, sz);
	}
}
static void fill_round(uint32_t seed) { fill_round_n(seed, N); }

static void churn(int n)
{
	uint64_t after1 = 0;
	for (int r = 0; r < ROUNDS; r++) {
		fill_round_n(7, n);
		for (int i = 0; i < n; i++)
			free(p[i]);
		fill_round_n(7, n);
		for (int k = 0; k < 7; k++)
			for (int i = k; i < n; i += 7)
				free(p[i]);
		if (r == 0)
			after1 = runs();
	}
	uint64_t end = runs();
	CHECK(end == after1, "page runs taken after the first round: %llu", (unsigned long long)(end - after1));
	CHECK(my_heap()->epages > 0, "the heap keeps empty slabs");
}

static void other_class(void)
{
	enum { BIG = 2048, NB = 64, SMALL = 512, NS = 6 * 32 };
	static char *b[NB], *s[NS];
	for (int i = 0; i < NB; i++)
		b[i] = malloc(BIG);
	for (int i = 0; i < NB; i++)
		free(b[i]);
	uint32_t kept = my_heap()->epages;
	uint64_t before = runs();
	for (int i = 0; i < NS; i++) {
		s[i] = malloc(SMALL);
		memset(s[i], i & 0xff, SMALL);
	}
	CHECK(kept >= 6 * 4, "2 KiB slabs kept: %u pages", kept);
	CHECK(runs() == before, "512-byte objects took %llu page runs", (unsigned long long)(runs() - before));
	int bad = 0, stale = 0;
	for (int i = 0; i < NS; i++)
		for (int j = 0; j < SMALL; j++)
			bad += (unsigned char)s[i][j] != (i & 0xff);
	CHECK(bad == 0, "%d bytes of 512-byte objects overwritten", bad);
	/* the slab map's mul follows the class (free's fast path checks with
	 * it: the 2 KiB one sent every free of these to the slow path) */
	for (int i = 0; i < NS; i++) {
		uint64_t mul;
		_nd_slab_hot_t *h = _nd_slab_of_mul(s[i], &mul);
		stale += mul != h->mul || !_nd_slab_live_mul(h, mul, s[i]);
	}
	CHECK(stale == 0, "%d of %d 512-byte objects fail free's check with the map's mul", stale, NS);
	for (int i = 0; i < NS; i++)
		free(s[i]);
}

/* pages: in a child (a fresh heap: no slab of 1 KiB yet) */
static const _nd_slab_t *slab_at(const void *q) { return (const _nd_slab_t *)_nd_slab_of(q); }

static int pages_child(void)
{
	enum { SMALL = 512, NS = 8 * 32, BIG = 1024, MAXB = 512 };
	static char *a[NS], *b[MAXB];
	alarm(60); /* a refill that never ends fails, not hangs */
	for (int i = 0; i < NS; i++)
		a[i] = malloc(SMALL);
	for (int i = 0; i < NS; i++)
		free(a[i]);
	uint32_t kept = my_heap()->epages;
	CHECK(kept >= 7 * 4, "512-byte slabs kept: %u pages", kept);
	/* 1 KiB objects until a page run is taken: the kept slabs first */
	uint64_t before = runs();
	int n = 0, bad = 0;
	for (; n < MAXB && runs() == before; n++) {
		b[n] = malloc(BIG);
		memset(b[n], n & 0xff, BIG);
	}
	CHECK(n - 1 >= 6 * 16, "1 KiB objects before a page run: %d", n - 1);
	int small = 0;
	for (int i = 0; i < n - 1; i++)
		small += slab_at(b[i])->npages == 4 && slab_at(b[i])->cap == 16;
	CHECK(small == n - 1, "%d of %d 1 KiB objects in 4-page slabs of 16", small, n - 1);
	/* G, the slab made (8 pages, 32 objects), filled; the next object
	 * in H */
	const _nd_slab_t *g = slab_at(b[n - 1]);
	CHECK(g->npages == 8 && g->cap == 32, "a slab made for 1 KiB: %u pages, %u objects", g->npages, g->cap);
	while (n < MAXB && slab_at(b[n - 1]) == g) {
		b[n] = malloc(BIG);
		memset(b[n], n & 0xff, BIG);
		n++;
	}
	const _nd_slab_t *hs = slab_at(b[n - 1]);
	/* G full: 6 frees (fewer than FULL_BACK) leave it on the full list
	 * with room 6, behind H when H runs dry, and ahead of the 4-page
	 * slabs, full with 16 objects out of 16 (fewer than 26 out of 32:
	 * the room of c's cap would pick one of those) */
	int nf = 0;
	for (int i = 0; i < n && nf < 6; i++)
		if (slab_at(b[i]) == g) {
			free(b[i]);
			b[i] = NULL;
			nf++;
		}
	while (n < MAXB && slab_at(b[n - 1]) == hs) {
		b[n] = malloc(BIG);
		memset(b[n], n & 0xff, BIG);
		n++;
	}
	CHECK(slab_at(b[n - 1]) == g, "H's next object went to G");
	before = runs();
	for (int k = 0; k < 5 && n < MAXB; k++, n++) {
		b[n] = malloc(BIG);
		memset(b[n], n & 0xff, BIG);
		CHECK(slab_at(b[n]) == g, "object %d of G's room in G", k + 2);
	}
	CHECK(runs() == before, "G's room took %llu page runs", (unsigned long long)(runs() - before));
	for (int i = 0; i < n; i++)
		if (b[i])
			for (int j = 0; j < BIG; j++)
				bad += (unsigned char)b[i][j] != (i & 0xff);
	CHECK(bad == 0, "%d bytes of 1 KiB objects overwritten", bad);
	for (int i = 0; i < n; i++)
		free(b[i]);
	return CHECK_DONE();
}

static void trim(void)
{
	CHECK(my_heap()->epages > 0, "kept slabs before malloc_trim");
	uint64_t before = slabs();
	malloc_trim(0);
	CHECK(my_heap()->epages == 0 && my_heap()->emask == 0, "malloc_trim leaves %u kept pages", my_heap()->epages);
	CHECK(slabs() < before, "slabs %llu -> %llu", (unsigned long long)before, (unsigned long long)slabs());
}

static uint32_t exit_kept;
static void *worker(void *arg)
{
	(void)arg;
	fill_round(11);
	for (int i = 0; i < N; i++)
		free(p[i]);
	exit_kept = my_heap()->epages;
	return NULL;
}

static void thread_exit(void)
{
	uint64_t before = slabs();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	CHECK(exit_kept > 0, "the worker kept empty slabs");
	CHECK(slabs() <= before, "slabs %llu -> %llu after the worker's exit", (unsigned long long)before,
	      (unsigned long long)slabs());
}

/* Kept pages count as dirty free pages against the page level's limit
 * (in a child: NODALLOC_PURGE_THRESHOLD=256K, purge blocks of 64 pages,
 * at most 16 of them (4 MiB) kept for the recent peak, and no decay to
 * purge meanwhile).
 * room: the heap keeps 2 MiB of 32 KiB slabs (1000-byte objects), then
 * 2.5 MiB of 64 KiB blocks go back to the page level dirty: the next
 * emptied slab would put the two past the bound, and the kept pages alone
 * are within it, so the page level purges its oldest dirty pages to make
 * room and the heap keeps the slab (before: it gave every kept slab
 * back, so a thread whose page level keeps dirty pages up to its peak,
 * any but the main one, kept none: the thread case below).
 * cap: 5 MiB of such slabs emptied: past the cap (4 MiB) the kept pages
 * alone do not fit, and they all go back (the page level then purges the
 * oldest, down to 3/4 of its limit). Kept regardless, they raised bench
 * wl_footprint's end RSS 12 -> 50 MiB: counted as pages in use they
 * moved the page level's limit. */
/* np 1000-byte objects (32 a 32 KiB slab), the first nk freed: the
 * pages the heap then keeps. */
static uint32_t kept_after(char **q, int np, int nk)
{
	for (int i = 0; i < np; i++) {
		q[i] = malloc(1000);
		memset(q[i], 1, 1000);
	}
	for (int i = 0; i < nk; i++)
		free(q[i]);
	return my_heap()->epages;
}

static int room_child(void)
{
	enum { PER = 32, NK = 64 * PER, NP = NK + 2 * PER, NL = 40 };
	static char *q[NP], *l[NL];
	uint32_t kept = kept_after(q, NP, NK);
	CHECK(kept >= 60 * 8, "kept %u pages of 1000-byte slabs", kept);
	for (int i = 0; i < NL; i++) {
		l[i] = malloc(64 << 10);
		memset(l[i], 2, 64 << 10);
	}
	for (int i = 0; i < NL; i++)
		free(l[i]);
	_nd_large_flush(0); /* the runs the thread cache keeps (large.c) to the page level too */
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	uint64_t dirty = in.dirty_pages;
	CHECK(dirty >= NL * 16, "dirty pages %llu", (unsigned long long)dirty);
	CHECK(my_heap()->epages == kept, "kept %u -> %u pages", kept, my_heap()->epages);
	CHECK(_nd_purge_over(0, kept + 8), "%u kept pages and %llu dirty ones within the bound", kept + 8,
	      (unsigned long long)dirty);
	for (int i = NK; i < NK + PER; i++) /* the slab before the current one */
		free(q[i]);
	CHECK(my_heap()->epages == kept + 8, "%u pages kept, %u before", my_heap()->epages, kept);
	CHECK(_nd_page_info(0, &in) == 0);
	CHECK(in.dirty_pages < dirty, "the page level purged: %llu -> %llu dirty pages", (unsigned long long)dirty,
	      (unsigned long long)in.dirty_pages);
	CHECK(!_nd_purge_over(0, my_heap()->epages), "past the bound: %u kept, %llu dirty", my_heap()->epages,
	      (unsigned long long)in.dirty_pages);
	for (int i = NK + PER; i < NP; i++)
		free(q[i]);
	return CHECK_DONE();
}

static int cap_child(void)
{
	enum { PER = 32, NK = 160 * PER, NP = NK + PER };
	static char *q[NP];
	uint32_t kept = kept_after(q, NP, NK);
	CHECK(kept > 0 && kept <= 16 * 64, "%u pages kept, the cap 1024", kept);
	CHECK(kept < 159 * 8, "every one of %u pages kept", kept);
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	CHECK(in.dirty_pages <= 16 * 64 + 64, "the page level kept %llu dirty pages", (unsigned long long)in.dirty_pages);
	char err[256];
	CHECK(_nd_page_check(0, err, sizeof err) == 0, "%s", err);
	for (int i = NK; i < NP; i++)
		free(q[i]);
	return CHECK_DONE();
}

/* thread: a thread other than the main one keeps its emptied slabs
 * (purge.c _nd_purge_room). Its frees of small runs (its burst) raise its
 * page level's cap, so the page level keeps dirty pages all the way back
 * to the recent peak; the bound on kept slabs plus dirty pages was then
 * always full, and the heap gave back every slab that emptied: each
 * refill made a slab again from the page level (bench order1t: 376
 * slabs a round, 554M instructions in 150 rounds against the main
 * thread's 305M). A spawned thread runs rounds of NBIG blocks of
 * [lo, 1000] B, lo moving each round as wl_order's (the classes one round
 * empties are not all the next one's), each allocated, freed in
 * allocation order, allocated again and freed in a 7-stride order; the
 * page runs taken (one per slab made; nothing else allocates meanwhile)
 * are counted over the second cycle of rounds (in a child: a fresh
 * process). */
enum { CYCLE = 15 };
static uint64_t made, used_most;

static void fill_lo(size_t lo, uint64_t *rng)
{
	for (int i = 0; i < NBIG; i++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		size_t sz = lo + *rng % (1000 - lo + 1);
		p[i] = malloc(sz);
		((char *)p[i])[0] = (char)sz;
	}
}

static void *order_worker(void *arg)
{
	(void)arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull, before = 0;
	size_t lo = 1;
	for (int r = 0; r < 2 * CYCLE; r++, lo = lo * 3 / 2 + 1 > 1000 ? 1 : lo * 3 / 2 + 1) {
		if (r == CYCLE)
			before = runs();
		fill_lo(lo, &rng);
		if (r >= CYCLE) {
			uint64_t k = slabs();
			used_most = k > used_most ? k : used_most;
		}
		for (int i = 0; i < NBIG; i++)
			free(p[i]);
		fill_lo(lo, &rng);
		for (int i = 0, k = 0; i < NBIG; i++, k = (k + 7) % NBIG)
			free(p[k]);
	}
	made = runs() - before;
	return NULL;
}

static int thread_child(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, order_worker, NULL) == 0);
	pthread_join(t, NULL);
	/* a round holds ~300 slabs; before, the cycle made 6.1k (409 a
	 * round), now ~350 in all */
	CHECK(used_most >= 100, "the rounds hold %llu slabs", (unsigned long long)used_most);
	CHECK(made <= used_most * 2, "%llu slabs made in %d rounds, %llu in use at most: %.1f a round",
	      (unsigned long long)made, CYCLE, (unsigned long long)used_most, (double)made / CYCLE);
	return CHECK_DONE();
}

/* idle: in a child (a fresh heap: no kept slab) */
static int idle_child(void)
{
	enum { NSMALL = 14, BIG = 1024, NB = 48, /* its own slab (32), then a 4-page one (16 of 1 KiB) */
	       OTHER = 4096, NO = 8 * 80 };        /* 4 KiB slabs, past IDLE_TAKES: they lend to no 1 KiB */
	static char *b[NB], *w[NO];
	/* 288..704 B (above the classes spans take slots of): one current
	 * slab each, emptied */
	for (int i = 0; i < NSMALL; i++)
		free(malloc(288 + (size_t)i * 32));
	/* a heap's first slabs (IDLE_TAKES) stay */
	uint64_t r0 = runs();
	b[0] = malloc(BIG);
	CHECK(runs() == r0 + 1, "a 1 KiB slab took %llu runs in a new heap", (unsigned long long)(runs() - r0));
	free(b[0]);
	for (int i = 0; i < NO; i++) /* slabs of a class that serves no other (above 1 KiB) */
		w[i] = malloc(OTHER);
	CHECK(my_heap()->epages == 0, "no kept slab: %u pages", my_heap()->epages);
	uint64_t before = runs();
	for (int i = 0; i < NB; i++) {
		b[i] = malloc(BIG);
		memset(b[i], i, BIG);
	}
	CHECK(runs() == before, "1 KiB objects took %llu page runs beside %d idle slabs",
	      (unsigned long long)(runs() - before), NSMALL);
	int stale = 0;
	for (int i = 0; i < NB; i++) {
		uint64_t mul;
		_nd_slab_hot_t *h = _nd_slab_of_mul(b[i], &mul);
		stale += mul != h->mul || !_nd_slab_live_mul(h, mul, b[i]);
	}
	CHECK(stale == 0, "%d of %d 1 KiB objects fail free's check", stale, NB);
	/* the classes whose slab went serve again */
	static char *q[NSMALL];
	for (int i = 0; i < NSMALL; i++) {
		q[i] = malloc(288 + (size_t)i * 32);
		CHECK(q[i] != NULL);
		memset(q[i], 0xa5, 288 + (size_t)i * 32);
	}
	int bad = 0;
	for (int i = 0; i < NB; i++)
		for (int j = 0; j < BIG; j++)
			bad += (unsigned char)b[i][j] != i;
	CHECK(bad == 0, "%d bytes of 1 KiB objects overwritten", bad);
	for (int i = 0; i < NSMALL; i++)
		free(q[i]);
	for (int i = 0; i < NB; i++)
		free(b[i]);
	for (int i = 0; i < NO; i++)
		free(w[i]);
	return CHECK_DONE();
}

/* tiny: in a child (a fresh heap: class 16's one slab, from main's
 * malloc(1)) */
static int tiny_child(void)
{
	enum { BIG = 1024, NB = 3 * 32, TINY = 16, NT = 1024 + 512 };
	static char *b[NB], *t[NT];
	for (int i = 0; i < NB; i++) /* three 8-page slabs of 32 */
		b[i] = malloc(BIG);
	for (int i = 0; i < NB; i++)
		free(b[i]);
	CHECK(my_heap()->epages >= 2 * 8, "1 KiB slabs kept: %u pages", my_heap()->epages);
	uint64_t before = runs();
	int big = 0;
	for (int i = 0; i < NT; i++) {
		t[i] = malloc(TINY);
		memset(t[i], i & 0xff, TINY);
		big += slab_at(t[i])->npages == 8;
	}
	CHECK(runs() == before, "16-byte objects took %llu page runs beside kept 8-page slabs",
	      (unsigned long long)(runs() - before));
	CHECK(big > 0, "no 16-byte object in a kept 8-page slab");
	int stale = 0, bad = 0, over = 0;
	for (int i = 0; i < NT; i++) {
		uint64_t mul;
		const _nd_slab_t *s = slab_at(t[i]);
		_nd_slab_hot_t *h = _nd_slab_of_mul(t[i], &mul);
		stale += mul != h->mul || !_nd_slab_live_mul(h, mul, t[i]);
		over += s->npages == 8 && s->cap != 1024;
		for (int j = 0; j < TINY; j++)
			bad += (unsigned char)t[i][j] != (i & 0xff);
	}
	CHECK(stale == 0, "%d of %d 16-byte objects fail free's check", stale, NT);
	CHECK(over == 0, "%d 16-byte objects in 8-page slabs of another cap than 1024", over);
	CHECK(bad == 0, "%d bytes of 16-byte objects overwritten", bad);
	for (int i = 0; i < NT; i++)
		free(t[i]);
	return CHECK_DONE();
}

static void purge(const char *self, const char *which)
{
	char out[4096];
	int st = run_child(self, (char *const[]){ (char *)self, (char *)which, NULL }, "NODALLOC_PURGE_DECAY_MS", "0",
			   true, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d: %s", which, st, out);
}

int main(int argc, char **argv)
{
	free(malloc(1)); /* the thread's heap */
	if (argc > 1 && strcmp(argv[1], "room") == 0)
		return room_child();
	if (argc > 1 && strcmp(argv[1], "cap") == 0)
		return cap_child();
	if (argc > 1 && strcmp(argv[1], "thread") == 0)
		return thread_child();
	if (argc > 1 && strcmp(argv[1], "pages") == 0)
		return pages_child();
	if (argc > 1 && strcmp(argv[1], "idle") == 0)
		return idle_child();
	if (argc > 1 && strcmp(argv[1], "tiny") == 0)
		return tiny_child();
	churn(N);
	churn(NBIG);
	other_class();
	trim();
	thread_exit();
	purge("/proc/self/exe", "thread");
	purge("/proc/self/exe", "pages");
	purge("/proc/self/exe", "idle");
	purge("/proc/self/exe", "tiny");
	/* purge blocks of 256 KiB: a dirty limit of 1 MiB, at most 4 MiB kept
	 * for the recent peak (purge.c, dirty_keep) */
	setenv("NODALLOC_PURGE_THRESHOLD", "256K", 1);
	purge("/proc/self/exe", "room");
	purge("/proc/self/exe", "cap");
	return CHECK_DONE();
}
