// SPDX-License-Identifier: MIT
/* fork from a process whose threads are allocating and freeing: the child
 * can allocate (no lock left held), and its parent carries on. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static volatile int stop;

static void *churn(void *arg)
{
	uint64_t s = (uintptr_t)arg + 1;
	void *keep[64] = { 0 };
	while (!stop) {
		for (int i = 0; i < 64; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			free(keep[i]);
			size_t n = (s >> 33) % 4 == 0 ? 50000 + (s >> 40) % 100000 : 1 + (s >> 40) % 2000;
			keep[i] = malloc(n);
			if (keep[i])
				memset(keep[i], (int)i, n < 64 ? n : 64);
		}
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

static void *short_lived(void *arg)
{
	free(malloc((size_t)(uintptr_t)arg));
	return NULL;
}

int main(void)
{
	enum { NT = 3, FORKS = 40 };
	pthread_t t[NT];
	for (int i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)i);
	int ok = 0;
	for (int f = 0; f < FORKS; f++) {
		pid_t pid = fork();
		if (pid == 0) {
			/* the child: malloc of every kind, a thread, frees of the
			 * parent's threads' memory never happen here */
			void *v[200];
			for (int i = 0; i < 200; i++) {
				v[i] = malloc(i % 10 == 0 ? 100000 : (size_t)i * 17 + 1);
				if (!v[i])
					_exit(2);
				memset(v[i], 1, 16);
			}
			for (int i = 0; i < 200; i++)
				free(v[i]);
			pthread_t c;
			if (pthread_create(&c, NULL, short_lived, (void *)(uintptr_t)300) != 0)
				_exit(3);
			pthread_join(c, NULL);
			_exit(0);
		}
		int st = -1;
		/* a child stuck on a lock would hang: bounded wait */
		for (int w = 0; w < 500; w++) {
			pid_t r = waitpid(pid, &st, WNOHANG);
			if (r == pid)
				break;
			usleep(10000);
			if (w == 499) {
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				st = -1;
			}
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else
			CHECK(0, "fork %d: child status %d", f, st);
	}
	stop = 1;
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(ok, FORKS);
	void *after = malloc(123);
	CHECK(after != NULL && nd_node_of(after) >= 0);
	free(after);
	return CHECK_DONE();
}
