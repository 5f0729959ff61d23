// SPDX-License-Identifier: MIT
/* Heaps (nd_heap_*, issue 14) under an emulated two-node topology:
 *  - objects of a node heap and of policy heaps (bind, interleave) obey
 *    the heap's placement, at every size and alignment; calloc zeroes
 *    memory reused with old contents;
 *  - objects are ordinary blocks: free, realloc (stays in the heap for
 *    the owner), malloc_usable_size, nd_node_of;
 *  - another thread's frees, while the owner allocates, come back to the
 *    owner's lists (their addresses are reused); small objects are slab
 *    objects (free's fast path), which another thread's free sends home
 *    at once (not kept in its record, where destroy could not see them);
 *  - destroy frees every object still live: the node's bytes in use go
 *    back to what they were;
 *  - misuse: EINVAL for bad arguments; double free and interior pointers
 *    abort naming free. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";
static const size_t SIZES[] = { 0, 1, 16, 24, 100, 255, 1000, 4096, 5000, 32768, 40000, 1 << 20 };
#define NS (sizeof SIZES / sizeof SIZES[0])

static uint64_t in_use(int node)
{
	static nd_stats_t st;
	st.version = ND_STATS_VERSION;
	nd_stats_get(&st);
	return st.nodes[node].bytes_in_use;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Every size and alignment from h lands on node (-1: any), aligned; calloc
 * after a free of the same size gives zeros over the old contents. */
static void place(nd_heap_t *h, int node, const char *what)
{
	for (unsigned i = 0; i < NS; i++) {
		for (size_t a = 1; a <= 8192; a *= 8) {
			size_t sz = SIZES[i];
			unsigned char *p = a == 1 ? nd_heap_malloc(h, sz) : nd_heap_aligned_alloc(h, a, sz);
			CHECK(p && ((uintptr_t)p & (a - 1)) == 0 && nd_usable_size(p) >= sz &&
				      (node < 0 ? nd_node_of(p) >= 0 : nd_node_of(p) == node),
			      "%s: %zu bytes aligned %zu: %p on node %d", what, sz, a, (void *)p, p ? nd_node_of(p) : -9);
			if (!p)
				continue;
			memset(p, 0xcd, sz);
			free(p);
			unsigned char *q = nd_heap_calloc(h, 1, sz);
			CHECK(q && all_zero(q, sz), "%s: calloc %zu", what, sz);
			if (sz && sz <= ND_SLAB_MAX)
				CHECK(q == p || a > 1, "%s: a freed %zu-byte object is reused first", what, sz);
			free(q);
		}
	}
}

typedef struct remote_arg {
	void **v;
	int n;
} remote_arg_t;

static void *remote_free(void *arg)
{
	remote_arg_t *r = arg;
	for (int i = 0; i < r->n; i += 2)
		free(r->v[i]);
	return NULL;
}

/* A thread of node 1 (its own heap there, so it could borrow node 1's
 * objects) frees every object of r, then allocates objects of their size:
 * r->n becomes the frees still waiting in its record, plus the
 * allocations that got one of r's objects back. */
static void *node1_free(void *arg)
{
	remote_arg_t *r = arg;
	nd_emulate_cpu(2);
	free(malloc(48));
	for (int i = 0; i < r->n; i++)
		free(r->v[i]);
	int bad = (int)_nd_slab_remote_pending();
	for (int k = 0; k < 64; k++) {
		void *q = malloc(48);
		for (int i = 0; i < r->n; i++)
			bad += q == r->v[i];
	}
	r->n = bad;
	return NULL;
}

