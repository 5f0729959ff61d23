// SPDX-License-Identifier: MIT
/*
 * test_slab_bw_classes: a flagged free finds its borrowed list and its
 * remote counter through its slab's bwo (its class in the thread record
 * << 4, nd_slab.h's _nd_slab_bw_push) in every class. For each class,
 * another thread of the node makes two objects (the twins of 8192 and
 * 16384 by aligned_alloc); this thread frees them (the first flags the
 * slab, the second takes the flagged fast path): the remote_frees of the
 * class's record class (a twin's: its size's) grow by exactly 2 and no
 * other class's do, and this thread's next two mallocs of the size return
 * the two objects, last freed first (a twin's serve its size's mallocs).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

static void *theirs[ND_SLAB_CLASSES][2];
static pthread_barrier_t bar;

static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		for (int i = 0; i < 2; i++)
			theirs[c][i] = c < ND_SLAB_SIZED ? malloc(_nd_slab_class_size(c))
							  : aligned_alloc(4096, _nd_slab_class_size(c));
	borrow_hold(&bar);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bar);
	nd_emulate_cpu(1); /* node 0 too: its frees of theirs are borrowed */
	void *volatile first = malloc(16);
	free(first);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		size_t size = _nd_slab_class_size(c);
		unsigned tc = _nd_slab_cls_tc[c];
		CHECK_EQ(_nd_slab_of(theirs[c][0])->cls, c);
		if (c < ND_SLAB_SIZED)
			CHECK_EQ(_nd_slab_class_of(size), c);
		else
			CHECK(tc < ND_SLAB_SIZED && _nd_slab_class_size(tc) == size, "twin %u: record class %u", c, tc);
		uint64_t before[ND_SLAB_CLASSES], after[ND_SLAB_CLASSES];
		CHECK_EQ(borrow_remote_all(before), ND_SLAB_CLASSES);
		free(theirs[c][0]);
		CHECK((_nd_slab_of(theirs[c][1])->tp & ND_TP_MIX) != 0, "the first free flagged the slab");
		free(theirs[c][1]);
		CHECK_EQ(borrow_remote_all(after), ND_SLAB_CLASSES);
		for (unsigned k = 0; k < ND_SLAB_CLASSES; k++)
			CHECK_EQ(after[k] - before[k], k == tc ? 2u : 0u);
		void *a = malloc(size), *b = malloc(size);
		CHECK(a == theirs[c][1] && b == theirs[c][0], "class %u (%zu B): the borrowed objects come back, last freed first", c,
		      size);
		free(b);
		free(a);
	}
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	return CHECK_DONE();
}
