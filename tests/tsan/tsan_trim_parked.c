// SPDX-License-Identifier: MIT
/* make tsan: malloc_trim's walk of the parked heaps (heap.c's
 * _nd_heap_trim_parked: each out of its pool in turn, trimmed, its
 * partial slabs purged) while threads exit (park), start (adopt or steal
 * from the pools) and free other threads' objects (remote frees into
 * parked heaps). Rounds of three workers: each allocates objects of a few
 * classes, writes them, hands every fourth to main, frees most of the
 * rest and keeps a few written until its exit check; a trimmer thread
 * trims the parked heaps and its own in a loop meanwhile; main frees the
 * handed objects, checking their bytes. Any TSan report fails the test;
 * so does an object whose bytes changed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { ROUNDS = 12, WORKERS = 3, PER = 400 };
static const size_t sizes[] = { 48, 256, 1024, 3000 };
static void *handed[ROUNDS][WORKERS][PER / 4];
static int stop;
static int bad[ROUNDS * WORKERS]; /* a worker's failures (CHECK's counters are main's) */
static unsigned long trims;

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	unsigned char *p[PER];
	for (int i = 0; i < PER; i++) {
		size_t sz = sizes[i % 4];
		p[i] = nd_malloc(sz);
		if (!p[i]) {
			bad[id]++;
			return NULL;
		}
		memset(p[i], (int)(id + (uintptr_t)i) & 0xff, sz);
	}
	for (int i = 0; i < PER; i++) {
		if (i % 4 == 0)
			__atomic_store_n(&handed[id / WORKERS][id % WORKERS][i / 4], p[i], __ATOMIC_RELEASE);
		else if (i % 16 != 1)
			nd_free(p[i]);
	}
	sched_yield();
	for (int i = 1; i < PER; i += 16) {
		size_t sz = sizes[i % 4];
		int ok = 1;
		for (size_t j = 0; j < sz; j++)
			ok &= p[i][j] == (unsigned char)((id + (uintptr_t)i) & 0xff);
		bad[id] += !ok;
		nd_free(p[i]);
	}
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	unsigned long n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		void *q = nd_malloc(256);
		nd_free(q);
		_nd_heap_trim_self(false);
		_nd_heap_trim_parked();
		n++;
		sched_yield();
	}
	trims = n;
	return NULL;
}

int main(void)
{
	pthread_t tr;
	CHECK(pthread_create(&tr, NULL, trimmer, NULL) == 0);
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t w[WORKERS];
		for (int k = 0; k < WORKERS; k++)
			CHECK(pthread_create(&w[k], NULL, worker, (void *)(uintptr_t)(r * WORKERS + k)) == 0);
		for (int k = 0; k < WORKERS; k++) {
			pthread_join(w[k], NULL);
			CHECK(bad[r * WORKERS + k] == 0, "round %d worker %d: %d failures (allocation, kept bytes)", r, k,
			      bad[r * WORKERS + k]);
		}
		for (int k = 0; k < WORKERS; k++)
			for (int i = 0; i < PER / 4; i++) {
				unsigned char *o = __atomic_load_n(&handed[r][k][i], __ATOMIC_ACQUIRE);
				size_t sz = sizes[(i * 4) % 4];
				int ok = 1;
				for (size_t j = 0; j < sz; j++)
					ok &= o[j] == (unsigned char)(((uintptr_t)(r * WORKERS + k) + (uintptr_t)(i * 4)) & 0xff);
				CHECK(ok, "round %d worker %d: handed object %d changed", r, k, i);
				nd_free(o);
			}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(tr, NULL);
	CHECK(trims > 0, "the trimmer never ran");
	return CHECK_DONE();
}
