// SPDX-License-Identifier: MIT
/* Spans (slab.c, span_from): the unlinking of a run of k adjacent free
 * slots found in list order, for every order of the run's slots in the
 * free list (k = 2, 3, 4, 2 + 6 + 24 orders), with or without another
 * free slot before each of them (2^k), at slots 0, 61, 63 (across a map
 * word), 120 and the slab's end: the span is the run's first slot, and
 * the free list afterwards is the one before without the run, in its
 * order (every other link intact). A 128 B slab of the main thread's
 * heap, fully carved, every slot held but those listed (64 non-adjacent
 * ones behind the run, so the slab is sparse); _nd_slab_span_take asked
 * for k * 128 B directly (no refill gate). */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define CAP 256
static _nd_slab_t *S;
static void *slot[CAP]; /* S's slots the test holds, by index (NULL: listed) */
static void *aside[1 << 14];
static int naside;

static int idx_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (!d || d->use != ND_USE_SLAB || d->user != (uintptr_t)S)
		return -1;
	return (int)(((const char *)p - (const char *)S->start) / S->size);
}

/* malloc 120 B until every slot of S is held again */
static bool hold_all(void)
{
	int missing = 0;
	for (int i = 0; i < CAP; i++)
		missing += slot[i] == NULL;
	while (missing && naside < (int)(sizeof aside / sizeof aside[0])) {
		void *p = malloc(120);
		int i = idx_of(p);
		if (i < 0) {
			aside[naside++] = p;
			continue;
		}
		if (slot[i])
			return false; /* handed out twice */
		slot[i] = p;
		missing--;
	}
	return missing == 0;
}

static int list_of(void **out, int max)
{
	int n = 0;
	for (void **x = S->free; x && n < max; x = ND_FO_NEXT(x))
		out[n++] = x;
	return n;
}

static void *at(int i)
{
	return S->start + (size_t)i * S->size;
}

static int cases, ran;

/* One case: run lo..lo+k-1 listed in order perm, slot il[j] listed before
 * the run's j-th when bit j of mask is set, then the background. */
static void one(int k, int lo, const int *perm, unsigned mask)
{
	static const int il[4] = { 20, 22, 24, 26 };
	void *want[CAP];
	int n = 0;
	for (int j = 0; j < k; j++) {
		if (mask >> j & 1)
			want[n++] = at(il[j]);
		want[n++] = at(lo + perm[j]);
	}
	int nl = n;
	/* the background: non-adjacent even slots from 130 on, away from the
	 * run (freed first: deepest in the list, in reverse) */
	int bg[CAP], nb = 0;
	for (int b = 130; b < CAP; b += 2)
		if (b < lo - 1 || b > lo + k)
			bg[nb++] = b;
	for (int j = nb; j-- > 0;)
		want[n++] = at(bg[j]);
	cases++;
	for (int j = 0; j < nb; j++) {
		free(slot[bg[j]]);
		slot[bg[j]] = NULL;
	}
	for (int j = nl; j-- > 0;) {
		int i = idx_of(want[j]);
		free(slot[i]);
		slot[i] = NULL;
	}
	void *have[CAP];
	int nh = list_of(have, CAP);
	CHECK(nh == n && !memcmp(have, want, sizeof(void *) * (size_t)n), "k %d lo %d mask %u: the list built", k, lo,
	      mask);
	char *o = _nd_slab_span_take(_nd_tls->heap, (size_t)k * 128);
	CHECK(o == at(lo), "k %d lo %d mask %u perm %d%d%d%d: span %p, want slot %d (%p)", k, lo, mask, perm[0],
	      perm[1], k > 2 ? perm[2] : 0, k > 3 ? perm[3] : 0, (void *)o, lo, at(lo));
	if (o == at(lo)) {
		ran++;
		CHECK_EQ(malloc_usable_size(o), (size_t)k * 128);
		/* the list without the run, in its order */
		void *rest[CAP];
		int nr = 0;
		for (int j = 0; j < n; j++) {
			int i = idx_of(want[j]);
			if (i < lo || i >= lo + k)
				rest[nr++] = want[j];
		}
		nh = list_of(have, CAP);
		CHECK(nh == nr && !memcmp(have, rest, sizeof(void *) * (size_t)nr),
		      "k %d lo %d mask %u perm %d%d%d%d: the list after the span (%d listed, want %d)", k, lo, mask,
		      perm[0], perm[1], k > 2 ? perm[2] : 0, k > 3 ? perm[3] : 0, nh, nr);
		free(o);
	}
	CHECK(hold_all(), "every slot held again");
}

/* every permutation of perm[at..k-1] (Heap's: by swaps) */
static void perms(int k, int lo, int *perm, int pos)
{
	if (pos == k) {
		for (unsigned m = 0; m < 1u << k; m++)
			one(k, lo, perm, m);
		return;
	}
	for (int j = pos; j < k; j++) {
		int t = perm[pos];
		perm[pos] = perm[j];
		perm[j] = t;
		perms(k, lo, perm, pos + 1);
		perm[j] = perm[pos];
		perm[pos] = t;
	}
}

int main(void)
{
	/* a fully carved 128 B slab: the one of the middle of 3 * CAP */
	static void *o[3 * CAP];
	for (int i = 0; i < 3 * CAP; i++)
		o[i] = malloc(120);
	_nd_pagedesc_t *d = _nd_page_desc(o[3 * CAP / 2]);
	CHECK(d && d->use == ND_USE_SLAB);
	S = (_nd_slab_t *)d->user;
	CHECK(S->size == 128 && S->cap == CAP && S->carved == CAP, "size %u cap %u", (unsigned)S->size,
	      (unsigned)S->cap);
	for (int i = 0; i < 3 * CAP; i++) {
		int j = idx_of(o[i]);
		if (j >= 0)
			slot[j] = o[i];
		else
			aside[naside++] = o[i];
	}
	CHECK(hold_all(), "every slot of the slab held");
	/* off the full list (its bias): most slots freed, then held again */
	for (int i = 0; i < 200; i++) {
		free(slot[i]);
		slot[i] = NULL;
	}
	CHECK(hold_all(), "every slot of the slab held");
	CHECK(S->fbias == 0, "the slab is partial");
	static const int los[] = { 0, 61, 63, 120, -1 };
	for (int k = 2; k <= 4; k++)
		for (unsigned l = 0; l < sizeof los / sizeof los[0]; l++) {
			int perm[4] = { 0, 1, 2, 3 };
			perms(k, los[l] < 0 ? CAP - k : los[l], perm, 0);
		}
	CHECK_EQ(cases, 5 * (2 * 4 + 6 * 8 + 24 * 16));
	CHECK_EQ(ran, cases);
	for (int i = 0; i < CAP; i++)
		free(slot[i]);
	for (int i = 0; i < naside; i++)
		free(aside[i]);
	return CHECK_DONE();
}
