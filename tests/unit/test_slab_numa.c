// SPDX-License-Identifier: MIT
/* Emulated topology: allocations land on the CPU's memory node, a CPU of a
 * memoryless node uses its memory node and keeps the fast path, migration
 * switches node, freed memory is never reused for another node, threads
 * do not inherit another node's leftovers, policies choose the node. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

/* node 0: CPUs 0-1; node 1: CPUs 2-3; node 2: CPUs 4-5, no memory (nearest
 * node 1); node 3: memory only (a far tier). */
static const char *SPEC = "0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; 2: cpus=4-5 mem=0; 3: mem=64M; "
			  "distance: 0-1=20, 0-2=20, 1-2=12, 0-3=30, 1-3=30, 2-3=30";
static const int mem_node_of_cpu[6] = { 0, 0, 1, 1, 1, 1 };

enum { N = 2000 };

static int all_on(void **v, int n, int node)
{
	for (int i = 0; i < n; i++)
		if (nd_node_of(v[i]) != node)
			return 0;
	return 1;
}

static int overlap(void **a, int na, void **b, int nb)
{
	int c = 0;
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			c += a[i] == b[j];
	return c;
}

typedef struct job {
	int cpu;
	int n;
	size_t size;
	void **out;     /* allocated here (kept) */
	void **to_free; /* freed here (remote) */
	int nfree;
} job_t;

static void *run_job(void *arg)
{
	job_t *j = arg;
	nd_emulate_cpu(j->cpu);
	for (int i = 0; i < j->nfree; i++)
		free(j->to_free[i]);
	for (int i = 0; i < j->n; i++)
		j->out[i] = malloc(j->size);
	return NULL;
}

/* A thread that allocates again after its heaps were handed back (what
 * happens when another key destructor mallocs after ours ran). */
static void *after_exit(void *arg)
{
	int *ok = arg;
	nd_emulate_cpu(2);
	void *a1 = malloc(40);
	_nd_slab_thread_exit();
	nd_emulate_cpu(2); /* the released thread record had the emulated CPU */
	void *a2 = malloc(40);
	*ok = a1 && a2 && a1 != a2 && nd_node_of(a1) == 1 && nd_node_of(a2) == 1;
	free(a1); /* now a remote free: a1's heap was parked */
	free(a2);
	return NULL;
}

static void in_thread(job_t *j)
{
	pthread_t t;
	pthread_create(&t, NULL, run_job, j);
	pthread_join(t, NULL);
}

static void *a[N], *b[N], *c[N];

