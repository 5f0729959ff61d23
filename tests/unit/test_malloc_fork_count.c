// SPDX-License-Identifier: MIT
/*
 * fork and a lock array's count (nd_lock.h, "Counted arrays"): a thread
 * that counts a node's element for the first time (meta.c nodes_used,
 * large.c lnodes_used) while fork's prepare runs is either seen by
 * prepare, which then holds that element's lock too, or waits until the
 * fork is over: it is never inside that element's lock at the fork (the
 * child would reset the lock over its half-made change, or inherit it
 * held). And no lock of an element beyond its count is taken at all
 * (heap.c's trim of the parked heaps, large.c's cached bytes of a node):
 * prepare does not take it, the child would inherit it held.
 *
 * Deterministic: a helper thread holds the array's element 0 until the
 * forking thread waits for it in prepare (its lock word turns 2), then
 * lets a thread count the new element, and releases element 0 once that
 * thread is inside the new element's lock or asleep on a lock. The
 * counting thread stays inside until the fork is over or prepare waits
 * for its lock. Before the fix the child found it inside (2 of 2).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define TN 3 /* the node counted in the window: never used before by this test */

static const _nd_lock_class_t *lock_class(const char *name)
{
	const _nd_lock_class_t *c[64];
	int n = _nd_lock_classes(c, 64);
	for (int i = 0; i < n; i++)
		if (strcmp(c[i]->name, name) == 0)
			return c[i];
	return NULL;
}

static _nd_lock_t *elem(const _nd_lock_class_t *c, int i)
{
	return (_nd_lock_t *)((char *)c->lock + (size_t)i * c->stride);
}

static int waited_on(const _nd_lock_t *l)
{
	return __atomic_load_n(&l->v, __ATOMIC_RELAXED) == 2;
}

/* Thread tid sleeps (state S: a futex wait, the only sleep on its path).
 * Raw calls, no allocation: the forking thread holds the library's locks. */
static int asleep(int tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* ---- the window: a count raised while prepare runs -------------------- */

static struct {
	_nd_lock_t *l0, *ln;     /* the array's element 0, and element TN */
	void (*count)(void);     /* the library's path that counts TN's element */
	atomic_int tid, go, in_cs, held, forked;
} w;
static void *large_block;

static void count_meta(void)
{
	_nd_meta_note_node(TN); /* as _nd_meta_alloc and heap.c's heap_take do */
}

static void count_large(void)
{
	large_block = nd_malloc_onnode(4 << 20, TN); /* large.c's live_add counts TN */
}

static void *counter(void *arg)
{
	(void)arg;
	free(malloc(16)); /* its thread record and heap made before the window */
	atomic_store(&w.tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&w.go))
		sched_yield();
	w.count();
	_nd_lock(w.ln);
	atomic_store(&w.in_cs, 1); /* a change under TN's lock begins */
	while (!atomic_load(&w.forked) && !waited_on(w.ln))
		sched_yield();
	atomic_store(&w.in_cs, 0);
	_nd_unlock(w.ln);
	return NULL;
}

static void *blocker(void *arg)
{
	(void)arg;
	_nd_lock(w.l0);
	atomic_store(&w.held, 1);
	while (!waited_on(w.l0)) /* the forking thread is in prepare, at this array */
		sched_yield();
	atomic_store(&w.go, 1);
	while (!atomic_load(&w.in_cs) && !asleep(atomic_load(&w.tid)))
		sched_yield();
	_nd_unlock(w.l0);
	return NULL;
}

/* 0: the child found no thread inside TN's lock and could take it. */
static int fork_in_window(const _nd_lock_class_t *c, void (*count)(void))
{
	w.l0 = elem(c, 0);
	w.ln = elem(c, TN);
	w.count = count;
	atomic_store(&w.tid, 0);
	atomic_store(&w.go, 0);
	atomic_store(&w.in_cs, 0);
	atomic_store(&w.held, 0);
	atomic_store(&w.forked, 0);
	pthread_t a, b;
	pthread_create(&a, NULL, counter, NULL);
	while (!atomic_load(&w.tid))
		sched_yield();
	pthread_create(&b, NULL, blocker, NULL);
	while (!atomic_load(&w.held))
		sched_yield();
	pid_t pid = fork();
	if (pid == 0) {
		int inside = atomic_load(&w.in_cs);
		alarm(5);
		_nd_lock(w.ln);
		_nd_unlock(w.ln);
		_exit(inside ? 3 : 0);
	}
	atomic_store(&w.forked, 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- no lock beyond the count ------------------------------------------ */

static atomic_int done;
static size_t cached;

static void *trim_parked(void *arg)
{
	(void)arg;
	_nd_heap_trim_parked();
	atomic_store(&done, 1);
	return NULL;
}

static void *large_cached(void *arg)
{
	(void)arg;
	cached = _nd_large_cached(TN);
	atomic_store(&done, 1);
	return NULL;
}

/* fn ran to its end while this thread held l (no one waited for it). */
static int runs_past(_nd_lock_t *l, void *(*fn)(void *))
{
	pthread_t t;
	atomic_store(&done, 0);
	_nd_lock(l);
	pthread_create(&t, NULL, fn, NULL);
	while (!atomic_load(&done) && !waited_on(l))
		sched_yield();
	int ok = atomic_load(&done);
	_nd_unlock(l);
	pthread_join(t, NULL);
	return ok;
}

int main(void)
{
	char err[128];
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=256M; 2: mem=256M; 3: mem=256M", err, sizeof err) == 0,
	      "emulate: %s", err);
	alarm(120); /* a hang fails the test, not ctest's timeout */
	free(malloc(16));
	free(nd_malloc_onnode(4 << 20, 0)); /* large.c counts node 0 */
	const _nd_lock_class_t *meta = lock_class("nodes[].lock"), *large = lock_class("lnodes[].lock");
	CHECK(meta && large, "the registry has meta.c's and large.c's lock arrays");
	if (!meta || !large)
		return CHECK_DONE();
	CHECK(*meta->count >= 1 && *meta->count <= TN, "meta count %d", *meta->count);
	CHECK(*large->count >= 1 && *large->count <= TN, "large count %d", *large->count);

	CHECK(runs_past(elem(meta, TN), trim_parked), "the parked heaps' trim took the lock of a node never counted");
	CHECK(runs_past(elem(large, TN), large_cached), "_nd_large_cached took the lock of a node never counted");
	CHECK_EQ(cached, 0);

	CHECK_EQ(fork_in_window(meta, count_meta), 0);
	CHECK(*meta->count > TN, "meta count %d", *meta->count);
	CHECK_EQ(fork_in_window(large, count_large), 0);
	CHECK(large_block && *large->count > TN, "large count %d", *large->count);
	free(large_block);
	return CHECK_DONE();
}
