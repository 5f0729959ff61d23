// SPDX-License-Identifier: MIT
/* malloc_trim reaches the parked heaps of exited threads (heap.c
 * _nd_heap_trim_parked: each out of its pool in turn, its partial slabs'
 * free pages purged) and the caller's partial slabs (_nd_slab_purge_all).
 * A stress of what may meet it (audit15, a suspicion cleared): rounds of
 * four workers that start, swap blocks of 16..20,000 B through a shared
 * table (each freed by another thread than its own: remote frees into
 * slabs whose heaps are parked when their thread has exited), and exit;
 * a thread calling malloc_trim in a loop; a thread forking in a loop,
 * whose children allocate, free and trim (the fork handlers take the
 * sweep and pool locks: a child never sees a heap out of its pool). Every
 * block keeps its size stamp until freed; every child exits 0. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define SLOTS 4096
#define ROUNDS 20
static void *_Atomic box[SLOTS];
static atomic_int stop, bad, children, bad_child;

/* n bytes stamped: the size in the first word, its low byte at the end */
static void *stamped(size_t n)
{
	unsigned char *p = malloc(n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof n);
	p[n - 1] = (unsigned char)n;
	return p;
}

static void check_free(void *o)
{
	size_t n;
	memcpy(&n, o, sizeof n);
	if (n < 16 || n > 20016 || ((unsigned char *)o)[n - 1] != (unsigned char)n)
		atomic_fetch_add(&bad, 1);
	free(o);
}

static void *worker(void *arg)
{
	uint32_t s = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	for (int r = 0; r < 3000; r++) {
		s = s * 1103515245u + 12345u;
		void *p = stamped(16 + (s >> 3) % 20000);
		if (!p) {
			atomic_fetch_add(&bad, 1);
			continue;
		}
		void *o = atomic_exchange(&box[(s >> 8) % SLOTS], p);
		if (o)
			check_free(o);
	}
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		malloc_trim(0);
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 1000; i++)
				free(malloc((size_t)i * 7 + 1));
			malloc_trim(0);
			_exit(0);
		}
		int st = -1;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			atomic_fetch_add(&bad_child, 1);
		atomic_fetch_add(&children, 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t tt, ft;
	CHECK(pthread_create(&tt, NULL, trimmer, NULL) == 0);
	CHECK(pthread_create(&ft, NULL, forker, NULL) == 0);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t w[4];
		for (int i = 0; i < 4; i++)
			CHECK(pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)(round * 4 + i)) == 0);
		for (int i = 0; i < 4; i++)
			pthread_join(w[i], NULL);
	}
	atomic_store(&stop, 1);
	pthread_join(tt, NULL);
	pthread_join(ft, NULL);
	for (int i = 0; i < SLOTS; i++) {
		void *o = atomic_load(&box[i]);
		if (o)
			check_free(o);
	}
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK(atomic_load(&children) > 0, "no fork ran");
	CHECK(atomic_load(&bad_child) == 0, "%d of %d children failed", atomic_load(&bad_child), atomic_load(&children));
	return CHECK_DONE();
}
