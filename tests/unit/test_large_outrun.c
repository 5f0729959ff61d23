// SPDX-License-Identifier: MIT
/* A large block its node has room for, when the blocks held split the
 * node's slot (no free stretch of its size), gets a run outside the slot
 * bound to the node (outrun.c; docs/arenas.md "Runs outside the slot").
 * Emulated 1 GiB nodes 0 and 1 (2 GiB slots), the thread on CPU 1 (node
 * 1). Node 1's slot is split by one page at the start of each 16 MiB
 * block; then, under the default (local) policy, malloc(40 MiB) lands on
 * node 1 (numa_hit there; before: node 0, a numa_miss) outside the slot,
 * and free, calloc, realloc (in place down, grown up: node kept), usable
 * size, free_sized, aligned_alloc, fork and the invalid-pointer reports
 * (interior, a later page, double free) work on it; realloc growth by
 * steps, in place or moved with its pages (grow_block); under bind:1 blocks
 * are served until the node's room is spent, then ENOMEM. Last, the
 * bound churn of 512 slots of 1 B - 64 MiB, 20000 steps, the blocks'
 * usable sizes under 850 MiB (docs/arenas.md, "Spans", what was left):
 * no failure while the node has room (before: seeds 7 and 4, 9 and 5+
 * failures with 690-800 MiB of the 1 GiB node in use). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* the misuse is the point of the fatal cases */
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "check.h"
#include "churn_fixture.h"
#include "internal.h"
#include "outrun_fixture.h"

#define MIB (1ull << 20)
#define NSLOT 512
#define STEPS 20000
#define LIVE_MAX (850ull << 20)

static char err[256];
/* Runs bad(p) in a child: it must abort with "invalid pointer". */
static void expect_fatal(const char *what, void (*bad)(char *), char *p)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		bad(p);
		_exit(0);
	}
	close(fds[1]);
	char out[1024];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof out - 1 && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fds[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: child status %#x, stderr: %s", what, st, out);
	CHECK(strstr(out, "invalid pointer") != NULL, "%s: stderr: %s", what, out);
}

static void bad_interior(char *p) { free(p + 8); }
static void bad_later_page(char *p) { free(p + MIB); }
static void bad_double(char *p) { free(p); free(p); }
static void bad_realloc(char *p) { p = realloc(p + 2 * MIB, 100); (void)p; }

/* One page at the start of every 16 MiB block of node 1's slot: no free
 * stretch of 16 MiB is left. Returns the pins (count in *n). */
static char *pins[1024];
static int npins;

static void split_slot(void)
{
	while (npins < 1024 && (pins[npins] = _nd_page_alloc_exact(1, 1, 4096)))
		npins++;
	_nd_page_info_t in = info(1);
	CHECK(npins >= 120 && in.largest_order < 12, "%d pins, largest free order %d", npins, in.largest_order);
}

static void unsplit_slot(void)
{
	for (int k = 0; k < npins; k++)
		CHECK_EQ(_nd_page_free(pins[k]), 0);
	npins = 0;
}

