// SPDX-License-Identifier: MIT
/* make tsan: a slab that moves to a heap made a moment before (heap.c's
 * steal) is published with its heap. A allocates objects of one class and
 * hands one to B; C makes its heap while A runs; A exits (its heap parks
 * with the slab partial); C steals the slab (s->heap = C's new heap) and
 * tells B with a relaxed flag, which orders nothing for ThreadSanitizer;
 * B frees the object, and remote_send reads the new heap's fields (owner,
 * node, pol). Only s->heap's release store (steal) and acquire load
 * (remote_send) order meta.c's zeroing and heap_take's writes of the new
 * heap before those reads: with relaxed ones TSan reports the race. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "nodalloc.h"

enum { SZ = 64, N = 40 };
static void *obj;          /* A -> B (release/acquire) */
static int b_ready;        /* B -> main: B has its heap and record */
static int c_ready;        /* C -> A: C's heap exists (release/acquire) */
static int a_gone;         /* main -> C: A is joined, its heap parked */
static int stolen;         /* C -> B: relaxed, no order */
static void *c_obj;        /* C's object of the class (read after the joins) */

static void spin(int *f, int order)
{
	while (!__atomic_load_n(f, order))
		sched_yield();
}

static void *thread_a(void *arg)
{
	(void)arg;
	void *p[N];
	for (int i = 0; i < N; i++)
		p[i] = nd_malloc(SZ);
	__atomic_store_n(&obj, p[N / 2], __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++)
		if (i != N / 2)
			nd_free(p[i]);
	spin(&c_ready, __ATOMIC_ACQUIRE); /* C made its heap before A's parks */
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	/* B's heap and record before C's heap: taking a lock after C made
	 * it (node lock, thread lock) would order C's writes before B too */
	nd_free(nd_malloc(SZ));
	__atomic_store_n(&b_ready, 1, __ATOMIC_RELEASE);
	void *o;
	while (!(o = __atomic_load_n(&obj, __ATOMIC_ACQUIRE)))
		sched_yield();
	spin(&stolen, __ATOMIC_RELAXED);
	nd_free(o); /* home to C's heap (now, or at B's exit) */
	return NULL;
}

static void *thread_c(void *arg)
{
	(void)arg;
	void *q = nd_malloc(1024); /* C's node heap: new, A's is not parked yet */
	__atomic_store_n(&c_ready, 1, __ATOMIC_RELEASE);
	spin(&a_gone, __ATOMIC_ACQUIRE);
	c_obj = nd_malloc(SZ); /* no slab of the class: steals A's */
	__atomic_store_n(&stolen, 1, __ATOMIC_RELAXED);
	nd_free(q);
	return NULL;
}

int main(void)
{
	pthread_t a, b, c;
	CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
	spin(&b_ready, __ATOMIC_ACQUIRE);
	CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
	CHECK(pthread_create(&c, NULL, thread_c, NULL) == 0);
	pthread_join(a, NULL);
	__atomic_store_n(&a_gone, 1, __ATOMIC_RELEASE);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	/* C's object came from A's slab (the steal happened): nearby */
	uintptr_t d = (uintptr_t)c_obj > (uintptr_t)obj ? (uintptr_t)c_obj - (uintptr_t)obj : (uintptr_t)obj - (uintptr_t)c_obj;
	CHECK(d < 16384, "C's object %p is in A's slab (B's object %p)", c_obj, obj);
	nd_free(c_obj);
	return CHECK_DONE();
}
