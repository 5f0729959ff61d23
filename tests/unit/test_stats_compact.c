// SPDX-License-Identifier: MIT
/* nd_stats_t is small enough for a thread's stack (issue 14: it was
 * 72 KiB): ND_STATS_NODES entries, the same counters as the full
 * snapshot, nd_stats_get_nodes for any node range, version 1 (the old
 * 1024-entry layout) still filled for programs built against it, and a
 * thread with a 64 KiB stack can take a snapshot on its stack. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

static const char *SPEC = "0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; 2: mem=256M";

static void *on_small_stack(void *arg)
{
	nd_stats_t st; /* on a 64 KiB stack */
	st.version = ND_STATS_VERSION;
	*(int *)arg = nd_stats_get(&st) == 0 && st.node_limit == 3 && st.nodes[2].bytes_in_use > 0;
	return NULL;
}

int main(void)
{
	static char err[256];
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	CHECK(sizeof(nd_stats_t) <= 8192, "nd_stats_t is %zu bytes", sizeof(nd_stats_t));
	void *b2 = nd_malloc_onnode(100000, 2);
	nd_stats_t st;
	memset(&st, 0xff, sizeof st);
	st.version = ND_STATS_VERSION;
	CHECK_EQ(nd_stats_get(&st), 0);
	CHECK_EQ(st.node_limit, 3);
	CHECK(st.nodes[2].bytes_in_use >= 100000 && st.nodes[2].numa_hit > 0, "node 2 counted");
	CHECK(st.nodes[3].numa_hit == 0 && st.nodes[ND_STATS_NODES - 1].bytes_in_use == 0, "unused entries zeroed");

	/* version 1: the old layout, every node; the same counters */
	static _nd_stats_all_t v1;
	memset(&v1, 0xff, sizeof v1);
	v1.version = ND_STATS_V1;
	CHECK_EQ(nd_stats_get((nd_stats_t *)(void *)&v1), 0);
	CHECK_EQ(v1.node_limit, 3);
	CHECK_EQ(v1.nodes[2].bytes_in_use, st.nodes[2].bytes_in_use);
	CHECK(v1.nodes[ND_MAX_NODES - 1].numa_hit == 0, "version 1: every entry written");

	/* any range */
	nd_node_stats_t r[4];
	memset(r, 0xff, sizeof r);
	CHECK_EQ(nd_stats_get_nodes(r, 1, 4), 2);
	CHECK_EQ(r[1].bytes_in_use, st.nodes[2].bytes_in_use);
	CHECK(r[2].numa_hit == 0 && r[3].bytes_in_use == 0, "beyond node_limit: zero");
	errno = 0;
	CHECK(nd_stats_get_nodes(NULL, 0, 1) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(nd_stats_get_nodes(r, -1, 1) == -1 && errno == EINVAL);
	errno = 0;
	st.version = 99;
	CHECK(nd_stats_get(&st) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(nd_stats_get(NULL) == -1 && errno == EINVAL);

	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	pthread_t th;
	int ok = 0;
	CHECK_EQ(pthread_create(&th, &a, on_small_stack, &ok), 0);
	pthread_join(th, NULL);
	CHECK(ok, "a snapshot on a 64 KiB stack");
	free(b2);
	return CHECK_DONE();
}
