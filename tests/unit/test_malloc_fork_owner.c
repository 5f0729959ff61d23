// SPDX-License-Identifier: MIT
/* The owner test (nd_slab.h: a slab's tp is its owner's thread pointer)
 * in a fork's child. The parent's other threads do not exist there, and
 * glibc gives a thread the child makes the stack, and so the thread
 * pointer, of one of them: its frees of that dead thread's objects pass
 * the owner test on slabs of a heap whose owner record is not its own.
 * Their pushes onto those slabs are harmless (no other thread of the child
 * touches a dead heap's slabs' free lists), but the slow path of such a
 * free changed the dead heap's lists as if the child thread owned them
 * (same_tp below; the stress tripped set_cur's ND_ASSERT in the debug
 * build); the lists may have been mid-update at the fork and are left
 * alone:
 *  - same_tp: a thread of the parent makes two sets of objects and is alive
 *           at the fork; in the child, a thread that gets its thread pointer
 *           (checked) frees the first set before it ever allocates, a second
 *           one (the same thread pointer again) allocates, then frees the
 *           other set: the dead thread's heap keeps its lists as they were
 *           at the fork; the first also frees a large object (a chunk) of a
 *           public heap (nd_heap_new) the dead thread made: the chunk is not
 *           unlinked and its pages stay the heap's (heap_api.c; before, the
 *           child thread passed the creator test and gave them back, an edit
 *           of the dead creator's chunk list);
 *  - stress: threads that allocate, trade and exit while the main thread
 *           forks; each child makes threads that free what the parent's
 *           threads left in the boxes, allocate and exit. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "trade_fixture.h"

enum { N = 1024, SIZE = 64 };

static void *set_a[N], *set_b[N];
static pthread_barrier_t bar;
/* the parent's thread's heap and its lists of SIZE's class at the fork */
static _nd_heap_t *dead_heap;
static _nd_slab_t *dead_cur, *dead_full;
static unsigned cls;
static uintptr_t owner_tp;
/* a public heap of the parent's thread and a chunk of it (> ND_SLAB_MAX) */
static nd_heap_t *dead_uheap;
static void *dead_chunk;

static void *owner(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++) {
		set_a[i] = malloc(SIZE);
		set_b[i] = malloc(SIZE);
	}
	dead_uheap = nd_heap_new(0);
	dead_chunk = dead_uheap ? nd_heap_malloc(dead_uheap, 4 * ND_SLAB_MAX) : NULL;
	owner_tp = (uintptr_t)__builtin_thread_pointer();
	dead_heap = _nd_tls->heap;
	dead_cur = dead_heap->cur[cls];
	dead_full = dead_heap->fullh[cls];
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* the child is done */
	for (int i = 0; i < N; i++) {
		free(set_a[i]);
		free(set_b[i]);
	}
	free(dead_chunk);
	nd_heap_destroy(dead_uheap);
	return NULL;
}

/* bit 0: not the owner's thread pointer; bit 1: a malloc failed; bit 7:
 * the dead thread's chunk was given back */
static void *child_free_first(void *arg)
{
	(void)arg;
	int r = (uintptr_t)__builtin_thread_pointer() != owner_tp;
	for (int i = 0; i < N; i++)
		free(set_a[i]);
	free(dead_chunk);
	r |= _nd_page_desc(dead_chunk)->use != ND_USE_HEAP ? 128 : 0;
	void *v[N];
	for (int i = 0; i < N; i++)
		r |= (v[i] = malloc(SIZE)) == NULL ? 2 : 0;
	for (int i = 0; i < N; i++)
		free(v[i]);
	return (void *)(uintptr_t)r;
}

static void *child_alloc_first(void *arg)
{
	(void)arg;
	int r = (uintptr_t)__builtin_thread_pointer() != owner_tp;
	void *v[N];
	for (int i = 0; i < N; i++)
		r |= (v[i] = malloc(SIZE)) == NULL ? 2 : 0;
	for (int i = 0; i < N; i++)
		free(set_b[i]);
	for (int i = 0; i < N; i++)
		free(v[i]);
	return (void *)(uintptr_t)r;
}

static int run_child_thread(void *(*fn)(void *))
{
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, fn, NULL) != 0 || pthread_join(t, &r) != 0)
		return 4;
	return (int)(uintptr_t)r;
}

static void same_tp_case(void)
{
	cls = _nd_slab_class_of(SIZE);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t o;
	CHECK(pthread_create(&o, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bar);
	CHECK(dead_full != NULL, "the owner's heap has full slabs of the class");
	CHECK(dead_chunk != NULL, "the owner's public heap has a chunk");
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		int r = run_child_thread(child_free_first);
		r |= run_child_thread(child_alloc_first) << 3;
		if (dead_heap->cur[cls] != dead_cur || dead_heap->fullh[cls] != dead_full)
			r |= 64;
		_exit(r);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st), "child status %#x (killed: the debug build's assertion?)", st);
	int r = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
	CHECK(!(r & (1 | 8)), "each child thread got the parent's thread's thread pointer (%#x)", r);
	CHECK(!(r & (2 | 16)), "the child threads' mallocs succeeded (%#x)", r);
	CHECK(!(r & (4 | 32)), "the child threads ran (%#x)", r);
	CHECK(!(r & 64), "the dead thread's heap kept its lists in the child");
	CHECK(!(r & 128), "the dead thread's public heap kept its chunk in the child");
	pthread_barrier_wait(&bar);
	pthread_join(o, NULL);
}

/* ---- stress ---- */
enum { NT = 4, FORKS = 200 };

/* a thread lives a few rounds, so the main thread forks while some are
 * alive and others have exited */
static void *trader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int round = 0; round < 8 + (int)(seed % 8); round++)
		trade_round(&seed);
	return NULL;
}

static void *spawner(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!__atomic_load_n(&trade_stop, __ATOMIC_RELAXED)) {
		pthread_t t;
		if (pthread_create(&t, NULL, trader, (void *)(uintptr_t)rand_r(&seed)) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

/* the child's threads: each frees the boxes of index arg mod NT (objects
 * of the parent's threads), then allocates and frees */
static void *child_worker(void *arg)
{
	void *v[256];
	trade_free_boxes((int)(uintptr_t)arg, NT);
	for (int r = 0; r < 4; r++) {
		for (int i = 0; i < 256; i++)
			v[i] = malloc(trade_sizes[(i + r) % TRADE_NSIZES]);
		for (int i = 0; i < 256; i++)
			free(v[i]);
	}
	return NULL;
}

static int child_main(void)
{
	pthread_t c[NT];
	for (int i = 0; i < NT; i++)
		if (pthread_create(&c[i], NULL, child_worker, (void *)(uintptr_t)i) != 0)
			return 2;
	for (int i = 0; i < NT; i++)
		pthread_join(c[i], NULL);
	return 0;
}

static void stress_case(void)
{
	int bad = trade_stress(NT, spawner, FORKS, 1000, child_main);
	CHECK(bad == 0, "a child failed: status %#x", bad);
}

int main(void)
{
	same_tp_case();
	stress_case();
	return CHECK_DONE();
}
