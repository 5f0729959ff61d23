// SPDX-License-Identifier: MIT
/*
 * Trust (task trust27): calloc never returns old data, whichever cache
 * the memory comes back from. Every block is written with 0xA5 before it
 * is freed, then calloc (and the placement and heap forms of it) of the
 * same regime must read zero over every requested byte:
 * - slab objects of every class, objects of lent slabs (a 2 KiB class
 *   serving 1.1 KiB objects), span-sized objects after a churn;
 * - the thread cache of 9..64 page runs (large.c, task mixed27/28): the
 *   very run taken again, and a smaller request fitting it;
 * - runs the page level got back dirty below the purge threshold, and
 *   packed runs placed in the dirty gaps between live runs (buddy.c
 *   gap_of);
 * - the node caches of big runs: reuse as is, a cut prefix, an aligned
 *   zeroed block, the tail a shrinking realloc cut off, and a run filled
 *   with the 2 MiB pages of cached runs moved into it (large27);
 * - the spread cache under interleave and weighted policies: reuse as
 *   is, a prefix of a longer run and its tail;
 * - realloc growing through a cached run (its new tail is not promised
 *   zero, the old bytes are kept), then calloc of that memory.
 * Emulated: node 0 has the CPUs, node 1 is CPU-less.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define DIRT 0xA5

/* Bytes of [p, p + n) that are not zero. */
static size_t nonzero(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += c[i] != 0;
	return bad;
}

static void dirty(void *p)
{
	memset(p, DIRT, malloc_usable_size(p));
}

static nd_policy_t policy(const char *s)
{
	nd_policy_t p;
	char err[256] = "";
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s: %s", s, err);
	return p;
}

#define ZERO(p, n, what, ...)                                                                        \
	do {                                                                                         \
		size_t nz_ = (p) ? nonzero((p), (n)) : (size_t)-1;                                  \
		CHECK(nz_ == 0, "%s: %zu of %zu bytes not zero at %p " what, #p, nz_, (size_t)(n),   \
		      (void *)(p), ##__VA_ARGS__);                                                    \
	} while (0)

/* Every class: a batch freed dirty, calloc'd again. */
static void slab_classes(void)
{
	static const size_t sizes[] = { 8, 16, 24, 48, 100, 256, 512, 1000, 1024, 1500, 2048, 3000, 4096, 6000, 8192, 16384, 32768 };
	static void *b[256];
	for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		int n = sizes[s] > 4096 ? 32 : 256;
		for (int i = 0; i < n; i++) {
			CHECK((b[i] = malloc(sizes[s])) != NULL);
			dirty(b[i]);
		}
		for (int i = 0; i < n; i++)
			free(b[i]);
		for (int i = 0; i < n; i++) {
			b[i] = calloc(1, sizes[s]);
			ZERO(b[i], sizes[s], "(class of %zu)", sizes[s]);
		}
		for (int i = 0; i < n; i++)
			free(b[i]);
	}
}

/* Partial 2 KiB slabs, fully carved, with free dirty objects: a heap
 * that wants a 1.1 KiB slab borrows them (heap.c bw_lend). */
static void lent_slabs(void)
{
	enum { N = 512 };
	static void *big[N], *small[N];
	for (int i = 0; i < N; i++) {
		CHECK((big[i] = malloc(2048)) != NULL);
		dirty(big[i]);
	}
	for (int i = 0; i < N; i += 2)
		free(big[i]);
	int lent = 0;
	for (int i = 0; i < N; i++) {
		small[i] = calloc(1, 1100);
		ZERO(small[i], 1100, "(1100 B, %d)", i);
		lent += small[i] && malloc_usable_size(small[i]) == 2048;
	}
	printf("lent_slabs: %d of %d 1100 B blocks from 2 KiB slabs\n", lent, N);
	for (int i = 0; i < N; i++)
		free(small[i]);
	for (int i = 1; i < N; i += 2)
		free(big[i]);
}

/* A churn of 80..256 B objects leaves slabs with runs of free dirty
 * slots; 300..1024 B callocs may take them as spans (slab.c). */
