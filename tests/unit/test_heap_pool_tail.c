// SPDX-License-Identifier: MIT
/* The pools of parked heaps keep their tail (heap.c, pool_tail): a sweep's
 * turn takes the head and puts it back at the tail without walking the
 * pool (the walk made a sweep of n parked heaps O(n^2): thousands of
 * threads exiting together). What must hold:
 *  - N threads that lived together park N heaps; the node pool's tail is
 *    its last heap;
 *  - a sweep (main frees their objects: remote frees, the pool is dirty;
 *    then a class main never used needs a slab) turns every heap once and
 *    leaves the pool in the same order, the tail its last heap; so does
 *    malloc_trim (every parked heap in turn);
 *  - a thread adopts the head; the tail stays;
 *  - the policy pool: a heap adopted from its tail (pool_pick, the oldest
 *    parked heap of its key) moves the tail to the heap before it, so
 *    that malloc_trim's turns keep every other parked heap in the pool
 *    (a stale tail, the adopted heap, would link them after it: out of
 *    the pool, and their threads would make new heaps).
 * The pools are read under their locks. No timing: the O(1) turn is
 * what the tail gives (docs/malloc.md, "Parked heaps"). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "pin_fixture.h"

enum { N = 256 };
static void *held[N];
static pthread_barrier_t all;
static atomic_int turns;

static void hook(void)
{
	atomic_fetch_add(&turns, 1);
}

static void *worker(void *arg)
{
	held[(long)arg] = malloc(100);
	pthread_barrier_wait(&all); /* every heap in use at once: N heaps */
	return NULL;
}

static void *adopter(void *arg)
{
	(void)arg;
	free(malloc(100));
	return NULL;
}

/* The node whose pool holds parked heaps (main is pinned: one). */
static int pool_node(void)
{
	for (int i = 0; i < ND_MAX_NODES; i++)
		if (__atomic_load_n(&_nd_meta_node[i].pool, __ATOMIC_RELAXED))
			return i;
	return -1;
}

/* The node pool's heaps in order into v (up to N + 1); their count. Checks
 * that the tail is the last one. */
static int snapshot(int node, _nd_heap_t **v, const char *when)
{
	_nd_meta_node_t *m = &_nd_meta_node[node];
	int n = 0;
	_nd_lock(&m->lock);
	_nd_heap_t *last = NULL;
	for (_nd_heap_t *h = m->pool; h; h = h->pool_next) {
		if (n <= N)
			v[n] = h;
		n++;
		last = h;
	}
	_nd_heap_t *tail = m->pool_tail;
	_nd_unlock(&m->lock);
	CHECK(tail == last, "%s: tail %p, last heap %p (%d heaps)", when, (void *)tail, (void *)last, n);
	return n;
}

static void same_order(_nd_heap_t **a, _nd_heap_t **b, int n, const char *when)
{
	int diff = 0;
	for (int i = 0; i < n; i++)
		diff += a[i] != b[i];
	CHECK(diff == 0, "%s: %d of %d heaps moved", when, diff, n);
}

static void run(void *(*fn)(void *))
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0, "pthread_create");
	pthread_join(t, NULL);
}

/* The policy pool, in one thread: policy heaps P0..P9 (8 per thread: P8
 * parks P0's heap, P9 P1's: the pool is P1, P0, P0 its tail); then P0
 * again: P2's heap is parked (the head) and P0's adopted from the tail.
 * malloc_trim turns P2 and P1 (put back at the tail); P1, P2 and P3 again
 * adopt the heaps they had. */
static const char *const specs[] = { "interleave:0@8K",  "interleave:0@16K",  "interleave:0@32K", "interleave:0@64K",
				     "interleave:0@128K", "interleave:0@256K", "interleave:0@512K", "interleave:0@1M",
				     "interleave:0@2M",  "interleave:0@4M" };
enum { NP = sizeof specs / sizeof specs[0] };

static _nd_heap_t *policy_heap(const nd_policy_t *p)
{
	void *q = nd_malloc_policy(64, p);
	CHECK(q != NULL, "nd_malloc_policy");
	nd_free(q);
	_nd_thread_t *t = _nd_tls;
	return t->nph ? t->ph[t->nph - 1] : NULL;
}

static void *policies(void *arg)
{
	(void)arg;
	char err[256];
	nd_policy_t p[NP];
	_nd_heap_t *h[NP];
	for (int i = 0; i < NP; i++) {
		CHECK(nd_policy_parse(specs[i], &p[i], err, sizeof err) == 0, "%s: %s", specs[i], err);
		h[i] = policy_heap(&p[i]);
		CHECK(h[i] && h[i]->pol, "%s: a policy heap", specs[i]);
	}
	_nd_heap_t *h0 = policy_heap(&p[0]);
	CHECK(h0 == h[0], "P0 again adopts its parked heap (the pool's tail): %p, was %p", (void *)h0, (void *)h[0]);
	malloc_trim(0);
	for (int i = 1; i <= 3; i++) {
		_nd_heap_t *x = policy_heap(&p[i]);
		CHECK(x == h[i], "%s again after malloc_trim adopts its parked heap: %p, was %p", specs[i], (void *)x,
		      (void *)h[i]);
	}
	return NULL;
}

int main(void)
{
	pin_here(); /* every thread on main's CPU: one node's pool */
	free(malloc(16));
	pthread_barrier_init(&all, NULL, N);
	pthread_t t[N];
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 << 10);
	for (long i = 0; i < N; i++)
		CHECK(pthread_create(&t[i], &at, worker, (void *)i) == 0, "pthread_create %ld", i);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);

	static _nd_heap_t *a[N + 1], *b[N + 1];
	int node = pool_node();
	CHECK(node >= 0, "parked heaps in a node pool");
	if (node < 0)
		return CHECK_DONE();
	int n = snapshot(node, a, "parked");
	CHECK(n == N, "%d parked heaps, want %d", n, N);

	for (int i = 0; i < N; i++)
		free(held[i]);
	_nd_slab_flush_remote();
	_nd_heap_sweep_hook = hook;
	void *p = malloc(3000); /* a class main never used: a new slab, the sweep first */
	_nd_heap_sweep_hook = NULL;
	CHECK(atomic_load(&turns) == n, "the sweep turned %d heaps, want %d", atomic_load(&turns), n);
	free(p);
	CHECK(snapshot(node, b, "after the sweep") == n, "the sweep keeps every heap in the pool");
	same_order(a, b, n, "after the sweep");

	malloc_trim(0);
	CHECK(snapshot(node, b, "after malloc_trim") == n, "malloc_trim keeps every heap in the pool");
	same_order(a, b, n, "after malloc_trim");

	run(adopter); /* adopts the head, parks it again at the head */
	CHECK(snapshot(node, b, "after an adoption") == n, "an adoption and an exit: %d heaps", n);
	same_order(a, b, n, "after an adoption");

	run(policies);
	return CHECK_DONE();
}
