// SPDX-License-Identifier: MIT
/* Borrowed remote frees on many nodes (issue 11, xfree2: a flagged slab's
 * stamp carries its node + 1 up to 30 in its low bits, free's borrowing
 * test is one xor with the record's bw_key; nodes past that borrow
 * through _nd_slab_free_other). Emulated topology of 64 nodes, one CPU
 * each; every case runs in a new thread (records reused from the pool):
 *  - borrow:  on nodes 0, 1, 28..33, 62, 63, frees of another thread's
 *             objects of the node are borrowed (none sent home) and come
 *             back from the freeing thread's next mallocs, on the node;
 *             the owner's frees of its flagged slab then still serve its
 *             own mallocs on the node;
 *  - migrate: a thread that borrowed from a slab of node a (flagging it)
 *             moves to node b: its frees of that slab's other objects are
 *             not borrowed (bw_key follows the heap's node), its mallocs
 *             are on node b and none of them is node a's object; pairs of
 *             nodes below, at and past the stamp's 30. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "borrow_fixture.h"
#include "check.h"

enum { NODES = 64, N = 48, K = 16 };

static void *theirs[N];
static pthread_barrier_t made, done;
static int owner_node;
static int owner_bad;

/* Makes N objects on owner_node, waits for done, then frees the rest of
 * its objects itself (a flagged slab: its owner's frees) and takes them
 * again: on the node. */
static void *owner(void *arg)
{
	size_t size = (size_t)(uintptr_t)arg;
	nd_emulate_cpu(owner_node);
	for (int i = 0; i < N; i++)
		theirs[i] = malloc(size);
	pthread_barrier_wait(&made);
	pthread_barrier_wait(&done);
	for (int i = K; i < N; i++)
		free(theirs[i]);
	void *v[N - K];
	for (int i = 0; i < N - K; i++) {
		v[i] = malloc(size);
		owner_bad += !v[i] || nd_node_of(v[i]) != owner_node;
	}
	for (int i = 0; i < N - K; i++)
		free(v[i]);
	return NULL;
}

static pthread_t start_owner(int node, size_t size)
{
	pthread_t o;
	owner_node = node;
	pthread_barrier_init(&made, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	CHECK(pthread_create(&o, NULL, owner, (void *)(uintptr_t)size) == 0, "owner thread");
	pthread_barrier_wait(&made);
	return o;
}

static void end_owner(pthread_t o)
{
	pthread_barrier_wait(&done);
	pthread_join(o, NULL);
	pthread_barrier_destroy(&made);
	pthread_barrier_destroy(&done);
	CHECK(owner_bad == 0, "owner on node %d: %d of its mallocs after its frees off the node", owner_node, owner_bad);
}

static int all_on(void **v, int n, int node)
{
	for (int i = 0; i < n; i++)
		if (!v[i] || nd_node_of(v[i]) != node)
			return 0;
	return 1;
}

struct bcase {
	int a, b; /* borrow on node a; migrate: then move to node b (b < 0: none) */
	size_t size;
};

static void *borrower(void *arg)
{
	const struct bcase *c = arg;
	nd_emulate_cpu(c->a);
	void *volatile w = malloc(c->size); /* settle on node a's heap */
	free(w);
	pthread_t o = start_owner(c->a, c->size);
	void *mine[K];
	if (c->b < 0) {
		uint64_t sent = _nd_slab_remote_sent();
		for (int i = 0; i < K; i++)
			free(theirs[i]);
		CHECK(_nd_slab_remote_pending() == K, "node %d: %u of %d frees borrowed", c->a, _nd_slab_remote_pending(), K);
		for (int i = 0; i < K; i++)
			mine[i] = malloc(c->size);
		CHECK(count_in(mine, K, theirs, K) == K, "node %d, size %zu: %d of %d borrowed objects reused", c->a,
		      c->size, count_in(mine, K, theirs, K), K);
		CHECK(all_on(mine, K, c->a), "node %d: reused objects on the node", c->a);
		CHECK(_nd_slab_remote_sent() == sent, "node %d: borrowed frees sent home", c->a);
	} else {
		free(theirs[0]); /* borrowed: flags the slab with node a */
		CHECK(_nd_slab_remote_pending() == 1, "node %d: the first free borrowed", c->a);
		nd_emulate_cpu(c->b);
		w = malloc(c->size); /* node b's heap: the borrowed object goes home */
		free(w);
		CHECK(_nd_slab_remote_pending() == 0, "%d -> %d: borrowed objects went home", c->a, c->b);
		for (int i = 1; i < K; i++)
			free(theirs[i]); /* home (buffered): not on a list of node b's mallocs */
		for (int i = 0; i < K; i++)
			mine[i] = malloc(c->size);
		CHECK(count_in(mine, K, theirs, N) == 0, "%d -> %d, size %zu: %d of node %d's objects reused on node %d",
		      c->a, c->b, c->size, count_in(mine, K, theirs, N), c->a, c->b);
		CHECK(all_on(mine, K, c->b), "%d -> %d: mallocs on node %d", c->a, c->b, c->b);
	}
	for (int i = 0; i < K; i++)
		free(mine[i]);
	_nd_slab_flush_remote();
	end_owner(o);
	return NULL;
}

static void run(int a, int b, size_t size)
{
	struct bcase c = { a, b, size };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, borrower, &c) == 0, "borrower thread");
	pthread_join(t, NULL);
}

int main(void)
{
	char spec[64 * 32], err[256];
	size_t n = 0;
	for (int i = 0; i < NODES; i++)
		n += (size_t)snprintf(spec + n, sizeof spec - n, "%s%d: cpus=%d mem=64M", i ? "; " : "", i, i);
	if (nd_topology_emulate(spec, err, sizeof err) != 0) {
		fprintf(stderr, "emulate: %s\n", err);
		return 1;
	}
	static const int borrow[] = { 0, 1, 28, 29, 30, 31, 32, 33, 62, 63 };
	static const int mig[][2] = { { 0, 1 }, { 1, 0 }, { 5, 28 }, { 28, 29 }, { 29, 30 }, { 30, 29 }, { 30, 31 },
				      { 31, 30 }, { 40, 3 }, { 3, 40 }, { 62, 63 }, { 63, 62 }, { 63, 0 } };
	static const size_t sizes[] = { 48, 2000 };
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		for (size_t i = 0; i < sizeof borrow / sizeof *borrow; i++)
			run(borrow[i], -1, sizes[s]);
		for (size_t i = 0; i < sizeof mig / sizeof *mig; i++)
			run(mig[i][0], mig[i][1], sizes[s]);
	}
	return CHECK_DONE();
}
