// SPDX-License-Identifier: MIT
/* make tsan: borrowing on many nodes with migrations (xfree7: a flagged
 * stamp carries its slab's node + 1 up to 30, free's borrowing test is one
 * xor with the record's bw_key; nodes past 30 borrow through
 * _nd_slab_free_other). 64 emulated nodes of one CPU each. Each round,
 * workers 0 and 1 run on one node, 2 and 3 on another (nodes below, at
 * and past 30, changing every round: a heap change re-keys bw_key); each
 * makes a batch tagged with its id, frees its partner's (same node:
 * borrowed) and makes a second batch (reusing them), then frees the other
 * pair's second batch (another node, sent home; the same node in the last
 * round). Twice, the second time on reused records. Checked: every object
 * is on its maker's node, none is held by two threads at once (tags
 * checked before each free; TSan reports two holders' writes). CHECK is
 * for the main thread only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "nodalloc.h"

enum { NODES = 64, NW = 4, B = 96, ROUNDS = 10 };

static const size_t sizes[] = { 48, 160, 2000 };
static const int round_node[ROUNDS][2] = { { 0, 1 },   { 29, 30 }, { 30, 31 }, { 31, 29 }, { 63, 62 },
					   { 1, 63 },  { 28, 40 }, { 40, 28 }, { 62, 0 },  { 30, 30 } };
static uint64_t *batch[2][NW][B]; /* [0]: the first batch of a round, [1]: the second */
static int bad_node, bad_tag;
static pthread_barrier_t bar;

static void fill(uint64_t **v, uint64_t tag, int node, size_t sz)
{
	for (int i = 0; i < B; i++) {
		uint64_t *o = nd_malloc(sz);
		if (!o)
			abort();
		if (nd_node_of(o) != node)
			__atomic_fetch_add(&bad_node, 1, __ATOMIC_RELAXED);
		for (size_t k = 2; k < 6; k++)
			o[k] = tag + k;
		v[i] = o;
	}
}

static void drop(uint64_t **v, uint64_t tag)
{
	for (int i = 0; i < B; i++) {
		uint64_t *o = v[i];
		for (size_t k = 2; k < 6; k++)
			if (o[k] != tag + k) {
				__atomic_fetch_add(&bad_tag, 1, __ATOMIC_RELAXED);
				break;
			}
		nd_free(o);
	}
}

static uint64_t tag_of(int r, int half, int w)
{
	return (uint64_t)((r * 2 + half) * NW + w + 1) << 32;
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		size_t sz = sizes[r % 3];
		int node = round_node[r][w >> 1];
		nd_emulate_cpu(node); /* a new heap's node: bw_key re-keyed */
		fill(batch[0][w], tag_of(r, 0, w), node, sz);
		pthread_barrier_wait(&bar);
		/* the partner's batch: its node (borrowed), then a batch that
		 * takes them back */
		drop(batch[0][w ^ 1], tag_of(r, 0, w ^ 1));
		fill(batch[1][w], tag_of(r, 1, w), node, sz);
		pthread_barrier_wait(&bar);
		/* the other pair's: another node (home), but in the last round */
		drop(batch[1][w ^ 2], tag_of(r, 1, w ^ 2));
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

int main(void)
{
	char spec[NODES * 32], err[256];
	size_t n = 0;
	for (int i = 0; i < NODES; i++)
		n += (size_t)snprintf(spec + n, sizeof spec - n, "%s%d: cpus=%d mem=64M", i ? "; " : "", i, i);
	CHECK(nd_topology_emulate(spec, err, sizeof err) == 0, "emulate: %s", err);
	pthread_barrier_init(&bar, NULL, NW);
	for (int rep = 0; rep < 2; rep++) { /* the second: reused records */
		pthread_t t[NW];
		for (int w = 0; w < NW; w++)
			CHECK(pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w) == 0, "worker %d", w);
		for (int w = 0; w < NW; w++)
			pthread_join(t[w], NULL);
	}
	pthread_barrier_destroy(&bar);
	CHECK_EQ(__atomic_load_n(&bad_node, __ATOMIC_RELAXED), 0);
	CHECK_EQ(__atomic_load_n(&bad_tag, __ATOMIC_RELAXED), 0);
	return CHECK_DONE();
}
