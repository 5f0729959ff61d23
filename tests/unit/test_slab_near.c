// SPDX-License-Identifier: MIT
/* Two threads that take new slabs in turn (slab.c, _nd_slab_new, task
 * batch28): after a few turns each one's new slab runs follow its own,
 * not the other's (one thread's run next to the other's, written by two
 * cores at once: bench batch2 1.3x mimalloc's time, docs/malloc.md
 * "Threads"). Each turn a thread fills one fresh slab of 16 B objects
 * (1024 a slab) and keeps them; the turns alternate, as two threads
 * allocating at once do. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

#define TURNS 16
#define PER 1024 /* class 16's objects a slab */
#define SLAB (16u << 10)

static int turn; /* atomic: 2 * k + thread: whose turn k it is */
static uintptr_t run[2][TURNS];

static void *worker(void *arg)
{
	int me = (int)(uintptr_t)arg;
	for (int k = 0; k < TURNS; k++) {
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 2 * k + me)
			sched_yield();
		for (int i = 0; i < PER; i++) {
			char *p = malloc(16);
			CHECK(p != NULL);
			p[0] = 1;
			run[me][k] = (uintptr_t)p & ~(uintptr_t)(SLAB - 1); /* the turn's last: its fresh slab */
		}
		__atomic_store_n(&turn, 2 * k + me + 1, __ATOMIC_RELEASE);
	}
	return NULL; /* the objects stay: no slab is freed or reused */
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	/* past the first turns, most of each thread's runs follow its last
	 * one (a 32-page group holds 8; where one ends the next may not
	 * follow); taken in turn from the buddy they never did */
	for (int me = 0; me < 2; me++) {
		int next = 0, other = 0;
		for (int k = 7; k < TURNS; k++) {
			next += run[me][k] == run[me][k - 1] + SLAB;
			for (int j = 0; j < TURNS; j++)
				other += run[me][k] + SLAB == run[1 - me][j] || run[1 - me][j] + SLAB == run[me][k];
		}
		printf("thread %d: %d of %d runs follow its last one, %d neighbours of the other's\n", me, next,
		       TURNS - 7, other);
		CHECK(next >= TURNS - 7 - 2, "thread %d: %d of its last %d runs follow its own", me, next, TURNS - 7);
	}
	return CHECK_DONE();
}
