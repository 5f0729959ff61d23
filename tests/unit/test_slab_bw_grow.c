// SPDX-License-Identifier: MIT
/* A borrowed list's cap grows from its class's first (128 KiB above 1
 * KiB) to the class's most (512 KiB) where the thread's demand asks
 * (slab.c, bw_pace), and a new list of the class on the node starts
 * there. Two emulated nodes, every thread on node 0:
 *  - full:  a thread frees another's 16 KiB objects (first cap 8, most
 *           32): its overflows pass half lists to the node's exchange
 *           until its 8 slots are full, then the list keeps them, its cap
 *           doubled at each overflow (8 -> 16 -> 32);
 *  - start: a new thread's first borrowed 16 KiB object: its list starts
 *           at 32;
 *  - churn: a thread that frees 24 borrowed 8 KiB objects (first cap 16)
 *           and mallocs them back, again and again: each free round goes
 *           past the cap (half to the exchange) after a malloc round that
 *           found the list empty (the exchange gave them back): the list
 *           grows at the first such overflow that comes soon after the
 *           last (bw_pace: about 8 us; the rounds take about 1 us, the
 *           loop ends when it grew); it then holds all 24, none in the
 *           exchange. Only frees (test_slab_bw_big) keep the first cap;
 *  - wanted: the same with a refill that found the list empty between
 *           two slow overflows: its objects were wanted, it keeps 32;
 *  - slow:  a new thread's 8 KiB list starts at the node's 32; its
 *           overflows come slowly (a fake clock: 1 ms a reading, so no
 *           timing assumption), with no refill between: the list halves
 *           back to its first cap (16), and the node's record with it
 *           (bw_shrink). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { NF = 120, BIG = 16384, MID = 8192, NC = 24, NS = 64, NW = 33, ROUNDS = 100000 };

static void *big[NF + 1], *mid[NC + NS + NW];
static struct borrow_freed fr;
static uint32_t full_cap, start_cap, churn_cap0, churn_cap;
static unsigned churn_xfer, churn_pending;
static long churn_rounds;
static uint32_t slow_cap0, slow_cap, want_cap0, want_cap;
static bool want_over;
static unsigned slow_xfer;
static uint64_t fake_ns;

static uint64_t fake_clock(void)
{
	return __atomic_add_fetch(&fake_ns, 1000000, __ATOMIC_RELAXED);
}

static void *full(void *arg)
{
	(void)arg;
	fr = borrow_free_all(big, NF, BIG);
	full_cap = _nd_slab_bw_cap_of(_nd_tls, _nd_slab_class_of(BIG));
	return NULL;
}

static void *start(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	free(malloc(BIG)); /* a heap of its own (its own object: not borrowed) */
	free(big[NF]);     /* borrowed: the list's first push */
	start_cap = _nd_slab_bw_cap_of(_nd_tls, _nd_slab_class_of(BIG));
	return NULL;
}

static void *churn(void *arg)
{
	(void)arg;
	unsigned c = _nd_slab_class_of(MID);
	void *v[NC];
	nd_emulate_cpu(1);
	free(malloc(MID)); /* a heap of its own */
	for (int i = 0; i < NC; i++)
		v[i] = mid[i];
	churn_cap0 = _nd_slab_bw_cap_of(_nd_tls, c);
	long r = 0;
	for (; r < ROUNDS && _nd_slab_bw_cap_of(_nd_tls, c) == churn_cap0; r++) {
		for (int i = 0; i < NC; i++)
			free(v[i]);
		for (int i = 0; i < NC; i++)
			v[i] = malloc(MID);
	}
	churn_rounds = r;
	churn_cap = _nd_slab_bw_cap_of(_nd_tls, c);
	unsigned x0 = _nd_slab_xfer_count(0), p0 = _nd_slab_remote_pending();
	for (int i = 0; i < NC; i++)
		free(v[i]); /* within the grown cap: all kept */
	churn_xfer = _nd_slab_xfer_count(0) - x0;
	churn_pending = _nd_slab_remote_pending() - p0;
	for (int i = 0; i < NC; i++)
		v[i] = malloc(MID);
	for (int i = 0; i < NC; i++)
		free(v[i]);
	return NULL;
}

static void *wanted(void *arg)
{
	(void)arg;
	unsigned c = _nd_slab_class_of(MID);
	void *v[2 * NW];
	nd_emulate_cpu(1);
	free(malloc(MID));       /* a heap of its own */
	_nd_slab_flush_remote(); /* the exchange empty, the list too */
	for (int i = 0; i < NW; i++)
		free(mid[NC + NS + i]); /* the 33rd goes past the cap (32): half on */
	want_cap0 = _nd_slab_bw_cap_of(_nd_tls, c);
	uint16_t when = _nd_tls->bwl[c].when;
	for (int i = 0; i < 2 * NW; i++)
		v[i] = malloc(MID); /* the list runs dry */
	for (int i = 0; i < 2 * NW; i++)
		free(v[i]); /* past the cap again, slowly */
	want_over = when && _nd_tls->bwl[c].when != when;
	want_cap = _nd_slab_bw_cap_of(_nd_tls, c);
	return NULL;
}