static void local_block(void)
{
	/* the trims a slot miss makes first: done now, so that the counts
	 * below see the block alone */
	_nd_heap_trim_self(true);
	_nd_heap_trim_parked();
	nd_node_stats_t s0 = stats(0), s1 = stats(1);
	_nd_page_info_t before = info(1);
	char *p = malloc(40 * MIB);
	CHECK(p != NULL);
	if (!p)
		return;
	nd_node_stats_t t0 = stats(0), t1 = stats(1);
	CHECK(outside(p), "40 MiB outside the split slot");
	CHECK_EQ(_nd_page_node_of(p), 1);
	CHECK_EQ(nd_node_of(p + 40 * MIB - 1), 1);
	CHECK(t1.numa_hit == s1.numa_hit + 1 && t1.numa_foreign == s1.numa_foreign, "node 1: hit %llu -> %llu",
	      (unsigned long long)s1.numa_hit, (unsigned long long)t1.numa_hit);
	CHECK(t0.numa_miss == s0.numa_miss && t0.numa_hit == s0.numa_hit, "node 0 served nothing");
	CHECK(t1.bytes_in_use >= s1.bytes_in_use + 40 * MIB, "in use on node 1");
	_nd_page_info_t in = info(1);
	CHECK(in.out_runs == 1 && in.out_pages == (40 * MIB) >> ND_PAGE_SHIFT, "%llu runs, %llu pages outside",
	      (unsigned long long)in.out_runs, (unsigned long long)in.out_pages);
	CHECK_EQ(in.used_pages, before.used_pages + ((40 * MIB) >> ND_PAGE_SHIFT));
	CHECK_EQ(malloc_usable_size(p), 40 * MIB);
	for (size_t k = 0; k < 40 * MIB; k += ND_PAGE_SIZE)
		p[k] = (char)(k >> 12);

	/* calloc: a fresh mapping, zero */
	char *z = calloc(1, 30 * MIB);
	CHECK(z && outside(z));
	bool zero = true;
	for (size_t k = 0; z && k < 30 * MIB; k += 4093)
		zero &= z[k] == 0;
	CHECK(zero, "calloc outside the slot reads as zero");
	free(z);

	/* realloc down: in place, the tail unmapped */
	char *q = realloc(p, 15 * MIB);
	CHECK(q == p, "realloc down in place");
	CHECK_EQ(malloc_usable_size(q), 15 * MIB);
	CHECK_EQ(info(1).out_pages, (15 * MIB) >> ND_PAGE_SHIFT);
	/* realloc up: grown in place or moved (grow_block), on node 1, contents kept */
	char *r = realloc(q, 50 * MIB);
	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ(_nd_page_node_of(r), 1);
	CHECK_EQ(nd_node_of(r + 50 * MIB - 1), 1);
	bool same = true;
	for (size_t k = 0; k < 15 * MIB; k += ND_PAGE_SIZE)
		same &= r[k] == (char)(k >> 12);
	CHECK(same, "realloc kept the contents");
	CHECK_EQ(info(1).out_runs, 1);

	/* fork: the child keeps the run, frees it, makes another */
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		for (size_t k = 0; k < 15 * MIB; k += ND_PAGE_SIZE)
			bad += r[k] != (char)(k >> 12);
		bad += _nd_page_node_of(r) != 1 || malloc_usable_size(r) != 50 * MIB;
		free(r);
		char *c = malloc(40 * MIB);
		bad += !c || !outside(c) || _nd_page_node_of(c) != 1;
		if (c)
			c[40 * MIB - 1] = 1;
		free(c);
		bad += info(1).out_runs != 0;
		_exit(bad ? 1 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child: status %#x", st);
	CHECK(r[0] == 0 && r[ND_PAGE_SIZE] == 1, "the parent's run untouched by the child");

	expect_fatal("free inside the first page", bad_interior, r);
	expect_fatal("free inside a later page", bad_later_page, r);
	expect_fatal("double free", bad_double, r);
	expect_fatal("realloc of an interior pointer", bad_realloc, r);

	/* free_sized: the sizes it was asked with */
	nd_free_sized(r, 50 * MIB);
	CHECK_EQ(info(1).out_runs, 0);

	/* aligned: 32 MiB alignment */
	char *a = aligned_alloc(32 * MIB, 40 * MIB);
	CHECK(a && outside(a) && !((uintptr_t)a & (32 * MIB - 1)), "aligned %p", (void *)a);
	CHECK_EQ(_nd_page_node_of(a), 1);
	free(a);
	_nd_page_info_t after = info(1);
	CHECK(after.out_runs == 0 && after.used_pages == before.used_pages, "all given back: %llu used, %llu before",
	      (unsigned long long)after.used_pages, (unsigned long long)before.used_pages);
	CHECK(after.committed_pages <= before.committed_pages, "committed %llu, %llu before",
	      (unsigned long long)after.committed_pages, (unsigned long long)before.committed_pages);
}

/* Address space for a 40 MiB run with 1 GiB free after it: a hole at g
 * of 64 MiB under a fence of the test's ([g + 64M, g + 1G)), every gap
 * above it that a 40 MiB run could take filled (32 MiB fillers, until one
 * lands in the hole: mmap takes the highest gap that fits), so that the
 * next mapping of 40-64 MiB lands at the top of the hole, right under
 * the fence. free_after() unmaps the fence and fillers. */
#define FILLERS 512
static char *fillers[FILLERS];
static int nfill;
static char *hole;

static void *map_none(void *at, size_t len)
{
	void *m = mmap(at, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (at ? MAP_FIXED_NOREPLACE : 0),
		       -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static bool shape_space(void)
{
	char *g = map_none(NULL, 1024 * MIB);
	CHECK(g != NULL);
	if (!g)
		return false;
	munmap(g, 1024 * MIB);
	CHECK(map_none(g + 64 * MIB, 960 * MIB) == g + 64 * MIB);
	for (nfill = 0; nfill < FILLERS; nfill++) {
		char *x = map_none(NULL, 32 * MIB);
		CHECK(x != NULL);
		if (!x)
			return false;
		if (x >= g && x < g + 64 * MIB) { /* in the hole: none above fits */
			munmap(x, 32 * MIB);
			hole = g;
			return true;
		}
		fillers[nfill] = x;
	}
	CHECK(false, "%d fillers did not reach the hole", nfill);
	return false;
}

static void free_after(void)
{
	munmap(hole + 64 * MIB, 960 * MIB);
	for (int k = 0; k < nfill; k++)
		munmap(fillers[k], 32 * MIB);
	nfill = 0;
}

/* No mapping in [p, p + len). */
static bool space_free(char *p, size_t len)
{
	void *m = map_none(p, len);
	if (m)
		munmap(m, len);
	return m == p;
}

/* realloc of a block outside the slot that grows (40 MiB by steps of 20
 * MiB to 200, then 220 and 240): in place while the address space after
 * it is free (mremap), then, with a page mapped right after it, moved
 * with its pages (mremap, no copy: no allocation counted, 2 MiB
 * aligned); its contents, its node, the room's and the statistics'
 * counts exact at each step, another run outside the slot kept in the
 * table (its lookups and free). Before, every growth was a new block and
 * a copy (numa_hit + 1, the address changed). */
static void grow_block(void)
{
	_nd_heap_trim_self(true);
	_nd_heap_trim_parked();
	char *other = malloc(40 * MIB); /* before the shaping: it would take the space after the block */
	CHECK(other && outside(other));
	if (!other || !shape_space())
		return;
	_nd_page_info_t in0 = info(1);
	nd_node_stats_t s0 = stats(1);
	char *p = malloc(40 * MIB);
	CHECK(p && outside(p) && p >= hole && p < hole + 64 * MIB, "40 MiB at %p, the hole at %p", (void *)p,
	      (void *)hole);
	free_after();
	if (!p)
		return;
	for (size_t k = 0; k < 40 * MIB; k += ND_PAGE_SIZE)
		p[k] = (char)(k >> 12);
	uint64_t base = in0.used_pages, hits = stats(1).numa_hit;
	int64_t in_use = (int64_t)stats(1).bytes_in_use - (int64_t)s0.bytes_in_use;
	CHECK_EQ(in_use, (int64_t)(40 * MIB));
	size_t have = 40 * MIB;
	int inplace = 0, moved = 0;
	for (size_t sz = 60 * MIB; sz <= 240 * MIB; sz += 20 * MIB) {
		if (sz == 220 * MIB) /* a page right after it: it must move */
			CHECK(map_none(p + have, ND_PAGE_SIZE) == p + have);
		bool room = space_free(p + have, sz - have);
		char *q = realloc(p, sz);
		CHECK(q != NULL, "realloc to %zu MiB", sz / MIB);
		if (!q)
			break;
		if (sz == 220 * MIB)
			munmap(p + have, ND_PAGE_SIZE);
		if (room)
			CHECK(q == p, "%zu MiB: grown in place (%p -> %p)", sz / MIB, (void *)p, (void *)q);
		else
			CHECK(q != p && !((uintptr_t)q & (2 * MIB - 1)), "%zu MiB: moved, 2 MiB aligned (%p -> %p)", sz / MIB,
			      (void *)p, (void *)q);
		inplace += q == p;
		moved += q != p;
		bool same = true;
		for (size_t k = 0; k < have; k += ND_PAGE_SIZE)
			same &= q[k] == (char)(k >> 12);
		CHECK(same, "%zu MiB: contents kept", sz / MIB);
		for (size_t k = have; k < sz; k += ND_PAGE_SIZE)
			q[k] = (char)(k >> 12);
		CHECK(outside(q) && malloc_usable_size(q) == sz, "%zu MiB: usable %zu", sz / MIB, malloc_usable_size(q));
		CHECK(_nd_page_node_of(q) == 1 && nd_node_of(q + sz - 1) == 1, "%zu MiB: on node 1", sz / MIB);
		_nd_page_info_t in = info(1);
		CHECK(in.out_runs == 2 && in.out_pages == ((sz + 40 * MIB) >> ND_PAGE_SHIFT),
		      "%zu MiB: %llu runs, %llu pages outside", sz / MIB, (unsigned long long)in.out_runs,
		      (unsigned long long)in.out_pages);
		CHECK(in.used_pages == base + (sz >> ND_PAGE_SHIFT), "%zu MiB: %llu pages used, %llu + the block's",
		      sz / MIB, (unsigned long long)in.used_pages, (unsigned long long)base);
		nd_node_stats_t s = stats(1);
		CHECK(s.numa_hit == hits, "%zu MiB: no block allocated (numa_hit %llu -> %llu)", sz / MIB,
		      (unsigned long long)hits, (unsigned long long)s.numa_hit);
		CHECK_EQ((int64_t)s.bytes_in_use - (int64_t)s0.bytes_in_use, (int64_t)sz);
		p = q;
		have = sz;
	}
	CHECK(inplace == 8 && moved >= 1, "%d in place, %d moved", inplace, moved);
	/* the other run: still found, freed */
	CHECK(outside(other) && _nd_page_node_of(other) == 1 && malloc_usable_size(other) == 40 * MIB);
	free(other);
	CHECK(outside(p) && info(1).out_runs == 1);
	free(p);
	_nd_page_info_t after = info(1);
	CHECK(after.out_runs == 0 && after.used_pages == base - ((40 * MIB) >> ND_PAGE_SHIFT), /* other's too */
	      "all given back: %llu used, %llu before", (unsigned long long)after.used_pages,
	      (unsigned long long)base);
}

/* bind:1, node 1's slot split: 40 MiB blocks until the room is spent,
 * then ENOMEM; never past the capacity. */
static void bound_full(void)
{
	static char *b[64];
	int n = 0;
	errno = 0;
	while (n < 64 && (b[n] = malloc(40 * MIB)))
		n++;
	int e = errno;
	_nd_page_info_t in = info(1);
	CHECK(n > 0 && n < 64 && e == ENOMEM, "%d blocks, then errno %d", n, e);
	CHECK(in.used_pages <= in.capacity_pages && in.used_pages + ((40 * MIB) >> ND_PAGE_SHIFT) > in.capacity_pages,
	      "the room spent: %llu of %llu pages", (unsigned long long)in.used_pages,
	      (unsigned long long)in.capacity_pages);
	CHECK(in.out_runs >= (uint64_t)n - 1, "%llu runs outside of %d", (unsigned long long)in.out_runs, n);
	for (int k = 0; k < n; k++) {
		CHECK_EQ(_nd_page_node_of(b[k]), 1);
		free(b[k]);
	}
	CHECK_EQ(info(1).out_runs, 0);
}

/* Blocks the churns made outside the slot: how many each needs depends on
 * the layout (decay clocks, the seed; seed 7 needed 0-1 of them), so the
 * churns together must have used some (else they did not test the path). */
static uint64_t churn_outs;

static void churn(uint64_t seed)
{
	churn_rs = seed;
	static char *p[NSLOT];
	static size_t sz[NSLOT];
	size_t live = 0;
	int fails = 0, roomy = 0;
	uint64_t outs = 0;
	for (int step = 0; step < STEPS; step++) {
		int i = (int)(rnd() % NSLOT);
		/* live: the blocks' usable sizes (below) */
		if (p[i] && rnd() % 2) {
			free(p[i]);
			live -= sz[i];
			p[i] = NULL;
			sz[i] = 0;
			continue;
		}
		size_t n = pick();
		if (live - sz[i] + n > LIVE_MAX)
			continue;
		char *q = p[i] ? realloc(p[i], n) : malloc(n);
		if (!q) {
			fails++;
			_nd_page_info_t in = info(1);
			/* 2 MiB pages for 8 MiB and more (large.c, ROUND_PAGES) */
			uint64_t need = ND_ALIGN_UP(n, 2 * MIB) >> ND_PAGE_SHIFT;
			if (in.used_pages + need <= in.capacity_pages && roomy++ < 5)
				CHECK(false, "step %d: %zu B failed with %llu of %llu pages in use, largest free order %d", step, n,
				      (unsigned long long)in.used_pages, (unsigned long long)in.capacity_pages, in.largest_order);
			continue;
		}
		outs += outside(q);
		n = malloc_usable_size(q); /* what the node holds for it (realloc keeps a run it shrinks by half or less) */
		live += n - sz[i];
		p[i] = q;
		sz[i] = n;
		q[0] = 1;
		q[n - 1] = 1;
	}
	CHECK(roomy == 0, "%d of %d failures while the node had room", roomy, fails);
	printf("churn (seed %llu): %d failures, %llu blocks outside the slot\n", (unsigned long long)seed, fails,
	       (unsigned long long)outs);
	for (int i = 0; i < NSLOT; i++) {
		if (p[i])
			CHECK_EQ(_nd_page_node_of(p[i]), 1);
		free(p[i]);
		p[i] = NULL;
		sz[i] = 0;
	}
	CHECK_EQ(info(1).out_runs, 0);
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);
	churn_outs += outs;
}

int main(void)
{
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "%s", err);
	uint64_t one[16] = { 2 }; /* CPU 1: node 1 is local */
	CHECK(_nd_os_sched_setaffinity(0, sizeof one, one) == 0);
	free(malloc(64)); /* the init, the heaps */
	split_slot();
	local_block();
	grow_block();
	nd_policy_t bind1;
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&bind1) == 0);
	bound_full();
	unsplit_slot();
	malloc_trim(0);
	churn(7);
	churn(4);
	CHECK(churn_outs > 0, "the churns used runs outside the slot (%llu)", (unsigned long long)churn_outs);
	return CHECK_DONE();
}
