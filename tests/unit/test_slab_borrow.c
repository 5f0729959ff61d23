// SPDX-License-Identifier: MIT
/* Borrowed remote frees (issue 11, cross-thread frees): a thread's free of
 * another thread's object on the node of its own heap waits in the
 * thread's borrowed list and serves its next mallocs of the class, with
 * no splice home. Placement stays exact (emulated topology, node 0: CPUs
 * 0-1, node 1: CPUs 2-3):
 *  - reuse:     on node 0, frees of a node-0 object made by another thread
 *               come back from this thread's next mallocs (a size of the
 *               direct table and one above it), none is sent home;
 *  - migrate:   objects borrowed on node 0, then the thread moves to a CPU
 *               of node 1: its mallocs are on node 1, none of them is a
 *               borrowed object, and the borrowed ones went home;
 *  - policy:    the same when the thread's policy changes (preferred:1,
 *               then interleave:0-1, whose heap borrows nothing);
 *  - parked:    objects of a thread that exited go home (its parked heap
 *               can then be trimmed; borrowing them pinned dead threads'
 *               slabs: test_slab_stress's churn footprint grew 8 MiB);
 *  - exit:      a thread that exits with borrowed objects sends them home:
 *               the owner's heap gets every object back;
 *  - accounting: borrowed objects stay counted out by their slabs
 *               (per-class statistics), and a second free of one is
 *               reported as a double free. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 64, K = 16 };

static size_t obj_size;
static void *theirs[N]; /* made by another thread of node 0 */
static pthread_barrier_t made, done;
static pthread_t maker;

/* The owner stays alive until maker_exit (a parked heap's objects are
 * not borrowed: they go home so that the heap can be trimmed). */
static void *make_theirs(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	for (int i = 0; i < N; i++)
		theirs[i] = malloc(obj_size);
	pthread_barrier_wait(&made);
	pthread_barrier_wait(&done);
	return NULL;
}