static void *slow(void *arg)
{
	(void)arg;
	unsigned c = _nd_slab_class_of(MID);
	nd_emulate_cpu(1);
	free(malloc(MID)); /* a heap of its own */
	_nd_slab_flush_remote();
	unsigned x0 = _nd_slab_xfer_count(0);
	free(mid[NC]); /* the list's first push: it starts at the node's cap */
	slow_cap0 = _nd_slab_bw_cap_of(_nd_tls, c);
	for (int i = 1; i < NS; i++)
		free(mid[NC + i]);
	slow_cap = _nd_slab_bw_cap_of(_nd_tls, c);
	slow_xfer = _nd_slab_xfer_count(0) - x0;
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	unsigned cb = _nd_slab_class_of(BIG), cm = _nd_slab_class_of(MID);
	CHECK_EQ(_nd_slab_cls_bw0[cb], 8);
	CHECK_EQ(_nd_slab_bw_cap(cb), 32);
	CHECK_EQ(_nd_slab_cls_bw0[cm], 16);
	CHECK_EQ(_nd_slab_bw_cap(cm), 64);
	pthread_barrier_t bo, bm;
	pthread_barrier_init(&bo, NULL, 2);
	pthread_barrier_init(&bm, NULL, 2);
	struct borrow_owner ob = { big, NF + 1, BIG, &bo }, om = { mid, NC + NS + NW, MID, &bm };
	pthread_t o, m, f;
	CHECK(pthread_create(&o, NULL, borrow_owner, &ob) == 0);
	CHECK(pthread_create(&m, NULL, borrow_owner, &om) == 0);
	pthread_barrier_wait(&bo); /* big[] made */
	pthread_barrier_wait(&bm); /* mid[] made */

	/* full */
	CHECK(pthread_create(&f, NULL, full, NULL) == 0);
	pthread_join(f, NULL);
	CHECK_EQ(full_cap, 32);
	CHECK_EQ(fr.xfer, 8 * 4); /* 8 half lists of a list at its first cap */
	CHECK(fr.pending >= 32, "the list kept its grown cap's objects (%u)", fr.pending);
	CHECK_EQ(__atomic_load_n(&_nd_meta_node[0].bwcap[cb], __ATOMIC_RELAXED), 32);

	/* start */
	CHECK(pthread_create(&f, NULL, start, NULL) == 0);
	pthread_join(f, NULL);
	CHECK_EQ(start_cap, 32);

	/* churn */
	CHECK(pthread_create(&f, NULL, churn, NULL) == 0);
	pthread_join(f, NULL);
	CHECK_EQ(churn_cap0, 16);
	CHECK(churn_rounds < ROUNDS, "the list grew (%ld rounds)", churn_rounds);
	CHECK_EQ(churn_cap, 32);
	CHECK_EQ(churn_xfer, 0);
	CHECK_EQ(churn_pending, NC);
	CHECK_EQ(__atomic_load_n(&_nd_meta_node[0].bwcap[cm], __ATOMIC_RELAXED), 32);

	/* wanted */
	_nd_slab_bw_clock = fake_clock; /* read by the threads made after */
	CHECK(pthread_create(&f, NULL, wanted, NULL) == 0);
	pthread_join(f, NULL);
	CHECK_EQ(want_cap0, 32);
	CHECK(want_over, "the list went past its cap again");
	CHECK_EQ(want_cap, 32);
	CHECK_EQ(__atomic_load_n(&_nd_meta_node[0].bwcap[cm], __ATOMIC_RELAXED), 32);

	/* slow */
	CHECK(pthread_create(&f, NULL, slow, NULL) == 0);
	pthread_join(f, NULL);
	_nd_slab_bw_clock = NULL;
	CHECK_EQ(slow_cap0, 32);
	CHECK(slow_xfer >= 32, "its overflows passed half lists on (%u objects)", slow_xfer);
	CHECK_EQ(slow_cap, 16);
	CHECK_EQ(__atomic_load_n(&_nd_meta_node[0].bwcap[cm], __ATOMIC_RELAXED), 16);

	pthread_barrier_wait(&bo);
	pthread_barrier_wait(&bm);
	pthread_join(o, NULL);
	pthread_join(m, NULL);
	return CHECK_DONE();
}
