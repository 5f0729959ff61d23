// SPDX-License-Identifier: MIT
/* Shared by the fork stress tests (test_slab_xfer_fork,
 * test_malloc_fork_owner): threads trade batches of objects through
 * boxes, so that objects are freed by threads that did not make them. */
#ifndef ND_TRADE_FIXTURE_H
#define ND_TRADE_FIXTURE_H
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { TRADE_B = 64, TRADE_NBOX = 16, TRADE_NSIZES = 7, TRADE_MAXT = 16 };
static pthread_mutex_t box_lock = PTHREAD_MUTEX_INITIALIZER;
static void *box[TRADE_NBOX][TRADE_B]; /* box_lock */
static int box_full[TRADE_NBOX];
static const size_t trade_sizes[TRADE_NSIZES] = { 24, 48, 96, 200, 512, 1024, 3000 };
static int trade_stop; /* atomic: trade_stress's threads stop */

/* A batch of TRADE_B objects of a size chosen by seed goes into an empty
 * box (else it is freed); the objects of a full box, if any, are freed. */
static inline void trade_round(unsigned *seed)
{
	void *mine[TRADE_B], *got[TRADE_B];
	size_t sz = trade_sizes[rand_r(seed) % TRADE_NSIZES];
	for (int i = 0; i < TRADE_B; i++) {
		mine[i] = malloc(sz);
		memset(mine[i], 0xab, sz);
	}
	int have = 0, put = 0;
	pthread_mutex_lock(&box_lock);
	for (int k = 0; k < TRADE_NBOX && !have; k++)
		if (box_full[k]) {
			memcpy(got, box[k], sizeof got);
			box_full[k] = 0;
			have = 1;
		}
	for (int k = 0; k < TRADE_NBOX && !put; k++)
		if (!box_full[k]) {
			memcpy(box[k], mine, sizeof mine);
			box_full[k] = 1;
			put = 1;
		}
	pthread_mutex_unlock(&box_lock);
	for (int i = 0; i < TRADE_B && !put; i++)
		free(mine[i]);
	for (int i = 0; i < TRADE_B && have; i++)
		free(got[i]);
}

/* The objects of boxes k0, k0 + step, ... are freed (the caller has the
 * boxes to itself). */
static inline void trade_free_boxes(int k0, int step)
{
	for (int k = k0; k < TRADE_NBOX; k += step) {
		for (int i = 0; i < TRADE_B && box_full[k]; i++)
			free(box[k][i]);
		box_full[k] = 0;
	}
}

/* forks times (pause_us apart), with the boxes whole (box_lock held
 * across the fork); each child runs child() and exits with its status.
 * Returns 0, or the wait status of the first child that failed (then no
 * more forks). */
static inline int trade_forks(int forks, unsigned pause_us, int (*child)(void))
{
	for (int f = 0; f < forks; f++) {
		usleep(pause_us);
		pthread_mutex_lock(&box_lock);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(60);
			pthread_mutex_unlock(&box_lock);
			_exit(child());
		}
		pthread_mutex_unlock(&box_lock);
		int st = 0;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return st ? st : -1;
	}
	return 0;
}

/* nt (<= TRADE_MAXT) threads run fn(i + 1) while the main thread forks
 * (trade_forks), and until it is done; then every box is freed. Returns
 * trade_forks's status (-2: a thread could not be made). */
static inline int trade_stress(int nt, void *(*fn)(void *), int forks, unsigned pause_us, int (*child)(void))
{
	pthread_t t[TRADE_MAXT];
	int n = 0;
	while (n < nt && n < TRADE_MAXT && pthread_create(&t[n], NULL, fn, (void *)(uintptr_t)(n + 1)) == 0)
		n++;
	int bad = n == nt ? trade_forks(forks, pause_us, child) : -2;
	__atomic_store_n(&trade_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	trade_free_boxes(0, 1);
	return bad;
}
#endif
