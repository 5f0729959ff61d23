// SPDX-License-Identifier: MIT
/* Lending borrowed lists (issue 11, wl_xfree 2's peak RSS): when a malloc
 * of class c finds its borrowed list, the exchange and its heap dry but
 * for new memory, an object of the thread's borrowed list of a class up to
 * 3/2 of c's size serves it instead of a new page. Asserted, two threads
 * of node 0 (emulated topology):
 *  - lend:  once this thread's page of 160 B objects is used up, its
 *           mallocs of 160 B get the 192 B objects it borrowed, not a
 *           new page; each keeps its class (usable size 192) and its free
 *           goes back to the 192 B list (the next malloc of 192 B gets it);
 *           that list serves the fast path (dir[]) until it is dry, then
 *           new memory serves again;
 *  - own first: no object is lent while the heap has its own;
 *  - aligned: a power-of-two class is never lent to (its objects stay
 *           aligned to their size), with a lender class's list full. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 16, BIG = 192, SMALL = 160, POW2 = 128, MANY = 64 };

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(0);
	free(malloc(SMALL)); /* this thread's record and node-0 heap: one page of SMALL carved */
	free(malloc(POW2));
	pthread_barrier_t bar, bar2;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_barrier_init(&bar2, NULL, 2);
	void *theirs[N], *theirs_p[N];
	struct borrow_owner ob = { theirs, N, BIG, &bar }, op = { theirs_p, N, SMALL, &bar2 };
	pthread_t th, tp;
	CHECK(pthread_create(&th, NULL, borrow_owner, &ob) == 0);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		free(theirs[i]); /* borrowed: onto this thread's list of BIG */
	CHECK_EQ(_nd_slab_remote_pending(), N);

	/* lend, own first */
	unsigned small = _nd_slab_class_of(SMALL), big = _nd_slab_class_of(BIG);
	void *got[MANY];
	int lent = 0, first_lent = -1;
	for (int i = 0; i < MANY; i++) {
		got[i] = malloc(SMALL);
		CHECK(got[i] != NULL, "malloc");
		if (count_in(&got[i], 1, theirs, N)) {
			CHECK_EQ(malloc_usable_size(got[i]), BIG);
			if (first_lent < 0)
				first_lent = i;
			lent++;
			/* the list of BIG serves SMALL's fast path meanwhile */
			if (lent < N)
				CHECK(_nd_tls->cdir[small] == _nd_thread_bw(_nd_tls, big), "dir[] on the lender's list");
		} else {
			CHECK(first_lent < 0 || i >= first_lent + N, "once lending starts, the list of BIG serves until it is dry");
			CHECK_EQ(malloc_usable_size(got[i]), SMALL);
		}
	}
	CHECK(first_lent >= (int)(4096 / SMALL) - 1, "the carved page of SMALL serves first (first lent: %d)", first_lent);
	CHECK_EQ(lent, N);
	CHECK(_nd_tls->cdir[small] == (_nd_slab_hot_t *)((_nd_heap_t *)_nd_tls->heap)->cur[small],
	      "dry, dir[] is back on the heap's slab");
	if (first_lent >= 0) {
		free(got[first_lent]);
		void *back = malloc(BIG);
		CHECK(back == got[first_lent], "the lent object's free goes to its own class");
		got[first_lent] = back;
	}

	/* aligned: this thread's list of SMALL (a lender of POW2: 160 <= 3/2
	 * 128) holds N objects; POW2's mallocs past its page get none */
	CHECK(pthread_create(&tp, NULL, borrow_owner, &op) == 0);
	pthread_barrier_wait(&bar2);
	for (int i = 0; i < N; i++)
		free(theirs_p[i]);
	void *p2[MANY];
	for (int i = 0; i < MANY; i++) {
		p2[i] = malloc(POW2);
		CHECK(p2[i] != NULL, "malloc");
		CHECK(((uintptr_t)p2[i] & (POW2 - 1)) == 0, "a power-of-two class stays aligned to its size");
		CHECK_EQ(malloc_usable_size(p2[i]), POW2);
	}
	CHECK_EQ(count_in(p2, MANY, theirs_p, N), 0);

	for (int i = 0; i < MANY; i++) {
		free(got[i]);
		free(p2[i]);
	}
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar2);
	pthread_join(th, NULL);
	pthread_join(tp, NULL);
	pthread_barrier_destroy(&bar);
	pthread_barrier_destroy(&bar2);
	return CHECK_DONE();
}
