// SPDX-License-Identifier: MIT
/* Every policy on the malloc fast path (issue 11): a thread resolves its
 * policy to a heap once, when the policy or the CPU changes. Checks, under
 * an emulated topology, for every mode with and without +tier: the node
 * the allocations land on, that the fast path holds (no slow path per
 * malloc), that a thread or process policy change is seen at the very
 * next allocation, and that a migration to a CPU of another node is seen
 * at the next allocation. Interleave and weighted choose the node per
 * slab: objects of one slab share a node, page shares stay within one
 * slab per node, from another node's CPU and across a migration in the
 * middle of a run too (audit14: the check after a migration was one
 * object on each node). The thread sequence and the process defaults
 * include weighted, preferred-many and +tier policies. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

/* node 0: CPUs 0-1, node 1: CPUs 2-3, node 2: CPUs 4-5 (far) */
static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M; 2: cpus=4-5 mem=512M; "
			  "distance: 0-1=20, 0-2=30, 1-2=25";

/* n mallocs of size; how many left the fast path, and the node of each */
static uint64_t run(void **v, int n, size_t size)
{
	uint64_t before = _nd_slab_slow_count();
	for (int i = 0; i < n; i++)
		v[i] = malloc(size);
	return _nd_slab_slow_count() - before;
}

static void release(void **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
}

static int count_on(void **v, int n, int node)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		c += nd_node_of(v[i]) == node;
	return c;
}

static void set(const char *spec)
{
	nd_policy_t p = pol(spec);
	CHECK(nd_set_policy(&p) == 0, "set %s", spec);
}

enum { N = 64 };
static void *v[4096];

/* For a policy whose node follows from the CPU: on cpu_a the objects are
 * on node_a, after a migration to cpu_b at once on node_b; the fast path
 * holds on both. */
static void node_policy(const char *spec, int cpu_a, int node_a, int cpu_b, int node_b)
{
	set(spec);
	nd_emulate_cpu(cpu_a);
	CHECK(run(v, 1, 40) == 1, "%s: the first malloc after the change resolves", spec);
	CHECK_EQ(nd_node_of(v[0]), node_a);
	free(v[0]);
	run(v, N, 40); /* warm: slab carved */
	release(v, N);
	uint64_t slow = run(v, N, 40);
	CHECK(slow <= 1, "%s: %llu of %d mallocs left the fast path", spec, (unsigned long long)slow, N);
	CHECK(count_on(v, N, node_a) == N, "%s on CPU %d: %d of %d on node %d", spec, cpu_a, count_on(v, N, node_a), N,
	      node_a);
	release(v, N);
	nd_emulate_cpu(cpu_b);
	v[0] = malloc(40); /* the very next allocation follows the migration */
	CHECK(nd_node_of(v[0]) == node_b, "%s after moving to CPU %d: node %d, expected %d", spec, cpu_b,
	      nd_node_of(v[0]), node_b);
	free(v[0]);
	run(v, N, 40);
	release(v, N);
	slow = run(v, N, 40);
	CHECK(slow <= 1, "%s on CPU %d: %llu of %d left the fast path", spec, cpu_b, (unsigned long long)slow, N);
	CHECK_EQ(count_on(v, N, node_b), N);
	release(v, N);
}

/* Interleave and weighted: per slab. 48-byte objects, 341 per slab (4
 * pages); nslabs slabs' worth. Shares by slab within one slab per node
 * (weighted: by weight); every slab's objects on one node; the CPU does
 * not matter; the fast path holds within a slab. */
static void spread_policy(const char *spec, int w0, int w1, int w2)
{
	set(spec);
	nd_emulate_cpu(0);
	_nd_policy_reset_cursor();
	int per = 341, total = w0 + w1 + w2, nslabs = 4 * total, n = per * nslabs;
	uint64_t slow = run(v, n, 48);
	/* the fast path holds within a page: a slow path per page carved (4
	 * per slab) and one per new slab, never one per object */
	CHECK(slow <= (uint64_t)nslabs * 5 + 2, "%s: %llu slow paths for %d slabs", spec, (unsigned long long)slow, nslabs);
	int on[3] = { count_on(v, n, 0), count_on(v, n, 1), count_on(v, n, 2) };
	int w[3] = { w0, w1, w2 };
	for (int k = 0; k < 3; k++) {
		int want = n / total * w[k];
		CHECK(on[k] >= want - per && on[k] <= want + per, "%s: node %d has %d objects, share %d (+-%d)", spec, k,
		      on[k], want, per);
	}
	int mixed = 0;
	for (int i = 1; i < n; i++)
		mixed += _nd_slab_of(v[i]) == _nd_slab_of(v[i - 1]) && nd_node_of(v[i]) != nd_node_of(v[i - 1]);
	CHECK(mixed == 0, "%s: %d objects off their slab's node", spec, mixed);
	release(v, n);
	/* migration changes nothing but the CPU: the same shares, within one
	 * slab per node, and the fast path holds (was: at least one object
	 * on each node of the set) */
	nd_emulate_cpu(4);
	slow = run(v, n, 48);
	CHECK(slow <= (uint64_t)nslabs * 5 + 4, "%s from CPU 4: %llu slow paths for %d slabs", spec,
	      (unsigned long long)slow, nslabs);
	for (int k = 0; k < 3; k++) {
		int want = n / total * w[k], got = count_on(v, n, k);
		CHECK(got >= want - per && got <= want + per, "%s from CPU 4: node %d has %d objects, share %d (+-%d)", spec,
		      k, got, want, per);
	}
	release(v, n);
	/* a migration in the middle of a run: the shares of the whole run */
	nd_emulate_cpu(0);
	uint64_t s0 = run(v, n / 2, 48);
	nd_emulate_cpu(2);
	s0 += run(v + n / 2, n - n / 2, 48);
	CHECK(s0 <= (uint64_t)nslabs * 5 + 6, "%s migrating mid-run: %llu slow paths for %d slabs", spec,
	      (unsigned long long)s0, nslabs);
	for (int k = 0; k < 3; k++) {
		int want = n / total * w[k], got = count_on(v, n, k);
		CHECK(got >= want - 2 * per && got <= want + 2 * per,
		      "%s migrating mid-run: node %d has %d objects, share %d (+-%d)", spec, k, got, want, 2 * per);
	}
	release(v, n);
}

