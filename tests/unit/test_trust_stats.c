// SPDX-License-Identifier: MIT
/*
 * Trust (task trust27): the statistics add up after threads whose caches
 * hold runs exit. Four threads at once allocate every regime (small
 * objects of many classes, 9..64 page runs for the thread cache, big runs
 * for the node caches, interleaved runs for the spread cache, runs placed
 * on the CPU-less node 1), free them all (part of them by another
 * thread: remote frees), keep runs in every cache, and exit; one more
 * exits with its blocks still live, which the main thread frees after.
 * The workload runs twice; after the second, the large runs in use are
 * back at once (whatever cache keeps the freed ones), and after
 * malloc_trim every count is back where the first left it: each node's
 * bytes in use and committed, the large runs in use, the objects of every
 * size class, mallinfo2's bytes in use; nothing cached. malloc_trim did
 * not send the calling thread's batched remote frees home: the leaver's
 * objects this thread freed (76) kept their slabs (800 KiB) in use.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "trust_fixture.h"
#include "stats_fixture.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define NT 4
#define NB 600

struct snap {
	uint64_t in_use[2], committed[2];
	uint64_t large, cached, runs;
	uint64_t objects;
	size_t uord;
};

static struct snap snap(void)
{
	struct snap s;
	for (int n = 0; n < 2; n++) {
		s.in_use[n] = node_stats(n)->bytes_in_use;
		s.committed[n] = node_stats(n)->bytes_committed;
	}
	_nd_large_usage(&s.large, &s.cached, &s.runs);
	static nd_class_stats_t cl[256];
	int k = nd_stats_classes(cl, 256);
	CHECK(k > 0 && k <= 256);
	s.objects = 0;
	for (int i = 0; i < k && i < 256; i++)
		s.objects += cl[i].objects;
#ifdef ND_NO_OVERRIDE
	s.uord = 0; /* mallinfo2 is the C library's there */
#else
	s.uord = mallinfo2().uordblks;
#endif
	return s;
}

static int thread_bad; /* CHECK's counters are the main thread's */

static nd_policy_t policy(const char *s)
{
	nd_policy_t p;
	char err[256] = "";
	if (nd_policy_parse(s, &p, err, sizeof err) != 0)
		__atomic_fetch_add(&thread_bad, 1, __ATOMIC_RELAXED);
	return p;
}

static size_t size_of(int i)
{
	switch (i % 6) {
	case 0: return 16 + (size_t)(i % 50) * 40;     /* small classes */
	case 1: return 3000 + (size_t)(i % 9) * 3000;  /* bigger classes */
	case 2: return (9 + (size_t)(i % 56)) * 4096;  /* thread cache */
	case 3: return 600 * KiB + (size_t)(i % 5) * 300 * KiB; /* node cache */
	case 4: return 64 * KiB;                       /* spread (interleaved) */
	default: return 20 * KiB + (size_t)(i % 3) * 20 * KiB;
	}
}

static char *alloc(int i)
{
	static nd_policy_t il;
	static int il_set;
	if (!__atomic_load_n(&il_set, __ATOMIC_ACQUIRE)) {
		il = policy("interleave:0,1");
		__atomic_store_n(&il_set, 1, __ATOMIC_RELEASE);
	}
	size_t n = size_of(i);
	char *p = i % 6 == 4 ? nd_malloc_policy(n, &il) : i % 13 == 5 ? nd_malloc_onnode(n, 1) : malloc(n);
	if (!p)
		__atomic_fetch_add(&thread_bad, 1, __ATOMIC_RELAXED);
	else
		memset(p, i, n < 4096 ? n : 4096);
	return p;
}

