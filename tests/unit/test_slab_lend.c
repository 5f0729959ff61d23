// SPDX-License-Identifier: MIT
/* A class that needs a new slab first borrows a partial slab of a class
 * above 1 KiB, at most twice its size and at least as aligned
 * (_nd_slab_lend, issue 11: wl_footprint's refill of 32..1024 B after 90%
 * of 1280-2048 B objects were freed): the free objects of 1280 B (those
 * in pages the purge kept) serve 900 B requests (class 960) before a new
 * slab of 960 B is taken; a class more than twice as small (512) never
 * gets them, nor does 1024 (aligned to 1024: aligned_alloc(1024, 1000)
 * must stay aligned, and 1280 B objects are not); every aligned_alloc is
 * aligned; a lent slab that runs dry goes back to its own class, whose
 * allocations still work; freeing everything gives every slab back (none
 * dangles from a list it was lent to); the kept objects are intact.
 * 1000 B requests borrow 2048 B objects, except in check mode (a child
 * under NODALLOC_CHECK=1), whose sized free wants a block above half its
 * usable size: nd_free_sized(p, 1000) of a 2048 B object would abort.
 * A donor's stretches of 3 or more free pages go back before it is lent:
 * the lent objects are those in pages a kept object holds (the rest would
 * fill pages that hold nothing else with requests of half their size) or
 * in stretches of 1-2 free pages beside them (a call for a page or two
 * costs about what a fault does). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define N 2400 /* objects of 1200 B: 96 slabs of 25 (32 KiB) */
#define M 2000

static uint64_t slabs_of(size_t size)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	int n = _nd_slab_class_stats(st, ND_SLAB_CLASSES);
	for (int c = 0; c < n; c++)
		if (st[c].size == size)
			return st[c].slabs;
	return 0;
}

