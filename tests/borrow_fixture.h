// SPDX-License-Identifier: MIT
/* Shared by the borrowed-list tests (test_slab_borrow*, test_slab_idle_owner):
 * two emulated nodes of two CPUs each, and a count of shared pointers. */
#ifndef ND_BORROW_FIXTURE_H
#define ND_BORROW_FIXTURE_H
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* node 0: CPUs 0-1, node 1: CPUs 2-3 */
static inline int borrow_emulate(void)
{
	char err[256];
	if (nd_topology_emulate("0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; distance: 0-1=20", err, sizeof err) != 0) {
		fprintf(stderr, "emulate: %s\n", err);
		return -1;
	}
	return 0;
}

/* An owner thread's end: its objects are made (first wait), it lives
 * until the other thread is done with them (second wait): a parked
 * heap's objects are not borrowed. */
static inline void borrow_hold(pthread_barrier_t *bar)
{
	pthread_barrier_wait(bar);
	pthread_barrier_wait(bar);
}

/* A thread of node 0 that makes n objects of size into v and lives until
 * the second wait of bar after that (a parked heap's objects are not
 * borrowed); arg: a struct borrow_owner that outlives the thread. */
struct borrow_owner {
	void **v;
	int n;
	size_t size;
	pthread_barrier_t *bar;
};

static inline void *borrow_owner(void *arg)
{
	const struct borrow_owner *o = arg;
	nd_emulate_cpu(0);
	for (int i = 0; i < o->n; i++)
		o->v[i] = malloc(o->size);
	borrow_hold(o->bar);
	return NULL;
}

/* Starts borrow_owner with o (its barrier initialised for 2) in *owner
 * and, once its objects are made, runs fn in a thread to its end; -1 if
 * a thread could not start. The owner then waits at o->bar. */
static inline int borrow_owner_then(struct borrow_owner *o, pthread_t *owner, void *(*fn)(void *))
{
	pthread_t f;
	if (pthread_create(owner, NULL, borrow_owner, o) != 0)
		return -1;
	pthread_barrier_wait(o->bar);
	if (pthread_create(&f, NULL, fn, NULL) != 0)
		return -1;
	pthread_join(f, NULL);
	return 0;
}

/* What borrow_free_all saw after its frees. */
struct borrow_freed {
	unsigned pending; /* the caller's buffered and borrowed objects */
	unsigned xfer;    /* objects in node 0's exchange */
	uint64_t sent;    /* splices home during the frees */
};

/* On CPU 1 (node 0; one malloc and free first: a heap of its own), frees
 * v[0 .. n) (another thread's objects of size). */
static inline struct borrow_freed borrow_free_all(void **v, int n, size_t size)
{
	nd_emulate_cpu(1);
	void *volatile first = malloc(size); /* volatile: not elided */
	free(first);
	uint64_t sent = _nd_slab_remote_sent();
	for (int i = 0; i < n; i++)
		free(v[i]);
	struct borrow_freed r = { _nd_slab_remote_pending(), _nd_slab_xfer_count(0), _nd_slab_remote_sent() - sent };
	return r;
}

/* out[c]: class c's remote_frees so far; returns the classes read. */
static inline int borrow_remote_all(uint64_t *out)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	int n = _nd_slab_class_stats(st, ND_SLAB_CLASSES);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		out[c] = st[c].remote_frees;
	return n;
}

/* How many of v[0 .. n) are in set[0 .. ns). */
static inline int count_in(void **v, int n, void **set, int ns)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < ns; j++)
			if (v[i] == set[j]) {
				c++;
				break;
			}
	return c;
}

/* got[0 .. m) = m mallocs of size: how many are in set[0 .. ns). */
static inline int borrow_take(void **got, int m, size_t size, void **set, int ns)
{
	for (int i = 0; i < m; i++)
		got[i] = malloc(size);
	return count_in(got, m, set, ns);
}
#endif
