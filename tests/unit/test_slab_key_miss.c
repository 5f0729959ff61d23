// SPDX-License-Identifier: MIT
/*
 * A malloc that misses its CPU key (a migration, a policy change: heap.c
 * malloc_slow) refills as a keyed malloc does: it pops the thread's
 * borrowed list, and a malloc whose class has no slab takes a span of
 * smaller free slots, before a fresh slab. Before, the miss went to
 * heap_refill directly: a fresh slab, the borrowed objects and free slots
 * left (tests/pin_fixture.h was the workaround). The miss is forced by
 * switching the emulated CPU to the other CPU of the same node (the
 * thread's heap stays the node's): that invalidates the key exactly as a
 * migration does (thread.c, _nd_thread_invalidate).
 *   borrowed: another thread's 64 B objects, freed here (node 0, owner
 *   alive), are on this thread's borrowed list; after the switch the
 *   next malloc(64) returns one of them (the list's last pushed).
 *   span: 128 B slabs a quarter full (the three objects after each kept
 *   one freed), class 256 without a slab; after the switch malloc(250)
 *   is a span of two 128 B slots (its page's slab is of 128 B).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "borrow_fixture.h"
#include "check.h"

#define N 64
static void *theirs[N];
static pthread_barrier_t bar;

static bool t_key_missed(void)
{
	return !_nd_slab_key_ok(_nd_tls, &_nd_tls->key);
}

static size_t slab_size_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? ((const _nd_slab_t *)d->user)->size : 0;
}

static void check_borrowed(void)
{
	struct borrow_owner o = { theirs, N, 64, &bar };
	pthread_t owner;
	pthread_barrier_init(&bar, NULL, 2);
	CHECK(pthread_create(&owner, NULL, borrow_owner, &o) == 0);
	pthread_barrier_wait(&bar); /* its objects are made */
	struct borrow_freed f = borrow_free_all(theirs, N, 64); /* on CPU 1 */
	CHECK(f.pending > 0, "the frees were borrowed (%u pending)", f.pending);
	nd_emulate_cpu(0); /* same node: the key misses, the heap stays */
	CHECK(t_key_missed(), "the switch invalidated the key");
	void *p = malloc(64);
	CHECK(count_in(&p, 1, theirs, N) == 1, "after a key miss malloc(64) = %p, not a borrowed object", p);
	free(p);
	pthread_barrier_wait(&bar); /* the owner may exit */
	pthread_join(owner, NULL);
	pthread_barrier_destroy(&bar);
	_nd_slab_flush_remote();
}

#define K 2048 /* 128 B objects: 8 slabs of 256 */
static void *obj[K];

static void check_span(void)
{
	nd_emulate_cpu(2); /* node 1: a heap without other tests' slabs */
	for (int i = 0; i < K; i++) {
		obj[i] = malloc(120);
		CHECK(obj[i] != NULL);
		memset(obj[i], i & 0xff, 120);
	}
	for (int i = 0; i < K; i++)
		if (i % 4) {
			free(obj[i]);
			obj[i] = NULL;
		}
	nd_emulate_cpu(3);
	CHECK(t_key_missed(), "the switch invalidated the key");
	void *p = malloc(250);
	CHECK(p && slab_size_of(p) == 128, "after a key miss malloc(250) = %p from a slab of %zu B, not a span of 128 B slots",
	      p, p ? slab_size_of(p) : 0);
	free(p);
	for (int i = 0; i < K; i++)
		free(obj[i]);
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(1);
	void *volatile probe = malloc(16);
	free(probe);
	check_borrowed();
	check_span();
	return CHECK_DONE();
}
