// SPDX-License-Identifier: MIT
/*
 * test_slab_bw_reuse: a flagged free finds its borrowed list and remote
 * counter through its slab's bwo (nd_slab.h, _nd_slab_bw_push), which
 * must follow the slab's class when a kept empty slab serves another
 * class of the same pages (slab.c, _nd_slab_take_empty: set_class). The
 * owner (node 0) empties a slab of class k, which its heap keeps, then
 * mallocs two objects of class c from it; this thread (node 0 too) frees
 * both (the first flags the slab, the second takes the flagged fast
 * path): c's remote_frees grow by 2 and no other class's, and its next
 * two mallocs of c return them, last freed first (a stale bwo, k's,
 * put the second on k's list and counted it in k).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

static pthread_barrier_t bar;
static unsigned ck, cc;     /* the slab's first class and its next */
static const _nd_slab_t *S; /* the reused slab */
static void *theirs[2];
static int made; /* 1: S served c */

static const _nd_slab_t *slab_of(const void *p)
{
	return (const _nd_slab_t *)_nd_slab_of(p);
}

static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	size_t sk = _nd_slab_class_size(ck);
	void *first = malloc(sk);
	S = slab_of(first);
	uint32_t cap = S->cap;
	void **v = malloc((cap + 1) * sizeof *v);
	v[0] = first;
	for (uint32_t i = 1; i <= cap; i++)
		v[i] = malloc(sk); /* S full, the last one in a second slab */
	for (uint32_t i = 0; i <= cap; i++)
		if (slab_of(v[i]) == S)
			free(v[i]); /* S empty, not current: kept */
	for (int i = 0; i < 2; i++)
		theirs[i] = malloc(_nd_slab_class_size(cc));
	made = slab_of(theirs[0]) == S && slab_of(theirs[1]) == S && S->cls == cc;
	borrow_hold(&bar);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(1); /* node 0 too: its frees of theirs are borrowed */
	void *volatile probe = malloc(16);
	free(probe);
	/* two classes of slabs of the same pages, neither used by this thread
	 * yet (so the owner's heap, its own, has no slab of either) */
	for (ck = 1; ck < ND_SLAB_CLASSES; ck++) {
		for (cc = ck + 1; cc < ND_SLAB_CLASSES; cc++) {
			void *a = malloc(_nd_slab_class_size(ck)), *b = malloc(_nd_slab_class_size(cc));
			bool same = slab_of(a)->npages == slab_of(b)->npages;
			free(a);
			free(b);
			if (same)
				break;
		}
		if (cc < ND_SLAB_CLASSES)
			break;
	}
	CHECK(ck < ND_SLAB_CLASSES, "two classes with slabs of the same pages");
	if (ck >= ND_SLAB_CLASSES)
		return CHECK_DONE();
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bar);
	CHECK(made, "the kept slab of class %u (%zu B) served class %u (%zu B)", ck, _nd_slab_class_size(ck), cc,
	      _nd_slab_class_size(cc));
	CHECK_EQ(S->bwo, cc << 4);
	uint64_t before[ND_SLAB_CLASSES], after[ND_SLAB_CLASSES];
	CHECK_EQ(borrow_remote_all(before), ND_SLAB_CLASSES);
	free(theirs[0]);
	CHECK((__atomic_load_n(&S->tp, __ATOMIC_RELAXED) & ND_TP_MIX) != 0, "the first free flagged the slab");
	free(theirs[1]);
	CHECK_EQ(borrow_remote_all(after), ND_SLAB_CLASSES);
	for (unsigned k = 0; k < ND_SLAB_CLASSES; k++)
		CHECK_EQ(after[k] - before[k], k == cc ? 2u : 0u);
	size_t size = _nd_slab_class_size(cc);
	void *a = malloc(size), *b = malloc(size);
	CHECK(a == theirs[1] && b == theirs[0], "class %u: the borrowed objects come back, last freed first", cc);
	free(b);
	free(a);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	return CHECK_DONE();
}
