// SPDX-License-Identifier: MIT
/* Page level under threads: four threads allocate and free runs on two
 * emulated nodes and spread runs, each filling its runs with its own
 * pattern and checking it before freeing (an overlap between threads
 * shows up as a torn pattern); afterwards every slot is consistent and
 * every charge is back. Then fork repeatedly while two threads keep the
 * page level busy: the library's own fork handlers (malloc.c's
 * pthread_atfork, which take every arena lock around fork) must leave the
 * child able to allocate and free on every node.
 * The binary runs on nodalloc's malloc, which takes pages of the CPUs'
 * memory node (node 0 here): the nodes under test (1, 2) have no CPUs, so
 * their charges come back to exactly zero. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define THREADS 4
#define STEPS 4000
#define LIVE 32
#define FORKS 100

static nd_policy_t il, pref1;
static int bad[THREADS], allocs[THREADS];

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t r = 0x2545f4914f6cdd1dull * (uint64_t)(id + 1);
	struct {
		unsigned char *p;
		size_t n;
	} live[LIVE] = { { 0 } };
	for (int step = 0; step < STEPS; step++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		int k = (int)(r % LIVE);
		if (live[k].p) {
			for (size_t j = 0; j < live[k].n; j++)
				if (live[k].p[j * 4096] != (unsigned char)(id + k) ||
				    live[k].p[j * 4096 + 4095] != (unsigned char)(id + k)) {
					bad[id]++;
					break;
				}
			if (_nd_page_free(live[k].p) != 0)
				bad[id]++;
			live[k].p = NULL;
			continue;
		}
		size_t n = 1 + (r >> 20) % 40;
		unsigned kind = (unsigned)(r >> 40) % 8;
		int got;
		unsigned char *p = kind == 0   ? _nd_page_alloc_spread(n, &il)
				   : kind < 4 ? _nd_page_alloc_exact(1 + (int)(r >> 50) % 2, n, 1)
					      : _nd_page_alloc(n, 1, &pref1, -1, &got);
		if (!p) {
			bad[id]++;
			continue;
		}
		allocs[id]++;
		for (size_t j = 0; j < n; j++) {
			p[j * 4096] = (unsigned char)(id + k);
			p[j * 4096 + 4095] = (unsigned char)(id + k);
		}
		live[k].p = p;
		live[k].n = n;
	}
	for (int k = 0; k < LIVE; k++)
		if (live[k].p && _nd_page_free(live[k].p) != 0)
			bad[id]++;
	return NULL;
}

/* Keeps the arena locks busy while main forks. */
static volatile int stop;
static int busy_bad;
static void *busy(void *arg)
{
	int node = (int)(intptr_t)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned char *p = _nd_page_alloc_exact(node, 5, 1);
		unsigned char *q = _nd_page_alloc_spread(3, &il);
		if (!p || !q || _nd_page_free(p) != 0 || _nd_page_free(q) != 0)
			__atomic_add_fetch(&busy_bad, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Every slot consistent, nodes 1 and 2 and the mixed slot fully free. */
static void check_all_back(const char *when)
{
	char err[256];
	for (int n = -1; n <= 2; n++) {
		_nd_page_info_t in;
		CHECK(_nd_page_info(n, &in) == 0);
		if (n >= 1) {
			CHECK_EQ(in.used_pages, 0);
			CHECK_EQ(_nd_topo_node_free(n), 256u << 20);
		} else if (n == -1) {
			CHECK_EQ(in.free_pages, in.slot_pages);
		}
		err[0] = '\0';
		CHECK(_nd_page_check(n, err, sizeof err) == 0, "%s: node %d: %s", when, n, err);
	}
}

int main(void)
{
	char err[256] = "";
	/* Before anything allocates. Node 0 (the CPUs) serves malloc. */
	int rc = nd_topology_emulate("0: cpus=0-1 mem=256M; 1: mem=256M; 2: mem=256M", err, sizeof err);
	CHECK(rc == 0, "%s", err);
	CHECK(nd_policy_parse("interleave:1-2", &il, err, sizeof err) == 0, "%s", err);
	CHECK(nd_policy_parse("preferred:1", &pref1, err, sizeof err) == 0, "%s", err);
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < THREADS; i++) {
		CHECK_EQ(bad[i], 0);
		CHECK(allocs[i] > STEPS / 4, "thread %d made %d allocations", i, allocs[i]);
	}
	check_all_back("after the threads");

	/* fork under load: no lock taken here, the library's handlers do it */
	pthread_t b[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&b[i], NULL, busy, (void *)(intptr_t)(1 + i));
	int forks_ok = 0;
	for (int k = 0; k < FORKS; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10); /* a lock inherited held: SIGALRM, not a hang */
			int ok = 1;
			for (int n = 0; n <= 2; n++) {
				void *p = _nd_page_alloc_exact(n, 3, 1);
				ok = ok && p && _nd_page_node_of(p) == n && _nd_page_free(p) == 0;
			}
			void *q = _nd_page_alloc_spread(4, &il);
			ok = ok && q && _nd_page_free(q) == 0;
			_exit(ok ? 0 : 1);
		}
		int st = -1;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork %d: child status %#x", k, st);
		forks_ok += pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	CHECK_EQ(forks_ok, FORKS);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(b[i], NULL);
	CHECK_EQ(busy_bad, 0);
	check_all_back("after the forks");
	void *p = _nd_page_alloc_exact(1, 1, 1);
	CHECK(p && _nd_page_free(p) == 0);
	return CHECK_DONE();
}
