// SPDX-License-Identifier: MIT
/* Borrowed lists of classes above 1 KiB keep up to 512 KiB of objects (at
 * most 64), not 16 KiB: a thread that frees another thread's mid-size
 * objects kept 2-12 of them and passed the rest to the exchange or home,
 * and its next mallocs took cold ones (a held-out mixed-size threaded
 * benchmark, sizes 8..16000 B: 1.23x tcmalloc's time, about 1.0x with 128
 * KiB; bench larsonbig wanted 512 KiB: docs/benchmarks.md). A list starts
 * at 128 KiB (8 objects of 16 KiB) and grows to 512 KiB where its demand
 * asks (test_slab_bw_grow); a thread that only frees keeps 8, passes the
 * rest to the node's exchange in half lists (none home), and its next
 * mallocs get them all back (from its list, then the exchange). 4 KiB
 * starts at 32 objects and keeps 64 at most; classes up to 1 KiB keep 32
 * KiB from the start (1 KiB: 32 objects). Two emulated nodes; the owner
 * and the freer on node 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 32, FIRST = 8, SIZE = 16384, MID = 4096, SMALL = 1024 };

static void *theirs[N];
static pthread_barrier_t bo;
static struct borrow_freed fr;
static int f_got;
static uint32_t f_cap;

static void *freer(void *arg)
{
	(void)arg;
	fr = borrow_free_all(theirs, N, SIZE);
	f_cap = _nd_slab_bw_cap_of(_nd_tls, _nd_slab_class_of(SIZE));
	void *got[N];
	f_got = borrow_take(got, N, SIZE, theirs, N);
	for (int i = 0; i < N; i++)
		free(got[i]);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	CHECK_EQ(_nd_slab_bw_cap(_nd_slab_class_of(SMALL)), 32);
	CHECK_EQ(_nd_slab_cls_bw0[_nd_slab_class_of(SMALL)], 32);
	CHECK_EQ(_nd_slab_bw_cap(_nd_slab_class_of(MID)), 64);
	CHECK_EQ(_nd_slab_cls_bw0[_nd_slab_class_of(MID)], 32);
	CHECK_EQ(_nd_slab_bw_cap(_nd_slab_class_of(SIZE)), N);
	CHECK_EQ(_nd_slab_cls_bw0[_nd_slab_class_of(SIZE)], FIRST);
	pthread_barrier_init(&bo, NULL, 2);
	struct borrow_owner ow = { theirs, N, SIZE, &bo };
	pthread_t o, f;
	CHECK(pthread_create(&o, NULL, borrow_owner, &ow) == 0);
	pthread_barrier_wait(&bo); /* theirs made */
	CHECK(pthread_create(&f, NULL, freer, NULL) == 0);
	pthread_join(f, NULL);
	CHECK_EQ(f_cap, FIRST);          /* frees only: the list did not grow */
	CHECK_EQ(fr.pending, FIRST);     /* on the freer's borrowed list */
	CHECK_EQ(fr.xfer, N - FIRST);    /* the rest in the exchange, 4 a list */
	CHECK_EQ(fr.sent, 0);            /* none sent home */
	CHECK_EQ(f_got, N);              /* its next mallocs reuse them all */
	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
	return CHECK_DONE();
}