static int child(const char *what)
{
	nd_topology_emulate(SPEC, err, sizeof err);
	nd_heap_t *h = nd_heap_new(1);
	char *p = nd_heap_malloc(h, 100);
	if (!strcmp(what, "double")) {
		free(p);
		free(p);
	} else if (!strcmp(what, "interior")) {
		free(p + 16);
	} else if (!strcmp(what, "destroyed")) {
		nd_heap_destroy(h);
		nd_heap_destroy(h);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "child"))
		return child(argv[2]);
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	free(malloc(1)); /* init */
	/* the first slab on node 1 makes the node's slab header metadata
	 * (meta.c: kept for the process, headers are reused) */
	nd_heap_t *hw = nd_heap_new(1);
	CHECK(hw && nd_heap_malloc(hw, 16));
	nd_heap_destroy(hw);
	uint64_t base1 = in_use(1);

	nd_heap_t *h1 = nd_heap_new(1);
	CHECK(h1 != NULL);
	place(h1, 1, "heap(1)");
	nd_heap_t *h0 = nd_heap_new(0);
	place(h0, 0, "heap(0)");
	nd_policy_t b1 = pol("bind:1");
	nd_heap_t *hb = nd_heap_new_policy(&b1);
	place(hb, 1, "heap(bind:1)");
	nd_policy_t il = pol("interleave:all");
	nd_heap_t *hi = nd_heap_new_policy(&il);
	place(hi, -1, "heap(interleave)");
	/* interleave: chunks alternate nodes */
	enum { N = 4096 };
	static void *v[N];
	int on[2] = { 0, 0 };
	for (int i = 0; i < N; i++) {
		v[i] = nd_heap_malloc(hi, 1000);
		int n = nd_node_of(v[i]);
		if (n == 0 || n == 1)
			on[n]++;
	}
	CHECK(on[0] > N / 4 && on[1] > N / 4, "interleave heap: %d objects on node 0, %d on node 1", on[0], on[1]);
	nd_heap_destroy(hi); /* with all of them live */

	/* realloc by the owner stays in the heap and on its node */
	char *r = nd_heap_malloc(h1, 40);
	strcpy(r, "heap object");
	r = realloc(r, 30); /* in place */
	r = realloc(r, 3000);
	CHECK(r && nd_node_of(r) == 1 && !strcmp(r, "heap object"), "realloc in the heap");
	r = realloc(r, 100000);
	CHECK(r && nd_node_of(r) == 1 && !strcmp(r, "heap object") && nd_usable_size(r) >= 100000, "realloc large");

	/* another thread frees every other object while we allocate more */
	for (int i = 0; i < N; i++)
		v[i] = nd_heap_malloc(h1, 48);
	remote_arg_t ra = { v, N };
	pthread_t th;
	pthread_create(&th, NULL, remote_free, &ra);
	static void *w[N];
	for (int i = 0; i < N; i++)
		w[i] = nd_heap_malloc(h1, 48);
	pthread_join(th, NULL);
	int off = 0;
	for (int i = 0; i < N; i++)
		off += nd_node_of(w[i]) != 1;
	CHECK(off == 0, "%d objects off node 1 while frees came in", off);
	/* every object freed remotely comes back: in w (if the frees came in
	 * early) or in the allocations after the join, before the heap takes
	 * a new slab (the slab being allocated from first carves what it has
	 * left: at most one slab of 48-byte objects, 16 KiB) */
	enum { X = N / 2 + 16384 / 48 };
	static void *x[X];
	for (int i = 0; i < X; i++)
		x[i] = nd_heap_malloc(h1, 48);
	int reused = 0;
	for (int j = 0; j < N; j += 2) {
		bool found = false;
		for (int i = 0; i < N && !found; i++)
			found = w[i] == v[j];
		for (int i = 0; i < X && !found; i++)
			found = x[i] == v[j];
		reused += found;
	}
	CHECK(reused == N / 2, "remote frees come back to the owner: %d of %d reused", reused, N / 2);

	/* destroy: everything still live goes back */
	CHECK(in_use(1) > base1, "node 1 holds the heaps' chunks");
	nd_heap_destroy(h1);
	nd_heap_destroy(hb);
	CHECK(in_use(1) == base1, "after destroy: %llu bytes in use on node 1, %llu before",
	      (unsigned long long)in_use(1), (unsigned long long)base1);
	nd_heap_destroy(h0);
	nd_heap_destroy(NULL);

	/* small objects are slab objects: free's fast path finds them in the
	 * slab map; another thread's frees of them go home at once, neither
	 * borrowed nor buffered in its record (destroy finds none in flight) */
	nd_heap_t *hs = nd_heap_new(1);
	for (int i = 0; i < N; i++)
		v[i] = nd_heap_malloc(hs, 48);
	_nd_slab_hot_t *s = _nd_slab_of(v[0]);
	CHECK(_nd_slab_live(s, v[0]), "a heap object is in the slab map");
	remote_arg_t rb = { v, N };
	pthread_create(&th, NULL, node1_free, &rb);
	pthread_join(th, NULL);
	CHECK(rb.n == 0, "another thread kept %d of a heap's objects (buffered, or borrowed)", rb.n);
	nd_heap_destroy(hs);

	/* bad input */
	errno = 0;
	CHECK(nd_heap_new(2) == NULL && errno == EINVAL, "node 2: errno %d", errno);
	errno = 0;
	CHECK(nd_heap_new(-2) == NULL && errno == EINVAL); /* -1: ND_NODE_LOCAL */
	nd_policy_t bad = pol("preferred:1");
	bad.nodes.bits[0] = 3;
	errno = 0;
	CHECK(nd_heap_new_policy(&bad) == NULL && errno == EINVAL, "invalid policy: errno %d", errno);
	errno = 0;
	CHECK(nd_heap_malloc(NULL, 8) == NULL && errno == EINVAL);
	nd_heap_t *h = nd_heap_new(0);
	errno = 0;
	CHECK(nd_heap_aligned_alloc(h, 24, 8) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(nd_heap_calloc(h, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	nd_heap_destroy(h);

	char msg[512];
	static const char *const cases[][2] = { { "double", "double free" },
						{ "interior", "free(): invalid pointer" },
						{ "destroyed", "not a heap" } };
	for (unsigned i = 0; i < 3; i++) {
		int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "child", (char *)cases[i][0], NULL }, NULL,
				   NULL, false, msg, sizeof msg);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(msg, cases[i][1]), "%s: status %d: %s",
		      cases[i][0], st, msg);
	}
	return CHECK_DONE();
}
