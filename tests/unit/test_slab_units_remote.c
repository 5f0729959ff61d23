// SPDX-License-Identifier: MIT
/* The slab purge's units (slab_purge.c: whole 16 KiB units of a slab's
 * free pages back to the page level) while other threads free objects of
 * the slab. Each round the owner takes 48 objects of 10 KiB (32-page
 * slabs of 12, 2.5 pages each: a lost object can start in a page an
 * object out keeps), hands two of every slab's twelve to the remote
 * threads, keeps two, frees the rest and purges its heap while the remote
 * frees come in; then objects of the class, of other classes and large
 * callocs take the pages given back. Checked: every object keeps its
 * stamp until freed (no page of a live object went back, nothing handed
 * out twice over a live one), no two live objects overlap, calloc reads
 * zero, the page checker passes at the end, and a slab gives units at
 * least once. Also run under ThreadSanitizer (tests/tsan/part.cmake); a
 * thread reading nd_stats_classes meanwhile is tests/tsan/tsan_stats_classes.c's. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { ROUNDS = 12, NOBJ = 48, SZ = 10000, NREM = 2, NSAME = 12, NSMALL = 96, NBIG = 6, BIG = 40000 };

static void *handed[NREM][NOBJ]; /* owner -> remote thread r */
static int hn[NREM];             /* objects in handed[r] (release: published) */
static int taken[NREM];          /* remote r took them (release) */
static int done;                 /* owner finished (release) */
static unsigned long bad_remote; /* stamps a remote thread found wrong */

static void stamp(void *p, size_t n, unsigned v) { memset(p, (int)(v & 0xff), n); }

static bool holds(const void *p, size_t n, unsigned v)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i] != (unsigned char)(v & 0xff))
			return false;
	return true;
}

/* stamp of object k of round r */
static unsigned sval(int r, int k) { return (unsigned)(r * 53 + k * 7 + 1); }

static void *remote(void *arg)
{
	int me = (int)(intptr_t)arg, round = 0;
	for (;;) {
		int n;
		while (!(n = __atomic_load_n(&hn[me], __ATOMIC_ACQUIRE))) {
			if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
				return NULL;
			sched_yield();
		}
		for (int i = 0; i < n; i++) {
			void *p = handed[me][i];
			unsigned v = (unsigned)(uintptr_t)handed[me][NOBJ - 1 - i];
			if (!holds(p, SZ, v))
				__atomic_fetch_add(&bad_remote, 1, __ATOMIC_RELAXED);
			free(p);
		}
		__atomic_store_n(&hn[me], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&taken[me], ++round, __ATOMIC_RELEASE);
	}
}

typedef struct {
	char *p;
	size_t n;
	unsigned v;
} live_t;

