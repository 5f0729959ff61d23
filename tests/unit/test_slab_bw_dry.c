// SPDX-License-Identifier: MIT
/* A borrowed list that served and ran dry keeps dir[] (issue 11, larson:
 * its dry spells are a malloc or two before the class's next free, which
 * took the first push's slow path to switch dir[] back). Asserted, two
 * threads of node 0 (emulated topology):
 *  - keep:  the first ND_SLAB_BW_DRY refills that find the list empty
 *           leave dir[] on it, active (used cap + 1): the object they got
 *           from the heap's current slab (flagged) goes back onto the
 *           list at its free, and the next malloc pops it; the next dry
 *           refill makes the list idle (used 0, dir[] on the heap's
 *           slab), and a free makes it serve again;
 *  - lend:  while the list of SMALL keeps dir[] and its heap has only new
 *           memory, the borrowed list of BIG lends ND_SLAB_BW_LEND
 *           objects at once: one to the malloc, the others onto the list
 *           of SMALL, whose next mallocs pop them (usable size BIG). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 16, SMALL = 160, BIG = 192 };

static _nd_slab_hot_t *cur_of(unsigned c)
{
	return (_nd_slab_hot_t *)((_nd_heap_t *)_nd_tls->heap)->cur[c];
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(0);
	free(malloc(SMALL)); /* this thread's record and node-0 heap */
	free(malloc(BIG));
	pthread_barrier_t bs, bb;
	pthread_barrier_init(&bs, NULL, 2);
	pthread_barrier_init(&bb, NULL, 2);
	void *ts[N], *tb[N];
	struct borrow_owner os = { ts, N, SMALL, &bs }, ob = { tb, N, BIG, &bb };
	pthread_t ths, thb;
	CHECK(pthread_create(&ths, NULL, borrow_owner, &os) == 0);
	CHECK(pthread_create(&thb, NULL, borrow_owner, &ob) == 0);
	pthread_barrier_wait(&bs);
	pthread_barrier_wait(&bb);

	/* keep */
	unsigned c = _nd_slab_class_of(SMALL), cb = _nd_slab_class_of(BIG);
	_nd_slab_hot_t *b = _nd_thread_bw(_nd_tls, c);
	uint32_t cap = _nd_slab_bw_cap(c);
	for (int i = 0; i < N; i++)
		free(ts[i]); /* borrowed: onto this thread's list of SMALL */
	CHECK(_nd_tls->cdir[c] == b, "the list serves");
	void *got[N];
	CHECK_EQ(borrow_take(got, N, SMALL, ts, N), N);
	CHECK(b->free == NULL && _nd_tls->cdir[c] == b, "served and dry");
	void *x = malloc(SMALL); /* dry refill 1: the heap's slab's free object */
	CHECK(x != NULL && count_in(&x, 1, ts, N) == 0, "from the heap");
	CHECK(_nd_tls->cdir[c] == b, "dir[] kept on the dry list");
	CHECK_EQ(b->used, cap + 1);
	free(x);
	CHECK_EQ(_nd_slab_remote_pending(), 1);
	CHECK(b->free == x, "the free of the heap's object goes onto the list");
	void *y = malloc(SMALL);
	CHECK(y == x, "the next malloc pops it");
	void *z[ND_SLAB_BW_DRY];
	for (int i = 1; i < ND_SLAB_BW_DRY; i++) {
		z[i] = malloc(SMALL); /* dry refills 2 .. ND_SLAB_BW_DRY */
		CHECK(z[i] != NULL && _nd_tls->cdir[c] == b, "dir[] kept (dry refill %d)", i + 1);
	}
	z[0] = malloc(SMALL); /* one more: idle */
	CHECK(z[0] != NULL && _nd_tls->cdir[c] == cur_of(c), "idle: dir[] on the heap's slab");
	CHECK_EQ(b->used, 0);
	/* the heap's slab's listed objects out (fast pops while idle): its
	 * refills have only new memory now */
	void *ex[64];
	int nex = 0;
	while (nex < 64 && cur_of(c)->free)
		ex[nex++] = malloc(SMALL);
	CHECK(cur_of(c)->free == NULL, "the heap's slab of SMALL has nothing listed");
	free(y); /* its slab was flagged: onto the list, which serves again */
	CHECK(_nd_tls->cdir[c] == b && b->free == y, "a free makes the list serve again");
	y = malloc(SMALL);
	CHECK(b->free == NULL && _nd_tls->cdir[c] == b, "popped");

	/* lend: SMALL's list is dry and keeps dir[]; its heap slab has only
	 * new memory; BIG's list holds N */
	for (int i = 0; i < N; i++)
		free(tb[i]);
	CHECK(b->free == NULL && _nd_tls->cdir[c] == b, "dry, kept");
	void *l[ND_SLAB_BW_LEND];
	l[0] = malloc(SMALL);
	CHECK_EQ(count_in(&l[0], 1, tb, N), 1);
	CHECK_EQ(malloc_usable_size(l[0]), BIG);
	CHECK(_nd_tls->cdir[c] == b, "dir[] still on SMALL's list");
	CHECK_EQ(_nd_slab_remote_pending(), N - 1);
	CHECK_EQ(b->used, cap + 1 - (ND_SLAB_BW_LEND - 1));
	for (int i = 1; i < ND_SLAB_BW_LEND; i++) {
		l[i] = malloc(SMALL);
		CHECK_EQ(count_in(&l[i], 1, tb, N), 1);
	}
	CHECK(b->free == NULL, "the lent batch served SMALL's mallocs");
	CHECK_EQ(_nd_slab_remote_pending(), N - ND_SLAB_BW_LEND);
	CHECK(_nd_tls->cdir[cb] == _nd_thread_bw(_nd_tls, cb), "BIG's list still serves BIG");
	free(l[0]);
	void *back = malloc(BIG);
	CHECK(back == l[0], "a lent object's free goes to its own class");

	for (int i = 0; i < N; i++)
		free(got[i]);
	for (int i = 0; i < ND_SLAB_BW_DRY; i++)
		free(z[i]);
	for (int i = 0; i < nex; i++)
		free(ex[i]);
	for (int i = 1; i < ND_SLAB_BW_LEND; i++)
		free(l[i]);
	free(back);
	free(y);

	pthread_barrier_wait(&bs);
	pthread_barrier_wait(&bb);
	pthread_join(ths, NULL);
	pthread_join(thb, NULL);
	pthread_barrier_destroy(&bs);
	pthread_barrier_destroy(&bb);
	return CHECK_DONE();
}
