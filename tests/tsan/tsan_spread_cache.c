// SPDX-License-Identifier: MIT
/* make tsan: large.c's cache of freed spread runs (task spread64) under
 * threads: THREADS workers churn interleaved blocks of a few lengths
 * (each a spread run of the mixed slot, freed into and taken from the
 * spread lists), each block stamped with its owner and checked before
 * its free, while a trimmer thread flushes every cache (malloc_trim's
 * _nd_large_flush) in a loop. Any TSan report fails the test; so does a
 * block handed to two owners (its stamp changed), and the page level's
 * invariants must hold after. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "stamp_fixture.h"

enum { THREADS = 3, ROUNDS = 300, LIVE = 4 };
static int stop;
static long bad[THREADS];
static nd_policy_t il;

static void *get(uint64_t rng, size_t *len)
{
	*len = (size_t)(64 << 10) << ((rng >> 8) % 3);
	return nd_malloc_policy(*len, &il);
}

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	bad[id] = stamp_churn(id, ROUNDS, LIVE, 0x9E3779B97F4A7C15ULL * (id + 1), get);
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		_nd_large_flush(-1);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	CHECK(nd_policy_parse("interleave:0,1", &il, err, sizeof err) == 0, "%s", err);
	pthread_t w[THREADS], t;
	CHECK(pthread_create(&t, NULL, trimmer, NULL) == 0);
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&w[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	for (int i = 0; i < THREADS; i++)
		CHECK(bad[i] == 0, "worker %d: %ld blocks lost or changed", i, bad[i]);
	_nd_large_flush(-1);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