int main(void)
{
	char err[256];
	int rc = nd_topology_emulate(SPEC, err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	if (rc != 0)
		return CHECK_DONE();

	/* each CPU: small and large allocations on its memory node */
	for (int cpu = 0; cpu < 6; cpu++) {
		nd_emulate_cpu(cpu);
		void *s = malloc(100), *l = malloc(200000), *z = calloc(3, 3000);
		CHECK(nd_node_of(s) == mem_node_of_cpu[cpu], "cpu %d: small on node %d", cpu, nd_node_of(s));
		CHECK(nd_node_of(l) == mem_node_of_cpu[cpu], "cpu %d: large on node %d", cpu, nd_node_of(l));
		CHECK(nd_node_of(z) == mem_node_of_cpu[cpu], "cpu %d: calloc on node %d", cpu, nd_node_of(z));
		void *loc = nd_malloc_local(48);
		CHECK_EQ(nd_node_of(loc), mem_node_of_cpu[cpu]);
		free(s);
		free(l);
		free(z);
		free(loc);
	}

	/* the memoryless node's CPU keeps the fast path: no more slow-path
	 * entries than a CPU of a node with memory for the same work */
	uint64_t slow[2];
	int cpus[2] = { 0, 4 };
	for (int k = 0; k < 2; k++) {
		nd_emulate_cpu(cpus[k]);
		free(malloc(64)); /* settle on the node's heap */
		uint64_t s0 = _nd_slab_slow_count();
		for (int i = 0; i < N; i++)
			a[i] = malloc(64);
		slow[k] = _nd_slab_slow_count() - s0;
		CHECK(all_on(a, N, mem_node_of_cpu[cpus[k]]));
		for (int i = 0; i < N; i++)
			free(a[i]);
	}
	printf("slow paths for %d mallocs: CPU 0 %llu, memoryless CPU 4 %llu\n", N, (unsigned long long)slow[0], (unsigned long long)slow[1]);
	CHECK(slow[1] <= slow[0] + 2, "memoryless CPU: %llu slow paths, CPU 0: %llu", (unsigned long long)slow[1],
	      (unsigned long long)slow[0]);
	CHECK(slow[0] < N / 10, "CPU 0: %llu slow paths for %d allocations", (unsigned long long)slow[0], N);

	/* migration: the next allocation after a CPU change is on the new node */
	nd_emulate_cpu(0);
	void *m0 = malloc(32);
	nd_emulate_cpu(3);
	void *m1 = malloc(32);
	nd_emulate_cpu(1);
	void *m2 = malloc(32);
	CHECK_EQ(nd_node_of(m0), 0);
	CHECK_EQ(nd_node_of(m1), 1);
	CHECK_EQ(nd_node_of(m2), 0);
	free(m0);
	free(m1);
	free(m2);

	/* freed memory is not reused for another node */
	nd_emulate_cpu(0);
	for (int i = 0; i < N; i++)
		a[i] = malloc(80);
	for (int i = 0; i < N; i++)
		free(a[i]);
	nd_emulate_cpu(2);
	for (int i = 0; i < N; i++)
		b[i] = malloc(80);
	CHECK(all_on(b, N, 1));
	CHECK_EQ(overlap(a, N, b, N), 0);
	/* back on node 0, the freed objects are reused */
	nd_emulate_cpu(1);
	for (int i = 0; i < N; i++)
		c[i] = malloc(80);
	CHECK(all_on(c, N, 0));
	CHECK(overlap(a, N, c, N) > N / 2, "node 0 reused only %d of its objects", overlap(a, N, c, N));
	for (int i = 0; i < N; i++) {
		free(b[i]);
		free(c[i]);
	}

	/* threads: one on node 0 leaves objects and exits; a new thread on node
	 * 1 must not get node 0's leftovers; remote frees go home to node 0 */
	static void *t0[N], *t1[N], *t2[N], *t3[N];
	job_t j0 = { .cpu = 0, .n = N, .size = 200, .out = t0 };
	in_thread(&j0);
	CHECK(all_on(t0, N, 0));
	job_t j1 = { .cpu = 5, .n = N, .size = 200, .out = t1, .to_free = t0, .nfree = N };
	in_thread(&j1); /* frees node 0's objects remotely, then allocates */
	CHECK(all_on(t1, N, 1));
	CHECK_EQ(overlap(t0, N, t1, N), 0);
	job_t j2 = { .cpu = 1, .n = N, .size = 200, .out = t2 };
	in_thread(&j2); /* adopts node 0's parked heap: the objects came home */
	CHECK(all_on(t2, N, 0));
	CHECK(overlap(t0, N, t2, N) > N / 2, "remote frees not reused on node 0: %d", overlap(t0, N, t2, N));
	job_t j3 = { .cpu = 2, .n = N, .size = 200, .out = t3, .to_free = t2, .nfree = N };
	in_thread(&j3);
	CHECK(all_on(t3, N, 1));
	CHECK_EQ(overlap(t2, N, t3, N), 0);
	for (int i = 0; i < N; i++) {
		free(t1[i]);
		free(t3[i]);
	}

	/* a dead thread's objects freed by others go back to the page level:
	 * its parked heap is trimmed when a thread of the node needs a slab */
	{
		enum { NB = 4000 };
		static void *big[NB];
		nd_emulate_cpu(0);
		uint64_t before = _nd_topo_node_free(0);
		job_t jb = { .cpu = 1, .n = NB, .size = 2000, .out = big };
		in_thread(&jb);
		CHECK(all_on(big, NB, 0));
		uint64_t during = _nd_topo_node_free(0);
		CHECK(before - during >= (uint64_t)NB * 2048 / 2, "node 0 use grew by %llu", (unsigned long long)(before - during));
		for (int i = 0; i < NB; i++)
			free(big[i]); /* remote: the owner is gone */
		void *x = malloc(27000); /* a class new to this thread: takes a slab */
		CHECK_EQ(nd_node_of(x), 0);
		uint64_t after = _nd_topo_node_free(0);
		printf("node 0: %llu KiB in use with the dead thread's objects, %lld KiB after they were freed\n",
		       (unsigned long long)(before - during) >> 10, (long long)(before - after) / 1024);
		CHECK((int64_t)(before - after) < (1 << 20), "node 0 keeps %lld KiB after the frees", (long long)(before - after) / 1024);
		free(x);
	}

	{
		int ok = 0;
		pthread_t t;
		pthread_create(&t, NULL, after_exit, &ok);
		pthread_join(t, NULL);
		CHECK(ok, "allocation after the thread's heaps were handed back");
	}

	/* explicit placement */
	nd_emulate_cpu(0);
	void *p3 = nd_malloc_onnode(100, 3), *p3l = nd_malloc_onnode(100000, 3);
	CHECK_EQ(nd_node_of(p3), 3);
	CHECK_EQ(nd_node_of(p3l), 3);
	void *p2 = nd_malloc_onnode(100, 2); /* memoryless: its fallback */
	CHECK_EQ(nd_node_of(p2), 1);
	nd_nodemask_t m;
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 0);
	nd_nodemask_set(&m, 1);
	char *il = nd_malloc_interleaved(16 * 4096, &m, 4096);
	CHECK(il != NULL);
	int n0 = 0, n1 = 0;
	for (int i = 0; il && i < 16; i++) {
		int nd = nd_node_of(il + (size_t)i * 4096);
		n0 += nd == 0;
		n1 += nd == 1;
		if (i > 0)
			CHECK(nd != nd_node_of(il + (size_t)(i - 1) * 4096), "page %d not interleaved", i);
	}
	CHECK(n0 == 8 && n1 == 8, "interleaved pages: %d on 0, %d on 1", n0, n1);
	free(p3);
	free(p3l);
	free(p2);
	free(il);

	/* thread policies: bind and preferred choose the node of small and
	 * large allocations; interleave spreads small ones; NULL restores */
	nd_policy_t pol;
	CHECK(nd_policy_parse("bind:3", &pol, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&pol) == 0);
	void *bs = malloc(64), *bl = malloc(300000);
	CHECK_EQ(nd_node_of(bs), 3);
	CHECK_EQ(nd_node_of(bl), 3);
	free(bs);
	free(bl);
	/* bind: the node fills, then ENOMEM (64 MiB) */
	static void *fill[128];
	int nf = 0;
	errno = 0;
	while (nf < 128 && (fill[nf] = malloc(1 << 20)) != NULL)
		nf++;
	CHECK(nf > 40 && nf < 64, "bind:3 took %d MiB", nf);
	CHECK_EQ(errno, ENOMEM);
	/* preferred: falls back when the node is full */
	CHECK(nd_policy_parse("preferred:3", &pol, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&pol) == 0);
	void *pf = malloc(1 << 20);
	CHECK(pf != NULL && nd_node_of(pf) != 3 && nd_node_of(pf) >= 0);
	free(pf);
	for (int i = 0; i < nf; i++)
		free(fill[i]);
	void *pp = malloc(64);
	CHECK_EQ(nd_node_of(pp), 3);
	free(pp);
	CHECK(nd_policy_parse("interleave:0-1", &pol, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&pol) == 0);
	/* small objects: the node is chosen per slab (a 4-page run of 341
	 * 48-byte objects), so 2000 objects (6 slabs) alternate by slab:
	 * the nodes differ by at most one slab, and a slab's objects share
	 * its node */
	int on[4] = { 0 };
	for (int i = 0; i < N; i++) {
		a[i] = malloc(48);
		int nd = nd_node_of(a[i]);
		if (nd >= 0 && nd < 4)
			on[nd]++;
	}
	CHECK(on[0] + on[1] == N && on[0] - on[1] <= 341 && on[1] - on[0] <= 341 && on[0] > 0 && on[1] > 0,
	      "interleave small: %d on 0, %d on 1", on[0], on[1]);
	int mixed = 0;
	for (int i = 0; i < N; i++)
		mixed += _nd_slab_of(a[i]) == _nd_slab_of(a[0]) && nd_node_of(a[i]) != nd_node_of(a[0]);
	CHECK_EQ(mixed, 0);
	for (int i = 0; i < N; i++)
		free(a[i]);
	/* large allocations under an interleave or weighted thread policy are
	 * spread by offset with the policy's granularity */
	const char *spread_pols[2] = { "interleave:0-1@8K", "weighted:0=3,1=1@4K" };
	for (int k = 0; k < 2; k++) {
		CHECK(nd_policy_parse(spread_pols[k], &pol, err, sizeof err) == 0, "%s", err);
		CHECK(nd_set_policy(&pol) == 0);
		char *big = malloc(256 << 10);
		CHECK(big != NULL);
		int pages[64], cnt[2] = { 0, 0 };
		for (int i = 0; big && i < 64; i++) {
			pages[i] = nd_node_of(big + (size_t)i * 4096);
			if (pages[i] == 0 || pages[i] == 1)
				cnt[pages[i]]++;
		}
		if (k == 0) { /* runs of 2 pages, alternating */
			CHECK(cnt[0] == 32 && cnt[1] == 32, "%s: %d/%d pages", spread_pols[k], cnt[0], cnt[1]);
			for (int i = 2; big && i < 64; i += 2)
				CHECK(pages[i] == pages[i + 1] && pages[i] != pages[i - 1], "%s: page %d", spread_pols[k], i);
		} else { /* 3 pages on node 0, then 1 on node 1 */
			CHECK(cnt[0] == 48 && cnt[1] == 16, "%s: %d/%d pages", spread_pols[k], cnt[0], cnt[1]);
			for (int i = 0; big && i < 64; i++)
				CHECK(pages[i] == (i % 4 == 3), "%s: page %d on node %d", spread_pols[k], i, pages[i]);
		}
		free(big);
	}
	CHECK(nd_set_policy(NULL) == 0);
	nd_emulate_cpu(3);
	void *back = malloc(64);
	CHECK_EQ(nd_node_of(back), 1);
	free(back);
	return CHECK_DONE();
}
