// SPDX-License-Identifier: MIT
/* The refill that finds the current slab dry and its class's partial list
 * otherwise empty (heap.c's swap_dry, one list update): the dry slab parks
 * full and the full slab with the most owner frees back serves next, as
 * park_full then unpark_local chose it before. Slabs S0, S1 are filled
 * (full list), S2 is current; 2 objects of S0 and 4 of S1 are freed
 * (fewer than FULL_BACK: they stay on the full list). Draining S2 takes
 * S1 (4 back), its 4 objects come out, then S0 (2 back; S2 has none),
 * then a new slab. Every object is freed at the end and the class's
 * statistics count no object out.
 * Then the refill that finds a partial slab behind the dry one (heap.c's
 * heap_refill, one step: _nd_slab_park_pop): with S2 carved to its end,
 * FULL_BACK (half) of S0's objects are freed, so S0 goes back to the
 * partial list behind S2; draining S2 takes S0's freed objects (one
 * refill, S2 parks full), then (no room left) a new slab.
 * Then a refill that finds no full slab with room (heap.c's roomless: the
 * loop skips the walks it would repeat) takes a new slab S3, and that
 * finding does not outlive the refill: owner frees into a full slab give
 * it room, and draining S3 takes that slab, not a fifth one. */
#include <stdlib.h>

#include "check.h"
#include "internal.h"

#define SIZE 640 /* a class nothing else here uses */
#define MAX 4096

static void *obj[MAX];
static int nobj;

static _nd_slab_t *slab_of(const void *p)
{
	return (_nd_slab_t *)(void *)_nd_slab_of(p);
}

static void *take(void)
{
	void *p = malloc(SIZE);
	CHECK(p != NULL);
	if (nobj < MAX)
		obj[nobj++] = p;
	return p;
}

/* Frees k objects of slab s (from the list of those taken). */
static void give_back(_nd_slab_t *s, int k)
{
	for (int i = 0; i < nobj && k; i++)
		if (obj[i] && slab_of(obj[i]) == s) {
			free(obj[i]);
			obj[i] = NULL;
			k--;
		}
	CHECK(k == 0);
}

/* The class's statistics: objects out (~0: none found), refills. */
static uint64_t class_stat(bool refills)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	int n = _nd_slab_class_stats(st, ND_SLAB_CLASSES);
	for (int i = 0; i < n; i++)
		if (st[i].size == _nd_slab_class_size(_nd_slab_class_of(SIZE)))
			return refills ? st[i].refills : st[i].objects;
	return ~0ull;
}

static uint64_t objects_out(void)
{
	return class_stat(false);
}

/* Takes objects until a third slab serves: s[] gets the three. */
static bool three_slabs(_nd_slab_t *s[3])
{
	int ns = 0;
	while (ns < 3 && nobj < MAX) {
		_nd_slab_t *x = slab_of(take());
		if (ns == 0 || x != s[ns - 1]) {
			for (int i = 0; i < ns; i++)
				CHECK(x != s[i], "a filled slab served again");
			s[ns++] = x;
		}
	}
	CHECK(ns == 3);
	return ns == 3;
}

/* Every object taken is freed: none out. */
static void free_all(void)
{
	for (int i = 0; i < nobj; i++)
		free(obj[i]);
	nobj = 0;
	CHECK(objects_out() == 0, "objects out: %llu", (unsigned long long)objects_out());
}

static void next_partial(void)
{
	_nd_slab_t *s[3] = { NULL, NULL, NULL };
	if (!three_slabs(s))
		return;
	/* S2 carved to its end first: a partial slab behind it is taken
	 * before its next page is carved (heap.c's ready_behind) */
	while (s[2]->carved < s[2]->cap)
		CHECK(slab_of(take()) == s[2]);
	int back = s[0]->cap / 2; /* FULL_BACK */
	give_back(s[0], back);
	CHECK(s[0]->fbias == 0 && s[0]->prev == s[2], "S0 is partial again, behind the current slab");
	uint64_t refills;
	void *p;
	do { /* S2's carving refills too: the count before the last take */
		refills = class_stat(true);
		p = take();
	} while (slab_of(p) == s[2]);
	CHECK(slab_of(p) == s[0], "the partial slab behind the dry one serves next");
	CHECK(class_stat(true) == refills + 1, "one refill");
	CHECK(s[2]->fbias != 0, "the dry one parked full");
	for (int i = 1; i < back; i++)
		CHECK(slab_of(take()) == s[0], "S0's freed objects");
	p = take();
	CHECK(slab_of(p) != s[0] && slab_of(p) != s[1] && slab_of(p) != s[2], "then a new slab");
	free_all();
}

static void roomless(void)
{
	_nd_slab_t *s[3] = { NULL, NULL, NULL };
	if (!three_slabs(s))
		return;
	void *p;
	while (slab_of(p = take()) == s[2])
		;
	_nd_slab_t *s3 = slab_of(p);
	CHECK(s3 != s[0] && s3 != s[1], "no full slab had room: a new slab");
	give_back(s[1], 3);
	while (slab_of(p = take()) == s3)
		;
	CHECK(slab_of(p) == s[1], "the full slab given room serves after the new one");
	free_all();
}

int main(void)
{
	_nd_slab_t *s[3] = { NULL, NULL, NULL };
	if (!three_slabs(s))
		return CHECK_DONE();
	CHECK(s[0]->cap / 2 > 4, "FULL_BACK is above the frees below");
	give_back(s[0], 2);
	give_back(s[1], 4);
	/* drain S2 */
	void *p;
	while (slab_of(p = take()) == s[2])
		;
	CHECK(slab_of(p) == s[1], "the slab with the most room back serves after the dry one");
	for (int i = 0; i < 3; i++)
		CHECK(slab_of(take()) == s[1], "its 3 other objects");
	p = take();
	CHECK(slab_of(p) == s[0], "then the one with 2 back (the dry one has none)");
	CHECK(slab_of(take()) == s[0]);
	p = take();
	CHECK(slab_of(p) != s[0] && slab_of(p) != s[1] && slab_of(p) != s[2], "then a new slab");
	free_all();
	next_partial();
	roomless();
	return CHECK_DONE();
}
