// SPDX-License-Identifier: MIT
/*
 * fork() while another thread holds a lock of a layer other than slab and
 * page (per-CPU areas, policies, the statistics printers' snapshot, the
 * table report) must leave the child usable; a child of a process that
 * publishes live statistics must not count into its parent's export.
 * Every lock is in the registry (src/lock.c) in rank order. (Reproducers
 * from the integration of the real malloc and the outside review: 199 of
 * 200 children hung in nd_stats_print before the registry.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "check.h"
#include "internal.h"

static volatile int stop;
static int which; /* 0: per-CPU allocator, 1: process policy, 2: stats printer, 3: table report */
static nd_policy_t il;
static nd_table_t tab;
static int devnull;

static void use_layer(int layer)
{
	char buf[256];
	switch (layer) {
	case 0: {
		nd_percpu_t h = nd_percpu_alloc(64, 8);
		if (h)
			nd_percpu_free(h);
		break;
	}
	case 1:
		nd_set_default_policy(&il);
		nd_set_default_policy(NULL);
		break;
	case 2:
		nd_stats_print(devnull);
		break;
	case 3:
		nd_table_format(&tab, buf, sizeof buf);
		break;
	}
}

static void *busy(void *arg)
{
	(void)arg;
	while (!stop)
		use_layer(which);
	return NULL;
}

/* Forks n times while a thread hammers one layer's lock; returns how many
 * children hung (killed by their alarm) on their first use of that layer. */
static int hung_children(int layer, int n)
{
	which = layer;
	stop = 0;
	pthread_t t;
	pthread_create(&t, NULL, busy, NULL);
	int hung = 0;
	for (int k = 0; k < n; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(5);
			use_layer(layer);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st) && ++hung == 3)
			break; /* enough to fail; each hang costs its 5 s alarm */
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
	devnull = open("/dev/null", O_WRONLY);
	nd_table_desc_t d = { .name = "fork test", .bucket_size = 64, .entries = 1024 };
	CHECK(nd_table_alloc(&d, &tab) == 0, "table");
	CHECK_EQ(hung_children(0, 40), 0);
	CHECK_EQ(hung_children(1, 40), 0);
	CHECK_EQ(hung_children(2, 200), 0);
	CHECK_EQ(hung_children(3, 200), 0);

	/* the registry holds every lock, sorted by rank */
	const _nd_lock_class_t *cls[64];
	int n = _nd_lock_classes(cls, 64);
	const char *want[] = { "init_lock", "pc_lock", "pool_lock", "proc_lock", "thread_lock", "pheap_lock", "nodes[].lock",
			       "g.lock", "&g.arenas[].lock", "snap_lock", "fmt_lock", "swap_lock" };
	for (unsigned w = 0; w < sizeof want / sizeof want[0]; w++) {
		int found = 0;
		for (int i = 0; i < n; i++)
			found += strcmp(cls[i]->name, want[w]) == 0;
		CHECK_EQ(found, 1);
	}
	for (int i = 1; i < n; i++)
		CHECK(cls[i - 1]->rank <= cls[i]->rank, "%s before %s", cls[i - 1]->name, cls[i]->name);

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