static void span_churn(void)
{
	enum { N = 4096 };
	static void *o[N];
	for (int i = 0; i < N; i++) {
		CHECK((o[i] = malloc(80 + (size_t)(i % 4) * 48)) != NULL);
		dirty(o[i]);
	}
	for (int i = 0; i < N; i++)
		if (i % 8 < 5) {
			free(o[i]);
			o[i] = NULL;
		}
	for (int i = 0; i < N; i++)
		if (!o[i]) {
			size_t n = 300 + (size_t)(i % 7) * 100;
			o[i] = calloc(1, n);
			ZERO(o[i], n, "(%zu B)", n);
		}
	for (int i = 0; i < N; i++)
		free(o[i]);
}

/* The thread cache: each run of 9..64 pages freed dirty, then calloc of
 * the same size (the same run) and of a smaller one it fits. */
static uint64_t free_pages(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in.free_pages;
}

static void thread_cache(void)
{
	/* the thread cache keeps up to half the node's large pages in use:
	 * a live block on each node (node 1's first: the runs after it are
	 * fresh, flagged clean, so only the reuse mark makes calloc clear
	 * them) */
	char *hold0 = malloc(4 * MiB), *hold1 = nd_malloc_onnode(4 * MiB, 1);
	CHECK(hold0 && hold1);
	int same = 0, fit = 0, kept = 0;
	for (size_t np = 9; np <= 64; np++) {
		size_t n = np * ND_PAGE_SIZE - 100;
		char *p = malloc(n);
		CHECK(p != NULL);
		dirty(p);
		uint64_t f0 = free_pages(nd_node_of(p));
		free(p);
		kept += free_pages(nd_node_of(p)) == f0;
		char *q = calloc(1, n);
		same += q == p;
		ZERO(q, n, "(%zu pages, same run %d)", np, q == p);
		dirty(q);
		free(q);
		size_t m = (np - np / 5) * ND_PAGE_SIZE - 5; /* np - np/5 pages: np fits them */
		if (m <= ND_SLAB_MAX)
			continue;
		char *r = calloc(m, 1);
		fit += r == q;
		ZERO(r, m, "(%zu bytes in a run of %zu pages)", m, np);
		free(r);
		_nd_large_flush(-1); /* the next round finds only its own run kept */
	}
	CHECK(kept >= 50, "the thread cache kept %d of 56 runs", kept);
	CHECK(same >= 50, "the thread cache served %d of 56 callocs", same);
	CHECK(fit >= 20, "a smaller calloc took the kept run %d times", fit);
	/* node 1's runs, through the placement calls */
	for (size_t np = 9; np <= 64; np += 11) {
		size_t n = np * ND_PAGE_SIZE;
		char *p = nd_malloc_onnode(n, 1);
		CHECK(p != NULL && nd_node_of(p) == 1);
		dirty(p);
		uint64_t f1 = free_pages(1);
		nd_free(p);
		CHECK_EQ(free_pages(1), f1); /* kept by the thread */
		char *q = nd_calloc_onnode(1, n, 1);
		CHECK(q == p, "node 1's run reused: %p, freed %p", (void *)q, (void *)p);
		ZERO(q, n, "(calloc_onnode, %zu pages)", np);
		dirty(q);
		nd_free(q);
		q = nd_mallocx_onnode(n, 1, ND_MALLOCX_ZERO);
		ZERO(q, n, "(mallocx ZERO, %zu pages)", np);
		dirty(q);
		nd_free(q);
		nd_policy_t pref = policy("preferred:1");
		q = nd_calloc_policy(n, 1, &pref);
		ZERO(q, n, "(calloc_policy preferred:1, %zu pages)", np);
		nd_free(q);
	}
	free(hold0);
	free(hold1);
	_nd_large_flush(-1);
}

/* Runs the page level takes back dirty: 65..127 pages (below the purge
 * threshold, above the thread cache), and 9..20 page runs freed between
 * live ones past the thread cache's bound (then flushed too), taken again
 * as packed runs in those gaps. */