/* half of each thread's blocks freed by the next thread (remote frees) */
static char *handoff[NT][NB];
static pthread_barrier_t bar;

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char *b[NB];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < NB; i++)
			b[i] = alloc(i + round);
		for (int i = 0; i < NB; i += 2)
			free(b[i]);
		for (int i = 1; i < NB; i += 2)
			handoff[t][i] = b[i];
		pthread_barrier_wait(&bar);
		int from = (t + 1) % NT;
		for (int i = 1; i < NB; i += 2) {
			free(handoff[from][i]);
			handoff[from][i] = NULL;
		}
		pthread_barrier_wait(&bar);
	}
	/* runs left in every cache at the exit */
	for (int i = 0; i < 24; i++)
		free(alloc(i * 6 + 2));
	free(alloc(3));
	free(alloc(4));
	return NULL;
}

static char *left[NB];

static void *leaver(void *arg)
{
	(void)arg;
	for (int i = 0; i < NB; i++)
		left[i] = alloc(i);
	free(alloc(2));
	return NULL;
}

/* The workload once: NT threads, then the leaver, whose blocks this
 * thread frees after its exit. */
static void once(void)
{
	pthread_t th[NT];
	for (int t = 0; t < NT; t++)
		CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
	for (int t = 0; t < NT; t++)
		pthread_join(th[t], NULL);
	pthread_t lt;
	CHECK(pthread_create(&lt, NULL, leaver, NULL) == 0);
	pthread_join(lt, NULL);
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	for (int i = 0; i < NB; i++)
		free(left[i]);
	uint64_t in_use2;
	_nd_large_usage(&in_use2, &cached, &runs);
	CHECK(in_use2 < in_use, "the leaver's large blocks were counted in use");
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=512M", err, sizeof err) == 0, "emulate: %s", err);
	pthread_barrier_init(&bar, NULL, NT);
	/* a first round makes what stays for the process (thread records,
	 * metadata, the C library's own blocks: stdout's buffer, the thread
	 * stacks' cache); a trim collects what parked heaps were sent */
	once();
	printf("first round done\n"); /* stdout's buffer made now */
	trust_trim();
	struct snap a = snap();
	once();
	struct snap b = snap();
	/* large runs are counted out of use the moment they are freed,
	 * whatever cache keeps them */
	CHECK(b.large == a.large, "large runs in use: %llu B, %llu before", (unsigned long long)b.large,
	      (unsigned long long)a.large);
	printf("after the threads: %llu B in %llu cached runs; %lld small objects, %lld B uordblks more than before\n",
	       (unsigned long long)b.cached, (unsigned long long)b.runs, (long long)(b.objects - a.objects),
	       (long long)(b.uord - a.uord));
	/* frees not yet home (this thread's batched remote frees of the
	 * leaver's objects, the exited threads' of each other's) count in
	 * use until collected (nd_stats_classes); the trim sends this
	 * thread's home (before the fix it did not: 76 objects and 800 KiB
	 * of the leaver's slabs stayed in use) and collects the parked
	 * heaps' */
	trust_trim();
	struct snap c = snap();
	CHECK_EQ(__atomic_load_n(&thread_bad, __ATOMIC_RELAXED), 0);
	CHECK_EQ(c.runs, 0);
	CHECK_EQ(c.cached, 0);
	for (int n = 0; n < 2; n++) {
		CHECK(c.in_use[n] == a.in_use[n], "node %d: %llu B in use, %llu before", n, (unsigned long long)c.in_use[n],
		      (unsigned long long)a.in_use[n]);
		CHECK(c.committed[n] <= a.committed[n], "node %d: %llu B committed, %llu before", n,
		      (unsigned long long)c.committed[n], (unsigned long long)a.committed[n]);
	}
	CHECK(c.large == a.large, "large runs in use: %llu B, %llu before", (unsigned long long)c.large,
	      (unsigned long long)a.large);
	CHECK(c.objects == a.objects, "small objects in use: %llu, %llu before", (unsigned long long)c.objects,
	      (unsigned long long)a.objects);
	CHECK(c.uord == a.uord, "mallinfo2 uordblks: %zu, %zu before", c.uord, a.uord);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
