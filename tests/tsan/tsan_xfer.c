// SPDX-License-Identifier: MIT
/* make tsan: the exchange (slab_remote.c), concurrent put, take and drain.
 * Two emulated nodes. Workers of node 0 free each other's 512-byte
 * objects (borrowed lists keep 32: remote frees past the cap go into node
 * 0's exchange) between batches of their own mallocs, which take from the
 * exchange when their lists run dry; meanwhile short threads of node 0
 * come and go (each exit drains the exchange), and a worker of node 1
 * frees and allocates too. Checked: every object a thread gets is on its node (the
 * exchange never gives node 0's objects to node 1), no object is handed
 * out twice at once (each carries its holder's tag, checked before its
 * free; TSan reports two holders' writes), and once every thread is gone
 * the exchanges are empty. CHECK is for the main thread only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "nodalloc.h"

enum { SZ = 512, B = 48, R = 1536, ROUNDS = 6, NW = 4 };

struct batch {
	void *p[B];
	uint64_t tag;
};

static int stop;
static int bad_node, bad_tag;
static pthread_barrier_t round_bar;
static uint64_t *made[NW][R]; /* round's objects of each worker (tag: word 2..) */

static const int wcpu[NW] = { 0, 1, 0, 2 }; /* node 0, 0, 0, 1 */

static void fill(struct batch *b, uint64_t tag, int node)
{
	b->tag = tag;
	for (int i = 0; i < B; i++) {
		uint64_t *o = nd_malloc(SZ);
		if (!o)
			abort();
		if (nd_node_of(o) != node)
			__atomic_fetch_add(&bad_node, 1, __ATOMIC_RELAXED);
		for (int w = 2; w < SZ / 8; w++)
			o[w] = tag + (uint64_t)w;
		b->p[i] = o;
	}
}

static void check_free(uint64_t *o, uint64_t tag)
{
	for (int w = 2; w < SZ / 8; w++)
		if (o[w] != tag + (uint64_t)w) {
			__atomic_fetch_add(&bad_tag, 1, __ATOMIC_RELAXED);
			break;
		}
	nd_free(o);
}

static void drop(struct batch *b)
{
	for (int i = 0; i < B; i++)
		check_free(b->p[i], b->tag);
}

static uint64_t made_tag(int id, int r) { return (uint64_t)(id + 1) << 40 | (uint64_t)r << 32; }

/* Each round: every worker makes R objects; after a barrier, worker id
 * frees the next worker's (remote frees: past the cap into the exchange)
 * between batches of its own mallocs and frees (dry lists take from it),
 * with no other synchronisation between the threads, so that only the
 * exchange orders a put's links before their take. */
static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg, cpu = wcpu[id], node = cpu / 2;
	nd_emulate_cpu(cpu);
	struct batch mine;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < R; i++) {
			uint64_t *o = nd_malloc(SZ);
			if (!o)
				abort();
			for (int w = 2; w < SZ / 8; w++)
				o[w] = made_tag(id, r) + (uint64_t)w;
			made[id][i] = o;
		}
		pthread_barrier_wait(&round_bar);
		int from = (id + 1) % NW;
		for (int i = 0; i < R; i += B) {
			for (int j = i; j < i + B && j < R; j++)
				check_free(made[from][j], made_tag(from, r));
			fill(&mine, (uint64_t)(id + 1) << 40 | (uint64_t)(r * R + i + 1) << 8, node);
			drop(&mine);
		}
		pthread_barrier_wait(&round_bar);
	}
	return NULL;
}

/* a short thread of node 0: a few mallocs and frees, then its exit drains */
static void *brief(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	struct batch b;
	fill(&b, (uint64_t)0xbb << 40, 0);
	drop(&b);
	return NULL;
}

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		pthread_t t;
		if (pthread_create(&t, NULL, brief, NULL) != 0)
			abort();
		pthread_join(t, NULL);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	char err[256];
	if (nd_topology_emulate("0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; distance: 0-1=20", err, sizeof err) != 0) {
		fprintf(stderr, "emulate: %s\n", err);
		return 1;
	}
	pthread_t w[NW], ch;
	pthread_barrier_init(&round_bar, NULL, NW);
	CHECK(pthread_create(&ch, NULL, churn, NULL) == 0);
	for (int i = 0; i < NW; i++)
		CHECK(pthread_create(&w[i], NULL, worker, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(ch, NULL);
	/* the last threads of each node: their exits drain what is left */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, brief, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(bad_node, 0);
	CHECK_EQ(bad_tag, 0);
	CHECK_EQ(_nd_slab_xfer_count(0), 0);
	CHECK_EQ(_nd_slab_xfer_count(1), 0);
	return CHECK_DONE();
}