static bool holds(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* The pages around q's, in q's slab, that hold no kept object of b[0, k)
 * (every 10th): 0 if q's page holds one. */
static int stretch_of(const void *q, void *const *b, int k)
{
	_nd_pagedesc_t *d = _nd_page_desc(q);
	CHECK(d && d->use == ND_USE_SLAB);
	if (!d || d->use != ND_USE_SLAB)
		return 0;
	const _nd_slab_t *s = (const _nd_slab_t *)d->user;
	uintptr_t lo = (uintptr_t)_nd_slab_run(s) >> 12, hi = lo + s->npages, pg = (uintptr_t)q >> 12;
	bool kept[64] = { false };
	for (int i = 0; i < k; i += 10)
		if (b[i] && (uintptr_t)b[i] >> 12 >= lo && (uintptr_t)b[i] >> 12 < hi && hi - lo <= 64)
			kept[((uintptr_t)b[i] >> 12) - lo] = true;
	if (kept[pg - lo])
		return 0;
	uintptr_t a = pg, e = pg;
	while (a > lo && !kept[a - 1 - lo])
		a--;
	while (e + 1 < hi && !kept[e + 1 - lo])
		e++;
	return (int)(e - a + 1);
}

/* 2000 B objects, 90% freed, then 1000 B requests: how many got 2048;
 * *alonep: how many of those in a page without a kept object. */
static int lend_2048(int *alonep)
{
	enum { K = 800, J = 400 };
	static void *b[K], *q[J];
	for (int i = 0; i < K; i++)
		CHECK((b[i] = malloc(2000)) != NULL);
	for (int i = 0; i < K; i++)
		if (i % 10 != 0) {
			free(b[i]);
			b[i] = NULL;
		}
	int lent = 0, alone = 0;
	for (int i = 0; i < J; i++) {
		CHECK((q[i] = malloc(1000)) != NULL);
		if (malloc_usable_size(q[i]) != 2048)
			continue;
		lent++;
		/* the donor's stretches of 3 or more free pages went back
		 * before it was lent: a lent object lies in a page a kept one
		 * holds, or in a stretch of 1-2 pages without one (2048 B
		 * objects do not straddle pages) */
		int n = stretch_of(q[i], b, K);
		CHECK(n < 3, "lent object %p in a stretch of %d pages no kept object holds", q[i], n);
		alone += n > 0;
	}
	*alonep = alone;
	for (int i = 0; i < J; i++)
		nd_free_sized(q[i], 1000);
	for (int i = 0; i < K; i++)
		free(b[i]);
	return lent;
}

/* Partial donor slabs with nothing listed (the purge withheld their free
 * objects) do not stop the lending: the look parks them full and goes on
 * to the slabs behind them. 2000 B objects (class 2048: 8 in 4 pages):
 * 6 slabs keep objects 0 and 2 (1 and 3 stay listed, in pages kept), then
 * 10 keep 0 and 1 (page 0: nothing listed once pages 1-3 go); a slab that
 * becomes partial goes behind the head, so the 10 come first. Returns the
 * 1000 B requests that got a lent 2048 B object. */
static int lend_past_dry(void)
{
	enum { K = 8 * 24, J = 200 };
	static void *b[K], *q[J];
	malloc_trim(0); /* no kept empty slab serves 1000 B first */
	for (int i = 0; i < K; i++)
		CHECK((b[i] = malloc(2000)) != NULL);
	int ws[K / 8], nw = 0; /* first objects of the slabs that hold only ours */
	for (int i = 0; i + 8 <= K; i++) {
		_nd_pagedesc_t *d = _nd_page_desc(b[i]), *e = _nd_page_desc(b[i + 7]);
		if (d && e && d->use == ND_USE_SLAB && e->user == d->user && (char *)b[i] == ((_nd_slab_t *)d->user)->start)
			ws[nw++] = i;
	}
	CHECK(nw >= 16, "%d whole slabs of 2048 B", nw);
	for (int w = 0; w < 16 && w < nw; w++)
		for (int k = 0; k < 8; k++)
			if (w < 6 ? k != 0 && k != 2 : k > 1) {
				free(b[ws[w] + k]);
				b[ws[w] + k] = NULL;
			}
	int lent = 0;
	for (int i = 0; i < J; i++) {
		CHECK((q[i] = malloc(1000)) != NULL);
		lent += malloc_usable_size(q[i]) == 2048;
	}
	for (int i = 0; i < J; i++)
		free(q[i]);
	for (int i = 0; i < K; i++)
		free(b[i]);
	return lent;
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* the child: check mode lends nothing */
		int alone;
		CHECK_EQ(lend_2048(&alone), 0);
		return CHECK_DONE();
	}
	pid_t pid = fork();
	if (pid == 0) {
		setenv("NODALLOC_CHECK", "1", 1);
		execl("/proc/self/exe", argv[0], "check", (char *)NULL);
		_exit(127);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "check-mode child: status %d", st);
	int alone = 0, l2 = lend_2048(&alone);
	CHECK(l2 > 0, "%d requests of 1000 B from lent 2048 B slabs", l2);
	/* the short stretches stayed: their objects were lent (before, every
	 * one went back, a call for each 1-2 pages) */
	CHECK(alone > 0, "%d of %d lent objects in a page without a kept one", alone, l2);
	int ld = lend_past_dry();
	CHECK(ld >= 12, "%d requests of 1000 B from 2048 B slabs behind 10 with nothing listed", ld);

	static unsigned char *big[N], *mid[M], *small[M], *again[M], *al[M / 4];
	for (int i = 0; i < N; i++) {
		big[i] = malloc(1200);
		CHECK(big[i] != NULL);
		memset(big[i], i % 10 == 0 ? 0xb0 : 0, 1200);
	}
	for (int i = 0; i < N; i++)
		if (i % 10 != 0) {
			free(big[i]);
			big[i] = NULL;
		}
	uint64_t s960 = slabs_of(960), s1280 = slabs_of(1280);
	CHECK(s1280 >= 72, "%llu slabs of 1280 B after the frees", (unsigned long long)s1280);

	/* 500 B (class 512): 1280 is more than twice that, never lent */
	for (int i = 0; i < M; i++) {
		small[i] = malloc(500);
		CHECK(small[i] != NULL && malloc_usable_size(small[i]) == 512, "500 B in %zu",
		      small[i] ? malloc_usable_size(small[i]) : 0);
	}
	/* 1000 B (class 1024, whose objects are 1024-aligned): never 1280 */
	for (int i = 0; i < M / 4; i++) {
		al[i] = aligned_alloc(1024, 1000);
		CHECK(al[i] != NULL && (uintptr_t)al[i] % 1024 == 0 && malloc_usable_size(al[i]) != 1280,
		      "aligned_alloc(1024, 1000): %p", (void *)al[i]);
	}
	/* 900 B (class 960): the 1280 B slabs' free objects first */
	int lent = 0;
	for (int i = 0; i < M; i++) {
		mid[i] = i % 4 == 3 ? aligned_alloc(64, 900) : malloc(900);
		CHECK(mid[i] != NULL && (uintptr_t)mid[i] % 64 == 0);
		size_t u = malloc_usable_size(mid[i]);
		CHECK(u >= 900 && u <= 1920, "900 B in %zu", u);
		lent += u > 960;
		memset(mid[i], 0x3c, u);
	}
	/* the first one already; about 3 per slab (the rest of a slab's free
	 * objects are withheld in the pages the purge gave back: not lent):
	 * 333 */
	CHECK(malloc_usable_size(mid[0]) == 1280, "first 900 B from a lent slab");
	CHECK(lent >= M / 8, "%d of %d requests of 900 B from lent slabs", lent, M);
	CHECK(slabs_of(960) - s960 <= (uint64_t)(M - lent) / 34 + 2, "960 B slabs %llu -> %llu with %d lent",
	      (unsigned long long)s960, (unsigned long long)slabs_of(960), lent);
	CHECK_EQ(slabs_of(1280), s1280); /* no new slab: the lent ones serve */

	/* the class lent from still allocates (dry lent slabs are its own again) */
	for (int i = 0; i < M; i++) {
		again[i] = malloc(1200);
		CHECK(again[i] != NULL && malloc_usable_size(again[i]) == 1280);
		memset(again[i], 0x5a, 1200);
	}
	for (int i = 0; i < N; i++)
		CHECK(!big[i] || holds(big[i], 1200, 0xb0), "kept object %d intact", i);
	for (int i = 0; i < M; i++) {
		CHECK(holds(mid[i], 900, 0x3c), "lent object %d intact", i);
		CHECK(holds(again[i], 1200, 0x5a), "object %d intact", i);
	}

	for (int i = 0; i < M; i++) {
		free(mid[i]);
		free(small[i]);
		free(again[i]);
	}
	for (int i = 0; i < M / 4; i++)
		free(al[i]);
	for (int i = 0; i < N; i++)
		free(big[i]);
	/* each class keeps at most its current slab (a lent one counts in
	 * its own class), once the heap's kept empty slabs are given back */
	malloc_trim(0);
	uint64_t left = slabs_of(512) + slabs_of(960) + slabs_of(1024) + slabs_of(1280);
	CHECK(left <= 4, "%llu slabs left", (unsigned long long)left);
	return CHECK_DONE();
}
