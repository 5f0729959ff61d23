/* Page level under threads: four threads allocate and free runs on two
 * emulated nodes and spread runs, each filling its runs with its own
 * pattern and checking it before freeing (an overlap between threads
 * shows up as a torn pattern); afterwards every slot is consistent and
 * every charge is back. Then fork with the arena locks taken around it:
 * the child allocates and frees normally. */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define THREADS 4
#define STEPS 4000
#define LIVE 32

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
				   : kind < 4 ? _nd_page_alloc_exact((int)(r >> 50) % 2, n, 1)
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

int main(void)
{
	char err[256] = "";
	int rc = nd_topology_emulate("0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M", err, sizeof err);
	CHECK(rc == 0, "%s", err);
	CHECK(nd_policy_parse("interleave:0-1", &il, err, sizeof err) == 0, "%s", err);
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
	for (int n = -1; n <= 1; n++) {
		_nd_page_info_t in;
		CHECK(_nd_page_info(n, &in) == 0);
		if (n >= 0) {
			CHECK_EQ(in.used_pages, 0);
			CHECK_EQ(_nd_topo_node_free(n), 256u << 20);
		} else {
			CHECK_EQ(in.free_pages, in.slot_pages);
		}
		err[0] = '\0';
		CHECK(_nd_page_check(n, err, sizeof err) == 0, "node %d: %s", n, err);
	}

	/* fork with every arena lock held around it, as the malloc layer does */
	_nd_page_fork_prepare();
	pid_t pid = fork();
	if (pid == 0) {
		_nd_page_fork_child();
		void *p = _nd_page_alloc_exact(1, 3, 1);
		int ok = p && _nd_page_node_of(p) == 1 && _nd_page_free(p) == 0;
		_exit(ok ? 0 : 1);
	}
	_nd_page_fork_parent();
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	void *p = _nd_page_alloc_exact(0, 1, 1);
	CHECK(p && _nd_page_free(p) == 0);
	return CHECK_DONE();
}
