// SPDX-License-Identifier: MIT
/* The placement calls on the fast path and realloc of placed blocks
 * (issue 11), under an emulated two-node topology:
 *  - nd_malloc_onnode / nd_malloc_local / nd_malloc_policy land on the
 *    right node and, once warm, leave the fast path only to refill;
 *  - a policy object changed in place between calls is seen at the next
 *    call (nd_malloc_policy caches the object by address and contents),
 *    an invalid one is still refused by name;
 *  - realloc keeps a block's node, small and large, growing and moving
 *    between small and large (before: back on the CPU's node 0);
 *  - realloc of a freed block is reported as realloc's (issue 12, 13). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";

enum { N = 256 };
static void *v[N];

static uint64_t slow_of(void *(*fn)(size_t, const void *), const void *arg, size_t size, int node)
{
	uint64_t before = _nd_slab_slow_count();
	int off = 0;
	for (int i = 0; i < N; i++) {
		v[i] = fn(size, arg);
		off += nd_node_of(v[i]) != node;
	}
	uint64_t d = _nd_slab_slow_count() - before;
	CHECK(off == 0, "%d of %d blocks of %zu bytes off node %d", off, N, size, node);
	for (int i = 0; i < N; i++)
		free(v[i]);
	return d;
}

static void *on1(size_t n, const void *a) { (void)a; return nd_malloc_onnode(n, 1); }
static void *loc(size_t n, const void *a) { (void)a; return nd_malloc_local(n); }
static void *bypol(size_t n, const void *a) { return nd_malloc_policy(n, a); }

static int realloc_freed_child(void)
{
	char *p = malloc(40);
	free(p);
	char *q = realloc(p, 80); /* must abort naming realloc */
	return q ? 0 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "realloc_freed"))
		return realloc_freed_child();
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);

	/* warm, then N calls leave the fast path only for the slab's refills
	 * (a 48-byte slab carves 85 objects a page: about 3 per 256) */
	slow_of(on1, NULL, 48, 1);
	uint64_t s = slow_of(on1, NULL, 48, 1);
	CHECK(s <= 8, "nd_malloc_onnode: %llu slow paths in %d calls", (unsigned long long)s, N);
	CHECK_EQ(nd_node_of(v[0] = nd_malloc_onnode(100000, 1)), 1);
	free(v[0]);

	slow_of(loc, NULL, 48, 0);
	s = slow_of(loc, NULL, 48, 0);
	CHECK(s <= 8, "nd_malloc_local: %llu slow paths in %d calls", (unsigned long long)s, N);
	nd_emulate_cpu(2); /* the next local allocation follows the CPU */
	CHECK_EQ(nd_node_of(v[0] = nd_malloc_local(48)), 1);
	free(v[0]);
	slow_of(loc, NULL, 48, 1);
	nd_emulate_cpu(0);

	nd_policy_t p = pol("bind:1");
	slow_of(bypol, &p, 48, 1);
	s = slow_of(bypol, &p, 48, 1);
	CHECK(s <= 8, "nd_malloc_policy: %llu slow paths in %d calls", (unsigned long long)s, N);
	/* the same object changed in place: seen at the next call */
	p.nodes.bits[0] = 1; /* bind:0 */
	CHECK_EQ(nd_node_of(v[0] = nd_malloc_policy(48, &p)), 0);
	free(v[0]);
	p = pol("preferred:1");
	CHECK_EQ(nd_node_of(v[0] = nd_malloc_policy(48, &p)), 1);
	free(v[0]);
	p.nodes.bits[0] = 3; /* preferred takes one node: refused */
	errno = 0;
	CHECK(nd_malloc_policy(48, &p) == NULL && errno == EINVAL, "invalid object changed in place: errno %d", errno);
	p = pol("weighted:0=1,1=3");
	void *w = nd_malloc_policy(48, &p);
	CHECK(w != NULL);
	free(w);
	p.weights[1] = 0; /* node 1 dropped from the weights: only node 0 */
	p.nodes.bits[0] = 1;
	for (int i = 0; i < 4 * 341; i++) /* several slabs' worth */
		CHECK(nd_node_of(v[i % N] = nd_malloc_policy(48, &p)) == 0 || (free(v[i % N]), 0));
	for (int i = 0; i < N; i++)
		free(v[i]);

	/* realloc keeps the node: small -> small, small -> large, large ->
	 * large (moving), large -> small, under the local policy of CPU 0 */
	size_t sizes[] = { 24, 200, 3000, 40000, 3 << 20, 100 };
	char *b = nd_malloc_onnode(16, 1);
	memset(b, 7, 16);
	size_t have = 16;
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *r = realloc(b, sizes[i]);
		CHECK(r != NULL && nd_node_of(r) == 1, "realloc to %zu: node %d", sizes[i], r ? nd_node_of(r) : -9);
		size_t k = have < sizes[i] ? have : sizes[i];
		bool same = true;
		for (size_t j = 0; j < k; j++)
			same &= r[j] == 7;
		CHECK(same, "contents kept up to %zu", sizes[i]);
		memset(r, 7, sizes[i]);
		have = sizes[i];
		b = r;
	}
	free(b);
	/* a block on node 0 reallocated by a thread on node 1's CPU stays */
	b = malloc(64);
	CHECK_EQ(nd_node_of(b), 0);
	nd_emulate_cpu(2);
	b = realloc(b, 5000);
	CHECK_EQ(nd_node_of(b), 0);
	free(b);
	nd_emulate_cpu(0);

	/* realloc of a freed block: aborts with a message naming realloc */
	char msg[512];
	int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "realloc_freed", NULL }, NULL, NULL, false, msg,
			   sizeof msg);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "realloc of a freed block: status %d", st);
	CHECK(strstr(msg, "realloc(): invalid pointer") && strstr(msg, "already freed"), "message: %s", msg);
	return CHECK_DONE();
}
