// SPDX-License-Identifier: MIT
/* make tsan: large.c's thread caches emptied by another thread (task
 * tcsteal28: _nd_large_flush takes every live thread's kept runs under
 * each record's lblk_lock). First, deterministic: a worker keeps runs
 * of 10 pages and waits; another thread's _nd_large_flush returns at
 * least their bytes, then the worker keeps and takes runs again. Then
 * the race: WORKERS threads churn blocks of 9..64 pages on two nodes
 * (kept by their thread caches, taken back), each stamped with its owner
 * and checked before its free, and exit with runs kept, GENERATIONS
 * times, while a flusher thread empties every cache (-1, node 0, node 1)
 * in a loop. Any TSan report fails the test; so does a block handed to
 * two owners (its stamp changed), and the page level's invariants must
 * hold after. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "stamp_fixture.h"

#define KiB ((size_t)1 << 10)
enum { WORKERS = 3, GENERATIONS = 6, ROUNDS = 2000, LIVE = 6, KEPT = 8 };
static int stop;
static long bad[WORKERS];

/* ---- deterministic: one flush takes a waiting thread's runs ---------- */
static pthread_barrier_t bar;
static int det_bad;

static void *keeper(void *arg)
{
	char *b[KEPT];
	for (int i = 0; i < KEPT; i++)
		b[i] = nd_malloc_onnode(40 * KiB, 1);
	for (int i = 0; i < KEPT; i++) /* kept: node 1 holds the main thread's blocks */
		nd_free(b[i]);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* the main thread flushes */
	for (int i = 0; i < KEPT; i++) {
		b[i] = nd_malloc_onnode(40 * KiB, 1);
		det_bad += !b[i];
		if (b[i])
			memset(b[i], 0x11, 40 * KiB);
	}
	for (int i = 0; i < KEPT; i++)
		nd_free(b[i]);
	return arg;
}

static void deterministic(void)
{
	char *hold = nd_malloc_onnode(4 << 20, 1); /* the bound: twice node 1's large pages in use */
	CHECK(hold != NULL);
	_nd_large_flush(-1);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, keeper, NULL) == 0);
	pthread_barrier_wait(&bar);
	size_t got = _nd_large_flush(1);
	CHECK(got >= KEPT * 40 * KiB, "another thread's %d kept runs of 40 KiB: %zu B flushed", KEPT, got);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	CHECK_EQ(det_bad, 0);
	nd_free(hold);
	pthread_barrier_destroy(&bar);
}

/* ---- the race: flushes while owners put, take and exit -------------- */
static void *get(uint64_t rng, size_t *len)
{
	*len = (size_t)(36 + (rng >> 8) % 220) * KiB; /* 9..64 pages */
	return nd_malloc_onnode(*len, (int)((rng >> 20) & 1));
}

/* the last blocks are freed (kept) at the end: the exit gives them back,
 * racing the flusher */
static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t rng = 0x9E3779B97F4A7C15ULL * (id + 1) + (uint64_t)(uintptr_t)&rng; /* a stack address: each generation its own */
	bad[id] += stamp_churn(id, ROUNDS, LIVE, rng, get);
	return NULL;
}

static void *flusher(void *arg)
{
	(void)arg;
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); i++) {
		_nd_large_flush(i % 3 - 1);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	deterministic();
	char *hold[2] = { nd_malloc_onnode(16 << 20, 0), nd_malloc_onnode(16 << 20, 1) }; /* room to keep */
	pthread_t w[WORKERS], f;
	CHECK(pthread_create(&f, NULL, flusher, NULL) == 0);
	for (int g = 0; g < GENERATIONS; g++) {
		for (uintptr_t i = 0; i < WORKERS; i++)
			CHECK(pthread_create(&w[i], NULL, worker, (void *)i) == 0);
		for (int i = 0; i < WORKERS; i++)
			pthread_join(w[i], NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(f, NULL);
	for (int i = 0; i < WORKERS; i++)
		CHECK(bad[i] == 0, "worker %d: %ld blocks lost or changed", i, bad[i]);
	nd_free(hold[0]);
	nd_free(hold[1]);
	_nd_large_flush(-1);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
