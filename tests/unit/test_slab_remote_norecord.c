// SPDX-License-Identifier: MIT
/* Remote frees by threads that never allocate (a held-out benchmark's
 * releaser threads): such a thread gets its record at its first remote
 * free, so its frees are batched per slab and counted in its record, not
 * sent one CAS at a time and added to the per-class counter all such
 * threads share. Each case runs in a child (a fresh process):
 *  - batch: a thread that never allocated frees 200 objects of one slab:
 *           it has a record, sent them in a few splices (before: 200, no
 *           record) with some still waiting; the class's remote_frees
 *           counts exactly the objects sent, and all 200 once it exited;
 *           the owner gets all 200 back;
 *  - gone:  past its exit hook a thread's frees make no record (it would
 *           never be released): each goes home at once, counted at once;
 *  - busy:  while another thread holds the record lock (a statistics
 *           walk) such a free does not wait: sent at once, no record;
 *           its next free, the lock free, makes the record. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "remote_fixture.h"

/* The class's remote frees counted so far (sent home, or by threads that
 * exited). */
static uint64_t remote_frees(void)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	_nd_slab_class_stats(st, ND_SLAB_CLASSES);
	return st[_nd_slab_class_of(SZ)].remote_frees;
}

static struct {
	bool start_ok, record, record_later;
	unsigned pending;
	uint64_t sent, counted;
} seen;
static uint64_t before; /* remote_frees() when the case started */

/* Frees obj[lo .. hi) and notes what the calling thread then holds
 * (not the counters: their walk takes the record lock). */
static void free_and_see(int lo, int hi)
{
	for (int i = lo; i < hi; i++)
		free(obj[i]);
	seen.record = !_nd_thread_none(_nd_tls);
	seen.pending = _nd_slab_remote_pending();
	seen.sent = _nd_slab_remote_sent();
}

/* obj[] allocated here, fn run in a thread to its end. */
static void run_freer(void *(*fn)(void *))
{
	alloc_all();
	before = remote_frees();
	pthread_t t;
	pthread_create(&t, NULL, fn, NULL);
	pthread_join(t, NULL);
}

/* Frees every obj[] (never allocates) and exits without flushing. */
static void *freer(void *arg)
{
	(void)arg;
	seen.start_ok = _nd_tls == &_nd_thread_boot;
	free_and_see(0, N);
	seen.counted = remote_frees() - before;
	return NULL;
}

static int case_batch(void)
{
	run_freer(freer);
	CHECK(seen.start_ok, "the thread started without a record");
	CHECK(seen.record, "the thread has a record after its frees");
	CHECK(seen.sent >= 1 && seen.sent <= N / 8, "200 remote frees of one slab: %llu splices",
	      (unsigned long long)seen.sent);
	CHECK(seen.pending > 0 && seen.pending < N, "waiting in the buffer before the exit: %u", seen.pending);
	CHECK_EQ(seen.counted, (uint64_t)(N - seen.pending)); /* only what was sent home */
	CHECK_EQ(remote_frees() - before, (uint64_t)N);       /* the rest at the exit */
	CHECK_EQ(reused(), N);
	return CHECK_DONE();
}

/* A thread with a record runs its exit (as the pthread key destructor
 * does), then frees: no record, every object home and counted at once. */
static void *freer_after_exit(void *arg)
{
	(void)arg;
	free(malloc(SZ)); /* a record */
	_nd_slab_thread_exit();
	seen.start_ok = _nd_tls == &_nd_thread_gone.t;
	free_and_see(0, N);
	seen.counted = remote_frees() - before;
	return NULL;
}

static int case_gone(void)
{
	run_freer(freer_after_exit);
	CHECK(seen.start_ok, "past its exit the thread points at the gone record");
	CHECK(!seen.record, "no record made by a free past the exit");
	CHECK_EQ(seen.pending, 0u);
	CHECK_EQ(seen.counted, (uint64_t)N);
	CHECK_EQ(reused(), N);
	return CHECK_DONE();
}

/* busy: the freer waits for go, frees obj[0..N-2] while the main thread
 * holds the record lock, reports, waits for go == 2, frees obj[N-1]. */
static int go;
static int freed;
static bool walked;

static void *freer_busy(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) != 1)
		sched_yield();
	free_and_see(0, N - 1);
	__atomic_store_n(&freed, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
	seen.counted = remote_frees() - before;
	free(obj[N - 1]);
	seen.record_later = !_nd_thread_none(_nd_tls);
	return NULL;
}

/* Runs under the record lock (_nd_thread_each): lets the freer free and
 * waits for it (a free that waited for the lock would never finish). */
static void hold_lock(_nd_thread_t *t, void *arg)
{
	(void)t;
	(void)arg;
	if (walked)
		return;
	walked = true;
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&freed, __ATOMIC_ACQUIRE))
		sched_yield();
}

static int case_busy(void)
{
	alloc_all();
	before = remote_frees();
	pthread_t t;
	pthread_create(&t, NULL, freer_busy, NULL);
	_nd_thread_each(hold_lock, NULL);
	__atomic_store_n(&go, 2, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(walked, "the walk ran");
	CHECK(!seen.record, "no record while the lock was held");
	CHECK_EQ(seen.pending, 0u);
	CHECK_EQ(seen.counted, (uint64_t)(N - 1));
	CHECK(seen.record_later, "the next free made the record");
	CHECK_EQ(remote_frees() - before, (uint64_t)N);
	CHECK_EQ(reused(), N);
	return CHECK_DONE();
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "batch"))
			return case_batch();
		if (!strcmp(argv[1], "gone"))
			return case_gone();
		return case_busy();
	}
	const char *cases[] = { "batch", "gone", "busy" };
	char msg[4096];
	for (unsigned c = 0; c < 3; c++) {
		int st = run_child("/proc/self/exe", (char *const[]){ argv[0], (char *)cases[c], NULL }, NULL, NULL,
				   true, msg, sizeof msg);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d: %s", cases[c], st, msg);
	}
	return CHECK_DONE();
}
