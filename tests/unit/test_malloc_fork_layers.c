/*
 * fork() while another thread holds a lock of a layer other than slab and
 * page (per-CPU areas, policies) must leave the child usable; a child of a
 * process that publishes live statistics must not count into its parent's
 * export. (Reproducers from the integration of the real malloc.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static volatile int stop;
static int which; /* 0: per-CPU allocator, 1: process policy */
static nd_policy_t il;

static void *busy(void *arg)
{
	(void)arg;
	while (!stop) {
		if (which == 0) {
			nd_percpu_t h = nd_percpu_alloc(64, 8);
			if (h)
				nd_percpu_free(h);
		} else {
			nd_set_default_policy(&il);
			nd_set_default_policy(NULL);
		}
	}
	return NULL;
}

/* Forks 40 times while a thread hammers one layer's lock; returns how many
 * children hung (killed by their alarm) on their first use of that layer. */
static int hung_children(int layer)
{
	which = layer;
	stop = 0;
	pthread_t t;
	pthread_create(&t, NULL, busy, NULL);
	int hung = 0;
	for (int k = 0; k < 40; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(5);
			if (layer == 0) {
				nd_percpu_t h = nd_percpu_alloc(64, 8);
				nd_percpu_free(h);
			} else {
				nd_set_default_policy(&il);
			}
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st))
			hung++;
	}
	stop = 1;
	pthread_join(t, NULL);
	return hung;
}

static int export_child(void)
{
	static nd_stats_t a, b;
	a.version = b.version = ND_STATS_VERSION;
	nd_stats_get(&a);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 200; i++)
			nd_malloc(1 << 20); /* 200 large runs in the child only */
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	nd_stats_get(&b);
	unsigned long long d = 0;
	for (int n = 0; n < a.node_limit; n++)
		d += b.nodes[n].numa_hit - a.nodes[n].numa_hit;
	return d < 200 ? 0 : 1; /* the parent allocated nothing meanwhile */
}

int main(int argc, char **argv)
{
	if (argc > 1) /* re-executed with NODALLOC_STATS_EXPORT set */
		return export_child();
	char err[128];
	CHECK(nd_policy_parse("interleave:0", &il, err, sizeof err) == 0, "%s", err);
	CHECK_EQ(hung_children(0), 0);
	CHECK_EQ(hung_children(1), 0);

	char path[64], env[96];
	snprintf(path, sizeof path, "/tmp/nd-fork-export-%d", (int)getpid());
	snprintf(env, sizeof env, "NODALLOC_STATS_EXPORT=%s", path);
	pid_t pid = fork();
	if (pid == 0) {
		char *envp[] = { env, NULL };
		execle(argv[0], argv[0], "child", (char *)NULL, envp);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the parent's exported numa_hit grew with its child's allocations (status %d)", st);
	unlink(path);
	return CHECK_DONE();
}
