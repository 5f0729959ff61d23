// SPDX-License-Identifier: MIT
/* The exchange (slab_remote.c) in a fork's child. The prepare handler
 * drains the forking thread's node only, and other threads put lists
 * until the fork itself: the child inherited lists of objects of the
 * parent's other threads' slabs, whose owners do not exist in the child,
 * and its threads took them. A child thread can get such an owner's
 * thread pointer (glibc gives the child the dead threads' stacks), so
 * its frees of those objects took the owner's path on a heap that is not
 * its own ("only h's owner changes its lists": ND_ASSERT). The child's
 * handler sends every exchange home instead:
 *  - drain: a node's exchange filled by two threads of the parent (one
 *           of them alive at the fork) is empty in the child, and a child
 *           thread of that node gets none of its objects;
 *  - stress: threads of one node trade objects while the main thread
 *           forks; each child makes a thread that allocates, frees and
 *           exits (before: the assertion, in most runs of the debug
 *           build). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "borrow_fixture.h"
#include "check.h"
#include "trade_fixture.h"

enum { N = 64, SIZE = 1024, M = 16 };

static void *theirs[N];
static pthread_barrier_t bo;

/* frees them on node 0 (past its list's cap: the exchange), then moves to
 * node 1 (its list goes home) and exits (its exit drains node 1's) */
static void *freer(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	free(malloc(SIZE));
	for (int i = 0; i < N; i++)
		free(theirs[i]);
	nd_emulate_cpu(2);
	free(malloc(SIZE));
	return NULL;
}

static int child_got = -1;

static void *child_taker(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	void *got[M];
	child_got = borrow_take(got, M, SIZE, theirs, N);
	for (int i = 0; i < M; i++)
		free(got[i]);
	return NULL;
}

static void drain_case(void)
{
	pthread_barrier_init(&bo, NULL, 2);
	pthread_t o;
	struct borrow_owner ow = { theirs, N, SIZE, &bo };
	CHECK(borrow_owner_then(&ow, &o, freer) == 0);
	CHECK_EQ(_nd_slab_xfer_count(0), N / 2);
	nd_emulate_cpu(2); /* the forking thread's node: 1 */
	free(malloc(SIZE));
	pid_t pid = fork();
	if (pid == 0) {
		int bad = _nd_slab_xfer_count(0) != 0;
		pthread_t t;
		if (pthread_create(&t, NULL, child_taker, NULL) != 0)
			_exit(2);
		pthread_join(t, NULL);
		_exit(bad | (child_got != 0) << 1);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st), "child status %#x", st);
	CHECK(!(WEXITSTATUS(st) & 1), "the child's exchange of node 0 is empty");
	CHECK(!(WEXITSTATUS(st) & 2), "a child thread gets none of the parent's exchanged objects");
	CHECK_EQ(_nd_slab_xfer_count(0), N / 2); /* the parent's is left */
	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
}

/* ---- stress ---- */
enum { NT = 3, FORKS = 100 };

static void *trader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	nd_emulate_cpu((int)(seed & 1));
	while (!__atomic_load_n(&trade_stop, __ATOMIC_RELAXED))
		trade_round(&seed);
	return NULL;
}

static void *child_churn(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	void *v[512];
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 512; i++)
			v[i] = malloc(trade_sizes[i % TRADE_NSIZES]);
		for (int i = 0; i < 512; i++)
			free(v[i]);
	}
	return NULL;
}

static int child_main(void)
{
	pthread_t c;
	if (pthread_create(&c, NULL, child_churn, NULL) != 0)
		return 2;
	pthread_join(c, NULL);
	return 0;
}

static void stress_case(void)
{
	int bad = trade_stress(NT, trader, FORKS, 0, child_main);
	CHECK(bad == 0, "a child failed: status %#x", bad);
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	drain_case();
	stress_case();
	return CHECK_DONE();
}