static int by_addr(const void *a, const void *b)
{
	const live_t *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

static live_t live[NOBJ + NSAME + NSMALL + NBIG];

static void *owner(void *arg)
{
	(void)arg;
	void *o[NOBJ], *small[NSMALL], *big[NBIG];
	unsigned gave = 0, nonzero = 0, lost = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < NOBJ; k++) {
			o[k] = malloc(SZ);
			CHECK(o[k] != NULL);
			stamp(o[k], SZ, sval(r, k));
		}
		/* per slab of 12: objects 3 and 8 to the remote threads, 0 and 11
		 * kept (object 1, in page 2 with object 0, is lost when 4-7 go) */
		int nh[NREM] = { 0 };
		for (int k = 0; k < NOBJ; k++) {
			_nd_slab_t *s = (_nd_slab_t *)_nd_page_desc(o[k])->user;
			uint64_t i = (uint64_t)((char *)o[k] - s->start) / s->size;
			int t = i == 3 ? 0 : i == 8 ? 1 : -1;
			if (t >= 0) {
				handed[t][nh[t]] = o[k];
				handed[t][NOBJ - 1 - nh[t]] = (void *)(uintptr_t)sval(r, k);
				nh[t]++;
				o[k] = NULL;
			}
		}
		for (int t = 0; t < NREM; t++)
			__atomic_store_n(&hn[t], nh[t], __ATOMIC_RELEASE);
		_nd_heap_t *h = NULL;
		int nlive = 0;
		for (int k = 0; k < NOBJ; k++) {
			if (!o[k])
				continue;
			_nd_slab_t *s = (_nd_slab_t *)_nd_page_desc(o[k])->user;
			uint64_t i = (uint64_t)((char *)o[k] - s->start) / s->size;
			h = s->heap;
			if (i == 0 || i == 11) {
				live[nlive++] = (live_t){ o[k], SZ, sval(r, k) };
				continue;
			}
			free(o[k]);
		}
		/* the pass while remote frees arrive */
		CHECK(h != NULL);
		if (h) {
			_nd_slab_purge_heap(h);
			for (int k = 0; k < nlive; k++) {
				_nd_slab_t *s = (_nd_slab_t *)_nd_page_desc(live[k].p)->user;
				gave += s->gone != 0;
				lost += s->lost;
			}
		}
		for (int i = 0; i < NSAME; i++) { /* never a lost one */
			void *p = malloc(SZ);
			CHECK(p != NULL);
			stamp(p, SZ, sval(r, 300 + i));
			live[nlive++] = (live_t){ p, SZ, sval(r, 300 + i) };
		}
		for (int i = 0; i < NSMALL; i++) {
			size_t n = 1500 + (size_t)(i * 97) % 2600;
			small[i] = malloc(n);
			CHECK(small[i] != NULL);
			stamp(small[i], n, sval(r, 100 + i));
			live[nlive++] = (live_t){ small[i], n, sval(r, 100 + i) };
			if (i % 16 == 0 && h)
				_nd_slab_purge_heap(h);
		}
		for (int i = 0; i < NBIG; i++) {
			big[i] = calloc(1, BIG);
			CHECK(big[i] != NULL);
			nonzero += !holds(big[i], BIG, 0);
			stamp(big[i], BIG, sval(r, 200 + i));
			live[nlive++] = (live_t){ big[i], BIG, sval(r, 200 + i) };
		}
		qsort(live, (size_t)nlive, sizeof live[0], by_addr);
		for (int k = 0; k < nlive; k++) {
			CHECK(holds(live[k].p, live[k].n, live[k].v), "live object %p (%zu B) overwritten", (void *)live[k].p,
			      live[k].n);
			if (k + 1 < nlive)
				CHECK(live[k].p + live[k].n <= live[k + 1].p, "objects %p (%zu B) and %p overlap",
				      (void *)live[k].p, live[k].n, (void *)live[k + 1].p);
		}
		for (int k = 0; k < nlive; k++)
			free(live[k].p);
		/* the remote threads are done with this round's objects */
		for (int t = 0; t < NREM; t++)
			while (__atomic_load_n(&taken[t], __ATOMIC_ACQUIRE) < r + 1)
				sched_yield();
	}
	CHECK_EQ(nonzero, 0);
	CHECK(gave > 0 && lost > 0, "no slab gave units (%u slabs, %u objects lost)", gave, lost);
	return NULL;
}

int main(void)
{
	free(malloc(1)); /* the init */
	if (_nd_slab_check) {
		printf("test_slab_units_remote: check mode purges nothing: skipped\n");
		return 0;
	}
	pthread_t rt[NREM], ot;
	int rc = 0; /* checked after the joins: CHECK's counters are the owner's meanwhile */
	for (int t = 0; t < NREM; t++)
		rc |= pthread_create(&rt[t], NULL, remote, (void *)(intptr_t)t);
	rc |= pthread_create(&ot, NULL, owner, NULL);
	pthread_join(ot, NULL);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int t = 0; t < NREM; t++)
		pthread_join(rt[t], NULL);
	CHECK_EQ(rc, 0);
	CHECK_EQ(bad_remote, 0);
	char err[256];
	for (int n = 0; n < _nd_page_g.node_limit; n++)
		if (_nd_page_g.arenas[n].usable)
			CHECK(_nd_page_check(n, err, sizeof err) == 0, "node %d: %s", n, err);
	return CHECK_DONE();
}