static pthread_barrier_t bar;
/* the process defaults main sets in turn, and the node of each */
static const char *pseq[] = { "bind:2", "weighted:1=1", "preferred-many:2+tier", "interleave:1@2M", "local" };
static const int pwant[] = { 2, 1, 2, 1, 0 };
enum { PSEQ = sizeof pseq / sizeof pseq[0] };
static int seen_node[PSEQ + 1];

/* No policy of its own: warm fast path on CPU 0, then the process default
 * changes (main), and the very next malloc follows it, each time. */
static void *inheritor(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	void *w[N];
	run(w, N, 40);
	release(w, N);
	void *a = malloc(40);
	seen_node[0] = nd_node_of(a);
	free(a);
	for (int i = 0; i < PSEQ; i++) {
		pthread_barrier_wait(&bar); /* main: the default changes */
		pthread_barrier_wait(&bar);
		run(w, N, 40); /* every one of the next N on the new node */
		int all = 1;
		for (int j = 0; j < N; j++)
			all &= nd_node_of(w[j]) == pwant[i];
		release(w, N);
		a = malloc(40);
		seen_node[i + 1] = all ? nd_node_of(a) : -2;
		free(a);
	}
	return NULL;
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	void *first = malloc(16);
	free(first);

	for (int tier = 0; tier < 2; tier++) {
		const char *t = tier ? "+tier" : "";
		char s[64];
#define P(str) (snprintf(s, sizeof s, "%s%s", str, t), s)
		node_policy(P("local"), 0, 0, 2, 1);
		node_policy(P("bind:1"), 0, 1, 4, 1);
		node_policy(P("bind:0-1"), 0, 0, 2, 1);
		node_policy(P("bind:0-1"), 4, 1, 0, 0); /* CPU 4's nearest of the set: 1 */
		node_policy(P("preferred:2"), 0, 2, 2, 2);
		node_policy(P("preferred-many:1-2"), 0, 1, 4, 2);
		spread_policy(P("interleave:0-2"), 1, 1, 1);
		spread_policy(P("interleave:0-1@64K"), 1, 1, 0);
		spread_policy(P("weighted:0=2,1=1"), 2, 1, 0);
#undef P
	}

	/* a thread policy change is seen at the next allocation, each time */
	nd_emulate_cpu(0);
	const char *seq[] = { "bind:1",       "bind:2",      "local",          "preferred:1",       "interleave:2",
			      "bind:0",       "weighted:1=1", "preferred-many:2", "interleave:1@64K", "bind:2+tier",
			      "weighted:2=3", "preferred-many:1+tier", "local" };
	const int want[] = { 1, 2, 0, 1, 2, 0, 1, 2, 1, 2, 2, 1, 0 };
	_Static_assert(sizeof seq / sizeof seq[0] == sizeof want / sizeof want[0], "one node per policy");
	for (unsigned i = 0; i < sizeof seq / sizeof seq[0]; i++) {
		set(seq[i]);
		void *a = malloc(100);
		CHECK(nd_node_of(a) == want[i], "after nd_set_policy(%s): node %d", seq[i], nd_node_of(a));
		free(a);
	}
	CHECK(nd_set_policy(NULL) == 0);

	/* a process policy change is seen by a running thread's next malloc */
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	pthread_create(&th, NULL, inheritor, NULL);
	for (int i = 0; i < PSEQ; i++) {
		pthread_barrier_wait(&bar);
		nd_policy_t dp = pol(pseq[i]);
		CHECK(nd_set_default_policy(&dp) == 0, "nd_set_default_policy(%s)", pseq[i]);
		pthread_barrier_wait(&bar);
	}
	pthread_join(th, NULL);
	CHECK(nd_set_default_policy(NULL) == 0);
	CHECK_EQ(seen_node[0], 0);
	for (int i = 0; i < PSEQ; i++)
		CHECK(seen_node[i + 1] == pwant[i], "after the process default became %s: node %d (-2: not all of %d)",
		      pseq[i], seen_node[i + 1], N);
	return CHECK_DONE();
}
