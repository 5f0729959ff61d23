// SPDX-License-Identifier: MIT
/* Mixed frees (issue 11, wl_xfree): once an object of a slab is borrowed,
 * its stamp carries ND_TP_MIX and every free of the slab goes onto the
 * freeing thread's borrowed list, the owner's too, with no owner branch
 * (which mispredicted 0.44 times per free when a thread frees its own and
 * other threads' objects at random). Asserted, two threads of node 0
 * (emulated topology), each freeing the other's objects and its own:
 *  - flag:    a borrowed object's slab is flagged, with its owner kept;
 *  - owner:   the owner's frees into its flagged slab go onto its own
 *             borrowed list (its mallocs get them back) and are not
 *             counted as remote frees;
 *  - borrow:  the other thread's frees into the flagged slab are borrowed
 *             (reused by its mallocs, none sent home) and counted in the
 *             class's remote frees, the owner's frees are not;
 *  - dry:     once the borrowed list that served its mallocs runs dry,
 *             the thread's current slab of the class is flagged too, so
 *             its own frees into it come to the list (no owner branch
 *             that its frees of flagged and unflagged slabs mispredict)
 *             and its next mallocs get them back;
 *  - interleaved: a thread that frees its own and borrowed objects
 *             alternately keeps every one for its own mallocs;
 *  - double free: still reported on the flagged path (another thread's
 *             object, and the owner's own), from node 1 of a flagged
 *             node-0 object (sent home) and of the owner's own (its
 *             slab's push): free's push writes the marker on each path
 *             (the borrowed push with the link, in one store);
 *  - node:    the flag carries the slab's node (ND_TP_BITS: free's
 *             borrowing test is one compare with the freeing thread's
 *             key), and a thread of node 1 does not keep a free of the
 *             flagged node-0 slab: its next malloc is on node 1. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 32, SIZE = 80 };

static void *theirs[N];
static uintptr_t their_tp;
static pthread_barrier_t bar;
static int owner_got, owner_pending;

static uint64_t class_remote(void)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	_nd_slab_class_stats(st, ND_SLAB_CLASSES);
	return st[_nd_slab_class_of(SIZE)].remote_frees;
}

static uintptr_t stamp_of(const void *p)
{
	return __atomic_load_n(&_nd_slab_of(p)->tp, __ATOMIC_RELAXED);
}

/* A second free of p (allocated) aborts with the double-free report
 * (in a child: the report ends the process). */
static void check_double_free(void *p, const char *what)
{
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2); /* the expected report */
		free(p);
		free(p);
		_exit(0); /* not reported: failure */
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "double free %s: status %#x", what, st);
}

/* The owner: makes N objects; once the main thread borrowed the first
 * quarter, frees the second quarter itself and mallocs them back. */