/* N objects of size from a running thread of node 0. */
static void other_thread_objects(size_t size)
{
	obj_size = size;
	pthread_barrier_init(&made, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	pthread_create(&maker, NULL, make_theirs, NULL);
	pthread_barrier_wait(&made);
}

static void maker_exit(void)
{
	pthread_barrier_wait(&done);
	pthread_join(maker, NULL);
	pthread_barrier_destroy(&made);
	pthread_barrier_destroy(&done);
}

static int all_on(void **v, int n, int node)
{
	for (int i = 0; i < n; i++)
		if (nd_node_of(v[i]) != node)
			return 0;
	return 1;
}

/* The end of a case: this thread's objects and the maker's from `from`
 * on are freed, the buffered ones sent home, the maker ends. */
static void finish(void **mine, int nmine, int from)
{
	for (int i = 0; i < nmine; i++)
		free(mine[i]);
	for (int i = from; i < N; i++)
		free(theirs[i]);
	_nd_slab_flush_remote();
	maker_exit();
}

static void check_reuse(size_t size)
{
	nd_emulate_cpu(0);
	free(malloc(size)); /* settle on node 0's heap */
	other_thread_objects(size);
	uint64_t sent = _nd_slab_remote_sent();
	for (int i = 0; i < K; i++)
		free(theirs[i]);
	CHECK_EQ(_nd_slab_remote_pending(), K);
	void *mine[K];
	for (int i = 0; i < K; i++)
		mine[i] = malloc(size);
	CHECK(count_in(mine, K, theirs, K) == K, "size %zu: %d of %d borrowed objects reused", size,
	      count_in(mine, K, theirs, K), K);
	CHECK(all_on(mine, K, 0), "size %zu: reused objects on node 0", size);
	CHECK_EQ(_nd_slab_remote_sent(), sent);
	CHECK_EQ(_nd_slab_remote_pending(), 0);
	finish(mine, K, K);
}

static void check_migrate(size_t size)
{
	nd_emulate_cpu(0);
	free(malloc(size));
	other_thread_objects(size);
	for (int i = 0; i < K; i++)
		free(theirs[i]);
	CHECK_EQ(_nd_slab_remote_pending(), K);
	nd_emulate_cpu(2);
	void *mine[K];
	for (int i = 0; i < K; i++)
		mine[i] = malloc(size);
	CHECK(all_on(mine, K, 1), "size %zu: after migration on node 1", size);
	CHECK_EQ(count_in(mine, K, theirs, N), 0);
	CHECK_EQ(_nd_slab_remote_pending(), 0); /* went home at the heap change */
	finish(mine, K, K);
}

static void check_policy(const char *spec, int want_node)
{
	char err[200];
	nd_policy_t pol;
	CHECK(nd_policy_parse(spec, &pol, err, sizeof err) == 0, "%s", err);
	nd_emulate_cpu(0);
	free(malloc(48));
	other_thread_objects(48);
	for (int i = 0; i < K; i++)
		free(theirs[i]);
	CHECK(nd_set_policy(&pol) == 0);
	void *mine[4 * K];
	for (int i = 0; i < 4 * K; i++)
		mine[i] = malloc(48);
	if (want_node >= 0)
		CHECK(all_on(mine, 4 * K, want_node), "%s: on node %d", spec, want_node);
	CHECK(count_in(mine, 4 * K, theirs, N) == 0, "%s: %d borrowed node-0 objects handed out", spec,
	      count_in(mine, 4 * K, theirs, N));
	/* a free of node 0 under this policy's heap is not borrowed */
	free(theirs[K]);
	CHECK_EQ(count_in(&theirs[K], 1, mine, 4 * K), 0);
	void *x = malloc(48);
	CHECK(x != theirs[K], "%s: a free under the policy heap came back", spec);
	free(x);
	for (int i = 0; i < 4 * K; i++)
		free(mine[i]);
	for (int i = K + 1; i < N; i++)
		free(theirs[i]);
	CHECK(nd_set_policy(NULL) == 0);
	_nd_slab_flush_remote();
	maker_exit();
}

/* A parked heap's objects (their thread exited) go home, not borrowed. */
static void check_parked(void)
{
	nd_emulate_cpu(0);
	free(malloc(64));
	other_thread_objects(64);
	maker_exit();
	for (int i = 0; i < K; i++)
		free(theirs[i]);
	void *mine[K];
	for (int i = 0; i < K; i++)
		mine[i] = malloc(64);
	CHECK_EQ(count_in(mine, K, theirs, N), 0);
	for (int i = 0; i < K; i++)
		free(mine[i]);
	for (int i = K; i < N; i++)
		free(theirs[i]);
	_nd_slab_flush_remote();
}

static pthread_barrier_t bar;

static void *borrow_and_exit(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	free(malloc(96));
	for (int i = 0; i < N; i++)
		free(theirs[i]);
	return (void *)(uintptr_t)_nd_slab_remote_pending();
}

/* The owner stays alive while another thread borrows its objects and
 * exits, then gets every one back from its own mallocs. */
static void *owner(void *arg)
{
	int *hits = arg;
	nd_emulate_cpu(1);
	for (int i = 0; i < N; i++)
		theirs[i] = malloc(96);
	pthread_barrier_wait(&bar); /* the borrower runs and exits */
	pthread_barrier_wait(&bar);
	enum { M = 16384 / 96 * 4 };
	static void *again[M];
	for (int i = 0; i < M; i++)
		again[i] = malloc(96);
	*hits = count_in(theirs, N, again, M);
	for (int i = 0; i < M; i++)
		free(again[i]);
	return NULL;
}

static void check_exit(void)
{
	pthread_barrier_init(&bar, NULL, 2);
	int hits = 0;
	pthread_t o, t;
	void *pending = NULL;
	pthread_create(&o, NULL, owner, &hits);
	pthread_barrier_wait(&bar);
	pthread_create(&t, NULL, borrow_and_exit, NULL);
	pthread_join(t, &pending);
	pthread_barrier_wait(&bar);
	pthread_join(o, NULL);
	CHECK((uintptr_t)pending > 0, "the exiting thread borrowed objects");
	CHECK_EQ(hits, N);
	pthread_barrier_destroy(&bar);
}

static uint64_t class_objects(size_t size)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	_nd_slab_class_stats(st, ND_SLAB_CLASSES);
	return st[_nd_slab_class_of(size)].objects;
}

static void check_accounting(void)
{
	nd_emulate_cpu(0);
	free(malloc(160));
	uint64_t before = class_objects(160);
	other_thread_objects(160);
	CHECK_EQ(class_objects(160), before + N);
	for (int i = 0; i < K; i++)
		free(theirs[i]);
	CHECK_EQ(_nd_slab_remote_pending(), K);
	CHECK_EQ(class_objects(160), before + N); /* borrowed: still out */
	pid_t pid = fork();
	if (pid == 0) {
		/* the fork sent the buffer home; borrow again, free twice */
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2); /* the expected report */
		nd_emulate_cpu(0);
		free(theirs[K]);
		if (_nd_slab_remote_pending() != 1)
			_exit(3);
		free(theirs[K]);
		_exit(0); /* not reported: failure */
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "double free of a borrowed object: status %#x", st);
	finish(NULL, 0, K);
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	check_reuse(64);  /* the direct table's path (malloc.c) */
	check_reuse(400); /* above it (heap.c, _nd_heap_malloc) */
	check_migrate(64);
	check_migrate(400);
	check_policy("preferred:1", 1);
	check_policy("interleave:0-1", -1);
	check_parked();
	check_exit();
	check_accounting();
	return CHECK_DONE();
}
