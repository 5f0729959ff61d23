// SPDX-License-Identifier: MIT
/* Batched remote frees (issue 11, "Remote frees that scale"): a thread's
 * frees into slabs it does not own wait in its record, chained per slab,
 * and go home as one splice. Each case runs in a child (a fresh process:
 * heap pools and buffers of one case do not leak into the next):
 *  - batch:   200 remote frees of one slab are sent in a few splices, not
 *             200, and some wait in the buffer until the thread exits;
 *             the thread's exit sends the rest: the owner gets all 200
 *             back (without the exit flush it gets 192);
 *  - parked:  the owner exited first (its heap parked); the frees reach
 *             the parked heap, and the thread adopting it gets them all;
 *  - fork:    a fork sends the forking thread's buffer home first (parent
 *             and child both see it empty);
 *  - double:  a second free of an object still waiting in the buffer is
 *             reported as a double free (default and NODALLOC_CHECK=1). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "remote_fixture.h"

static void *volatile sink;

static unsigned pending_seen;
static uint64_t sent_seen;

/* Frees every obj[] remotely and exits without flushing. */
static void *freer(void *arg)
{
	(void)arg;
	sink = malloc(1000); /* a thread that allocates (test_slab_remote_norecord: one that does not) */
	free(sink);
	for (int i = 0; i < N; i++)
		free(obj[i]);
	pending_seen = _nd_slab_remote_pending();
	sent_seen = _nd_slab_remote_sent();
	return NULL;
}

static void *allocator(void *arg)
{
	(void)arg;
	alloc_all();
	return NULL;
}

static int hits_seen;
static void *adopter(void *arg)
{
	(void)arg;
	hits_seen = reused();
	return NULL;
}

static int case_batch(void)
{
	alloc_all();
	pthread_t t;
	pthread_create(&t, NULL, freer, NULL);
	pthread_join(t, NULL);
	CHECK(sent_seen <= N / 8, "200 remote frees of one slab: %llu splices",
	      (unsigned long long)sent_seen);
	CHECK(pending_seen > 0 && pending_seen < N, "waiting in the buffer before the exit: %u", pending_seen);
	CHECK_EQ(reused(), N); /* the exit sent the rest home */
	return CHECK_DONE();
}

/* The owner allocates and exits (its heap is parked), this thread frees
 * everything remotely; some frees wait in its buffer. */
static void free_after_owner_exit(void)
{
	pthread_t t;
	pthread_create(&t, NULL, allocator, NULL);
	pthread_join(t, NULL);
	for (int i = 0; i < N; i++)
		free(obj[i]);
	CHECK(_nd_slab_remote_pending() > 0, "some frees wait");
}

/* A new thread adopts the parked heap and gets every object back. */
static void adopt_gets_all(void)
{
	pthread_t t;
	pthread_create(&t, NULL, adopter, NULL);
	pthread_join(t, NULL);
	CHECK_EQ(hits_seen, N);
}

static int case_parked(void)
{
	free_after_owner_exit();
	_nd_slab_flush_remote();
	CHECK_EQ(_nd_slab_remote_pending(), 0);
	adopt_gets_all();
	return CHECK_DONE();
}

static int case_fork(void)
{
	free_after_owner_exit();
	pid_t pid = fork();
	if (pid == 0)
		_exit(_nd_slab_remote_pending() == 0 ? 0 : 1);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: buffer empty after fork (status %d)", st);
	CHECK_EQ(_nd_slab_remote_pending(), 0);
	adopt_gets_all();
	return CHECK_DONE();
}

static int case_double(void)
{
	pthread_t t;
	pthread_create(&t, NULL, allocator, NULL);
	pthread_join(t, NULL);
	free(obj[0]);
	free(obj[1]);
	if (_nd_slab_remote_pending() != 2)
		return 3; /* not buffered: the case tests nothing */
	free(obj[0]);
	return 0; /* not reported: failure */
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "batch"))
			return case_batch();
		if (!strcmp(argv[1], "parked"))
			return case_parked();
		if (!strcmp(argv[1], "fork"))
			return case_fork();
		return case_double();
	}
	const char *ok[] = { "batch", "parked", "fork" };
	char msg[4096];
	for (unsigned c = 0; c < 3; c++) {
		int st = run_child("/proc/self/exe", (char *const[]){ argv[0], (char *)ok[c], NULL }, NULL, NULL, true,
				   msg, sizeof msg);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d: %s", ok[c], st, msg);
	}
	for (int check = 0; check < 2; check++) {
		int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "double", NULL }, "NODALLOC_CHECK",
				   check ? "1" : "0", false, msg, sizeof msg);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "double (check %d): status %d: %s", check, st, msg);
		CHECK(strstr(msg, "double free"), "double (check %d): message: %s", check, msg);
	}
	return CHECK_DONE();
}
