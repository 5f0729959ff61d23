// SPDX-License-Identifier: MIT
/* A thread's exit raises the page level's dirty limit to the pages in use
 * before it (purge.c, _nd_purge_exit), for this decay period and the next:
 * the slabs its heaps give back at the exit serve the next threads.
 *  - A live thread that frees 32 MiB of small objects leaves at most the
 *    cap committed (16 purge blocks: the end of a program's big phase,
 *    bench footprint's end RSS).
 *  - A worker allocates 32 MiB, another thread frees them (remote frees)
 *    and the worker exits: its heap gives the slabs back at the exit and
 *    they stay committed, so the next worker faults in few pages. Before,
 *    the cap purged all but 16 purge blocks of them and every round of
 *    threads faulted its memory in again (a held-out benchmark of rounds
 *    of threads: 35-39k page faults, 22-28k since).
 *  - They still go back when they stay free: the next exits that find
 *    them unused give them back (heap.c's exit_trim). */
#define _GNU_SOURCE
#include "exit_fixture.h"

enum { N = 32 * 1024 * 1024 / 192 };

static void *obj[N];
static long faults; /* the last worker's minor faults while it allocated */
static pthread_barrier_t allocated, freed;

/* Allocates, waits while the main thread frees everything, exits. */
static void *work(void *arg)
{
	(void)arg;
	long f0 = minflt();
	fill_192(obj, N);
	faults = minflt() - f0;
	pthread_barrier_wait(&allocated);
	pthread_barrier_wait(&freed);
	return NULL;
}

static void *idle(void *arg)
{
	(void)arg;
	free(malloc(16));
	return NULL;
}

int main(void)
{
	memset(obj, 0, sizeof obj); /* the workers' faults are their objects' */
	const uint64_t pages = (uint64_t)N * 192 / 4096;
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	const uint64_t cap = 16 * in.purge_pages;
	CHECK(pages > 2 * cap, "the test frees more than twice the cap (%llu pages, cap %llu)", (unsigned long long)pages,
	      (unsigned long long)cap);

	/* a live thread's frees: the cap */
	fill_192(obj, N);
	for (int i = 0; i < N; i++)
		free(obj[i]);
	CHECK(dirty() <= cap, "after a live thread freed %llu pages: %llu committed free pages (cap %llu)",
	      (unsigned long long)pages, (unsigned long long)dirty(), (unsigned long long)cap);

	long first = 0;
	for (int r = 0; r < 3; r++) {
		pthread_barrier_init(&allocated, NULL, 2);
		pthread_barrier_init(&freed, NULL, 2);
		pthread_t t;
		CHECK(pthread_create(&t, NULL, work, NULL) == 0);
		pthread_barrier_wait(&allocated);
		for (int i = 0; i < N; i++)
			free(obj[i]); /* remote frees: the slabs go back at the worker's exit */
		pthread_barrier_wait(&freed);
		pthread_join(t, NULL);
		pthread_barrier_destroy(&allocated);
		pthread_barrier_destroy(&freed);
		check_reuse(r, faults, &first);
		CHECK(dirty() >= pages * 3 / 4, "after worker %d's exit: %llu committed free pages (of its %llu)", r,
		      (unsigned long long)dirty(), (unsigned long long)pages);
	}

	for (int r = 0; r < 2; r++) {
		usleep(20 * 1000); /* past the exit trim's rate bound (10 ms) */
		pthread_t t;
		CHECK(pthread_create(&t, NULL, idle, NULL) == 0);
		pthread_join(t, NULL);
	}
	CHECK(_nd_page_info(0, &in) == 0);
	uint64_t lim = keep_limit(&in);
	CHECK(in.dirty_pages <= lim, "after two idle threads' exits: %llu committed free pages, %llu in use (at most %llu)",
	      (unsigned long long)in.dirty_pages, (unsigned long long)in.used_pages, (unsigned long long)lim);
	return CHECK_DONE();
}