static void page_level_dirty(void)
{
	enum { N = 160 };
	static char *b[N];
	for (int i = 0; i < N; i++) {
		size_t np = 65 + (size_t)(i % 60);
		CHECK((b[i] = malloc(np * ND_PAGE_SIZE)) != NULL);
		dirty(b[i]);
	}
	for (int i = 0; i < N; i += 2)
		free(b[i]);
	for (int i = 0; i < N; i += 2) {
		size_t n = (65 + (size_t)((i * 7) % 60)) * ND_PAGE_SIZE - 3;
		b[i] = calloc(1, n);
		ZERO(b[i], n, "(dirty page-level run, %zu B)", n);
	}
	for (int i = 0; i < N; i++)
		free(b[i]);
	/* gaps */
	for (int i = 0; i < N; i++) {
		size_t np = 9 + (size_t)(i % 12);
		CHECK((b[i] = malloc(np * ND_PAGE_SIZE)) != NULL);
		dirty(b[i]);
	}
	for (int i = 0; i < N; i++)
		if (i % 3) {
			free(b[i]);
			b[i] = NULL;
		}
	_nd_large_flush(-1); /* the thread cache's runs to the page level, dirty */
	for (int i = 0; i < N; i++)
		if (!b[i]) {
			size_t n = (9 + (size_t)((i * 5) % 12)) * ND_PAGE_SIZE - 1;
			b[i] = calloc(n, 1);
			ZERO(b[i], n, "(packed run in a gap, %zu B)", n);
		}
	for (int i = 0; i < N; i++)
		free(b[i]);
	_nd_large_flush(-1);
}

/* The node caches: reuse as is, a prefix cut from a longer run, and a
 * run filled with cached runs' whole 2 MiB pages (moved, no copy). */
static void node_cache(void)
{
	_nd_large_flush(-1);
	static const size_t sizes[] = { 512 * KiB, 1 * MiB, 3 * MiB + 5, 8 * MiB };
	for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		char *p = malloc(sizes[s]);
		CHECK(p != NULL);
		dirty(p);
		free(p);
		char *q = calloc(1, sizes[s]);
		CHECK(q == p, "cached run reused: %p, freed %p", (void *)q, (void *)p);
		ZERO(q, sizes[s], "(node cache, %zu B)", sizes[s]);
		free(q);
	}
	/* a prefix: 6 MiB freed, 2 MiB + 1 then 3 MiB from it */
	char *p = malloc(6 * MiB);
	CHECK(p != NULL);
	dirty(p);
	free(p);
	char *a = calloc(1, 2 * MiB + 1), *b = calloc(3 * MiB, 1);
	CHECK(a == p, "prefix: %p, freed %p", (void *)a, (void *)p);
	ZERO(a, 2 * MiB + 1, "(prefix)");
	ZERO(b, 3 * MiB, "(rest of a cut run)");
	free(a);
	free(b);
	_nd_large_flush(-1);
	/* an aligned zeroed block from a cached run, and the tail a shrinking
	 * realloc cut off and cached */
	p = malloc(2 * MiB);
	CHECK(p != NULL);
	dirty(p);
	free(p);
	a = nd_mallocx_onnode(1 * MiB, 0, ND_MALLOCX_ALIGN(64 * KiB) | ND_MALLOCX_ZERO);
	CHECK(a != NULL && ((uintptr_t)a & (64 * KiB - 1)) == 0);
	ZERO(a, 1 * MiB, "(aligned, from a cached run)");
	nd_free(a);
	_nd_large_flush(-1);
	p = malloc(4 * MiB);
	CHECK(p != NULL);
	dirty(p);
	char *s = realloc(p, 1 * MiB);
	CHECK(s == p, "shrunk in place");
	b = calloc(1, 3 * MiB);
	CHECK(b == p + 1 * MiB, "the cut tail reused: %p, tail %p", (void *)b, (void *)(p + 1 * MiB));
	ZERO(b, 3 * MiB, "(the tail a shrink cached)");
	free(b);
	free(s);
	_nd_large_flush(-1);
	/* moves: three 4 MiB blocks cached, none fits 10 MiB */
	char *m[3];
	for (int i = 0; i < 3; i++) {
		CHECK((m[i] = malloc(4 * MiB)) != NULL);
		dirty(m[i]);
	}
	char *sep = malloc(1 * MiB); /* keeps them from joining into one run */
	for (int i = 0; i < 3; i += 2)
		free(m[i]);
	free(m[1]);
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	char *big = calloc(1, 10 * MiB);
	ZERO(big, 10 * MiB, "(a run filled from %llu cached runs, %llu B)", (unsigned long long)runs,
	     (unsigned long long)cached);
	free(big);
	free(sep);
	_nd_large_flush(-1);
}

/* The spread cache: interleave and weighted runs freed dirty, calloc'd
 * again as is, and a longer run's prefix and tail. */