static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	their_tp = (uintptr_t)__builtin_thread_pointer();
	for (int i = 0; i < N; i++)
		theirs[i] = malloc(SIZE);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main borrowed theirs[0 .. N/4) */
	for (int i = N / 4; i < N / 2; i++)
		free(theirs[i]);
	owner_pending = (int)_nd_slab_remote_pending();
	void *back[N / 4];
	for (int i = 0; i < N / 4; i++)
		back[i] = malloc(SIZE);
	owner_got = count_in(back, N / 4, &theirs[N / 4], N / 4);
	for (int i = 0; i < N / 4; i++)
		theirs[N / 4 + i] = back[i];
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main is done */
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(0);
	free(malloc(SIZE)); /* this thread's record and node-0 heap */
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bar);
	CHECK_EQ(stamp_of(theirs[0]), their_tp); /* not flagged before a borrow */

	/* flag */
	uint64_t rem0 = class_remote();
	uint64_t sent = _nd_slab_remote_sent();
	for (int i = 0; i < N / 4; i++)
		free(theirs[i]);
	CHECK_EQ(_nd_slab_remote_pending(), N / 4);
	CHECK_EQ(_nd_slab_tp_mix(1), 3); /* ND_TP_MIX, node 0 + 1 above it */
	CHECK_EQ(stamp_of(theirs[0]), their_tp | _nd_slab_tp_mix(1));

	/* owner */
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	CHECK_EQ(owner_pending, N / 4);
	CHECK_EQ(owner_got, N / 4);
	CHECK_EQ(class_remote(), rem0 + N / 4);

	/* borrow, on the flagged path */
	void *mine[N / 4];
	for (int i = 0; i < N / 4; i++)
		mine[i] = malloc(SIZE);
	CHECK_EQ(count_in(mine, N / 4, theirs, N / 4), N / 4);
	CHECK_EQ(_nd_slab_remote_pending(), 0);

	/* dry, then interleaved: one of this thread's own objects, then one
	 * of theirs. The list ran dry at own[0]'s malloc: this thread's
	 * current slab is flagged, its own frees join the list (not counted
	 * as remote frees) */
	void *own[N / 4];
	for (int i = 0; i < N / 4; i++)
		own[i] = malloc(SIZE);
	CHECK_EQ(stamp_of(own[0]), (uintptr_t)__builtin_thread_pointer() | _nd_slab_tp_mix(1));
	for (int i = 0; i < N / 4; i++) {
		free(own[i]);
		free(theirs[N / 2 + i]);
	}
	CHECK(stamp_of(theirs[N / 2]) == (their_tp | _nd_slab_tp_mix(1)), "the owner's slab stays flagged");
	CHECK_EQ(_nd_slab_remote_pending(), N / 2); /* own and theirs on the list */
	CHECK_EQ(class_remote(), rem0 + N / 2);
	void *again[N / 2];
	for (int i = 0; i < N / 2; i++)
		again[i] = malloc(SIZE);
	CHECK_EQ(count_in(again, N / 2, own, N / 4) + count_in(again, N / 2, &theirs[N / 2], N / 4), N / 2);
	CHECK_EQ(_nd_slab_remote_sent(), sent);

	/* double free on the flagged path: another thread's object, and
	 * this thread's own (again[] holds both) */
	check_double_free(theirs[3 * N / 4], "on the flagged path");
	uintptr_t me = (uintptr_t)__builtin_thread_pointer();
	void *mine_flagged = NULL;
	for (int i = 0; i < N / 2 && !mine_flagged; i++)
		if (stamp_of(again[i]) == (me | _nd_slab_tp_mix(1)))
			mine_flagged = again[i];
	CHECK(mine_flagged != NULL, "again[] holds an object of this thread's flagged slab");
	if (mine_flagged)
		check_double_free(mine_flagged, "of the owner's object on the flagged path");

	/* node: on node 1 now, a free of the flagged node-0 slab goes home */
	nd_emulate_cpu(2);
	free(malloc(SIZE)); /* this thread's node-1 heap */
	void *x = theirs[N - 1];
	CHECK_EQ(stamp_of(x), their_tp | _nd_slab_tp_mix(1));
	free(x);
	void *y = malloc(SIZE);
	CHECK(y != x && nd_node_of(y) == 1, "node 1's malloc after a free of node 0's flagged slab: %p (node %d)", y,
	      nd_node_of(y));
	free(y);
	/* from node 1: another thread's flagged node-0 object goes home, the
	 * owner's own onto its slab; both still report a second free */
	check_double_free(theirs[N - 2], "from node 1 of another thread's flagged node-0 object");
	if (mine_flagged)
		check_double_free(mine_flagged, "from node 1 of the owner's flagged node-0 object");

	for (int i = 0; i < N / 2; i++)
		free(again[i]);
	for (int i = 0; i < N / 4; i++)
		free(mine[i]);
	for (int i = 3 * N / 4; i < N - 1; i++)
		free(theirs[i]);
	for (int i = N / 4; i < N / 2; i++)
		free(theirs[i]);
	_nd_slab_flush_remote();
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	return CHECK_DONE();
}
