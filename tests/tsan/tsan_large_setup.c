// SPDX-License-Identifier: MIT
/* make tsan: large.c's one-time setup (its options and the mixed slot's
 * bounds) run by threads whose first large blocks come at once. Each
 * racing thread wrote the same values (plain stores, "idempotent"), a
 * data race all the same: ThreadSanitizer failed tsan.slab_stress on it
 * (audit22). A setup is once per process: CHILDREN processes each start
 * THREADS threads that pass a barrier and allocate a large block; a
 * child with a report exits 66 (TSAN_OPTIONS exitcode). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"

enum { CHILDREN = 400, THREADS = 2, BIG = 1 << 20 };
static pthread_barrier_t go;
static int waiting;

static void *first_large(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	/* all at once: a spin on the last one's flag (a barrier wakes them
	 * one at a time) */
	if (__atomic_add_fetch(&waiting, 1, __ATOMIC_ACQ_REL) < THREADS)
		while (__atomic_load_n(&waiting, __ATOMIC_ACQUIRE) < THREADS)
			;
	void *p = nd_malloc(BIG);
	if (p)
		((char *)p)[BIG - 1] = 1;
	nd_free(p);
	return p ? NULL : (void *)1;
}

static int child(void)
{
	pthread_t t[THREADS];
	pthread_barrier_init(&go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, first_large, NULL) != 0)
			return 2;
	int failed = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		failed += r != NULL;
	}
	return failed ? 3 : 0;
}

int main(void)
{
	nd_free(nd_malloc(64)); /* the init, not large.c's setup: the children inherit it */
	int bad = 0;
	for (int i = 0; i < CHILDREN; i++) {
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			exit(child()); /* exit: ThreadSanitizer's exit code applies */
		int st = 0;
		waitpid(pid, &st, 0);
		bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(bad == 0, "%d of %d processes whose threads set large.c up at once failed (66: a report)", bad, CHILDREN);
	return CHECK_DONE();
}
