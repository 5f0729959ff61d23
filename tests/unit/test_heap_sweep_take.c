// SPDX-License-Identifier: MIT
/* A thread's first malloc while another thread sweeps the pool of parked
 * heaps (heap.c, sweep_pool) adopts a parked heap: it never makes a new
 * one. Until 2026-11-27 the sweep held every parked heap out of the pool
 * (no lock) while it trimmed them, so a thread starting then found the
 * pool empty and made a new heap with fresh slabs (4 threads a round: 5-7
 * heaps under load, tests/unit/test_heap_churn.c). The test hook runs
 * while the sweep has a heap out, and starts a thread there:
 *  - two parked heaps: the new thread adopts the one not out (it used to
 *    make a third heap);
 *  - one parked heap, out: the new thread waits for it (it used to make a
 *    second heap). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "pin_fixture.h"

static void *held[2];
static atomic_int done, mode, pairing;
static pthread_t b;
static pthread_barrier_t both;

/* Allocates an object (kept in *arg when arg is not NULL) and exits: the
 * heap is parked with that slab. pairing: two at once (two heaps). */
static void *worker(void *arg)
{
	void *p = malloc(100);
	if (arg)
		*(void **)arg = p;
	else
		free(p);
	if (atomic_load(&pairing))
		pthread_barrier_wait(&both);
	atomic_store(&done, 1);
	return NULL;
}

static void run(void **slot)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker, slot) != 0)
		abort();
	pthread_join(t, NULL);
}

/* Parked heaps of every pool (main's heap is not parked). */
static int parked(void)
{
	int n = 0;
	for (int i = 0; i < ND_MAX_NODES; i++) {
		_nd_lock(&_nd_meta_node[i].lock);
		for (_nd_heap_t *h = _nd_meta_node[i].pool; h; h = h->pool_next)
			n++;
		_nd_unlock(&_nd_meta_node[i].lock);
	}
	return n;
}

static const _nd_lock_t *sweep_lock(void)
{
	const _nd_lock_class_t *c[64];
	int n = _nd_lock_classes(c, 64);
	for (int i = 0; i < n; i++)
		if (strcmp(c[i]->name, "sweep_lock") == 0)
			return c[i]->lock;
	return NULL;
}

/* In the sweep, a heap out: mode 1 runs a new thread to its end; mode 2
 * starts one and returns once it has finished or waits for the sweep. */
static void hook(void)
{
	int m = atomic_exchange(&mode, 0);
	if (!m)
		return;
	atomic_store(&done, 0);
	if (pthread_create(&b, NULL, worker, NULL) != 0)
		abort();
	if (m == 1) {
		pthread_join(b, NULL);
		return;
	}
	const _nd_lock_t *lk = sweep_lock();
	while (!atomic_load(&done) && !(lk && __atomic_load_n(&lk->v, __ATOMIC_RELAXED) == 2))
		sched_yield();
}

/* main frees the object a parked heap holds (a remote free: the pool is
 * dirty), then needs a slab of a class it never used: it sweeps. */
static void sweep_with(int m, void *obj, size_t size)
{
	free(obj);
	_nd_slab_flush_remote();
	atomic_store(&mode, m);
	void *p = malloc(size);
	CHECK(atomic_load(&mode) == 0, "mode %d: the malloc of %zu swept the pool", m, size);
	free(p);
}

int main(void)
{
	pin_here(); /* every thread on main's CPU: one node's pool */
	free(malloc(16));
	_nd_heap_sweep_hook = hook;

	run(&held[0]);
	CHECK_EQ(parked(), 1);
	sweep_with(2, held[0], 3000);
	pthread_join(b, NULL);
	CHECK(parked() == 1, "one parked heap, out for the sweep: %d heaps after a thread's start (want 1)",
	      parked());

	pthread_t t[2];
	pthread_barrier_init(&both, NULL, 2);
	atomic_store(&pairing, 1);
	if (pthread_create(&t[0], NULL, worker, &held[1]) != 0 || pthread_create(&t[1], NULL, worker, NULL) != 0)
		abort();
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	atomic_store(&pairing, 0);
	int before = parked();
	CHECK_EQ(before, 2);
	sweep_with(1, held[1], 6000);
	CHECK(parked() == before, "%d parked heaps, one out for the sweep: %d heaps after a thread's start",
	      before, parked());
	_nd_heap_sweep_hook = NULL;
	return CHECK_DONE();
}