static void spread_cache(const char *pol)
{
	_nd_large_flush(-1);
	nd_policy_t il = policy(pol);
	CHECK(nd_set_policy(&il) == 0);
	static const size_t sizes[] = { 40 * KiB, 64 * KiB, 100 * KiB, 640 * KiB, 1 * MiB, 3 * MiB };
	int same = 0;
	for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		for (int k = 0; k < 3; k++) {
			char *p = malloc(sizes[s]);
			CHECK(p != NULL);
			dirty(p);
			free(p);
			char *q = calloc(sizes[s], 1);
			same += q == p;
			ZERO(q, sizes[s], "(%s, %zu B, same run %d)", pol, sizes[s], q == p);
			free(q);
		}
	}
	CHECK(same > 0, "%s: the spread cache served no calloc", pol);
	char *p = malloc(1 * MiB);
	CHECK(p != NULL);
	dirty(p);
	free(p);
	char *a = calloc(1, 640 * KiB), *b = calloc(1, 384 * KiB);
	ZERO(a, 640 * KiB, "(%s, prefix)", pol);
	ZERO(b, 384 * KiB, "(%s, tail)", pol);
	free(a);
	free(b);
	nd_policy_t def = { .mode = ND_POLICY_DEFAULT };
	nd_set_policy(&def);
	_nd_large_flush(-1);
}

/* realloc growing through a cached run keeps the old bytes (the new tail
 * is not promised zero); the memory calloc'd again afterwards is. */
static void realloc_through_cache(void)
{
	_nd_large_flush(-1);
	for (int round = 0; round < 4; round++) {
		size_t n = (size_t)(1 + round) * MiB;
		char *a = malloc(n), *b = malloc(n);
		CHECK(a && b);
		memset(a, 0x11, n);
		dirty(b);
		free(b); /* cached; after a when the slot packed them so */
		char *c = realloc(a, 2 * n);
		CHECK(c != NULL);
		size_t bad = 0;
		for (size_t i = 0; c && i < n; i++)
			bad += (unsigned char)c[i] != 0x11;
		CHECK_EQ(bad, 0);
		if (c)
			memset(c + n, DIRT, 2 * n - n);
		free(c);
		char *z = calloc(2, n);
		ZERO(z, 2 * n, "(after realloc through the cache, round %d, in place %d)", round, c == a);
		free(z);
	}
	/* a thread-cache run grown by realloc from a small block */
	char *t = malloc(48 * KiB);
	dirty(t);
	free(t);
	char *s = malloc(200);
	memset(s, 0x22, 200);
	s = realloc(s, 47 * KiB);
	CHECK(s && s[0] == 0x22 && s[199] == 0x22);
	if (s)
		memset(s, DIRT, 47 * KiB);
	free(s);
	char *z = calloc(1, 47 * KiB);
	ZERO(z, 47 * KiB, "(calloc after realloc into a kept run)");
	free(z);
	_nd_large_flush(-1);
}

/* Another thread's freed runs (its thread cache given back at its exit,
 * dirty) and a public heap's calloc. */
static void *worker(void *arg)
{
	(void)arg;
	static char *b[40];
	for (int i = 0; i < 40; i++) {
		CHECK((b[i] = malloc((9 + (size_t)i) * ND_PAGE_SIZE)) != NULL);
		dirty(b[i]);
	}
	for (int i = 0; i < 40; i++)
		free(b[i]);
	return NULL;
}

static void other_thread(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	for (int i = 0; i < 40; i++) {
		size_t n = (9 + (size_t)i) * ND_PAGE_SIZE;
		char *z = calloc(1, n);
		ZERO(z, n, "(after a thread's exit, %zu B)", n);
		free(z);
	}
	nd_heap_t *h = nd_heap_new(1);
	CHECK(h != NULL);
	for (size_t n = 16; h && n <= 256 * KiB; n *= 2) {
		char *p = nd_heap_malloc(h, n);
		CHECK(p != NULL);
		dirty(p);
		nd_free(p);
		char *q = nd_heap_calloc(h, 1, n);
		ZERO(q, n, "(heap calloc, %zu B)", n);
		nd_free(q);
	}
	nd_heap_destroy(h);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=512M", err, sizeof err) == 0, "emulate: %s", err);
	slab_classes();
	lent_slabs();
	span_churn();
	thread_cache();
	page_level_dirty();
	node_cache();
	spread_cache("interleave:0,1");
	spread_cache("interleave:0,1@64K");
	spread_cache("weighted:0=3,1=1");
	realloc_through_cache();
	other_thread();
	_nd_large_flush(-1);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
