// SPDX-License-Identifier: MIT
/* realloc of large blocks in place: growth into the free pages after the
 * run (same address, contents kept), refusal when a neighbour is in use
 * or when the policy in force places new memory elsewhere, shrink in
 * place, and every page on the node the policy asks for. Emulated nodes 1
 * and 2 have no CPUs, so nothing else of the test lives there. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static char err[256];
#define MiB ((size_t)1 << 20)

static void set_policy(const char *s)
{
	nd_policy_t pol;
	CHECK(nd_policy_parse(s, &pol, err, sizeof err) == 0, "%s: %s", s, err);
	CHECK(nd_set_policy(&pol) == 0, "%s", s);
}

/* Byte k of a block holds (k * 7 + k / 4096) & 0xff. */
static void fill(unsigned char *p, size_t from, size_t to)
{
	for (size_t k = from; k < to; k++)
		p[k] = (unsigned char)(k * 7 + k / 4096);
}

static bool intact(const unsigned char *p, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (p[k] != (unsigned char)(k * 7 + k / 4096))
			return false;
	return true;
}

/* Every page of [p, p+n) on node (>= 0), or granules of g bytes
 * alternating between two nodes (node < 0). */
static bool pages_on(const char *p, size_t n, int node, size_t g)
{
	int prev = -1;
	for (size_t k = 0; k < n; k += ND_PAGE_SIZE) {
		int on = nd_node_of(p + k);
		if (node >= 0 && on != node)
			return false;
		if (node < 0) {
			if (on != 1 && on != 2)
				return false;
			if (k % g == 0 && k && on == prev)
				return false;
			if (k % g && on != prev)
				return false;
		}
		prev = on;
	}
	return true;
}

/* Grow p from size to top, in steps of step bytes then doubling; returns
 * p, counts the steps past the usable size that kept the address (a spread
 * block's usable size is rounded up while the large-block cache is on).
 * Contents checked each step. */
static unsigned char *grow(unsigned char *p, size_t *size, size_t top, int node, int *kept, int *steps)
{
	while (*size < top) {
		size_t n = *size < 4 * MiB ? *size + 64 * 1024 : *size * 2;
		size_t had = nd_usable_size(p);
		unsigned char *q = nd_realloc(p, n);
		CHECK(q != NULL, "realloc to %zu: errno %d", n, errno);
		if (!q)
			return p;
		CHECK(intact(q, *size), "contents after realloc %zu -> %zu", *size, n);
		fill(q, *size, n);
		CHECK(pages_on((char *)q, n, node, 64 * 1024), "%zu bytes: a page off node %d", n, node);
		*kept += q == p && n > had;
		(*steps)++;
		p = q;
		*size = n;
	}
	return p;
}

int main(void)
{
	int rc = nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G; 2: mem=1G", err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	_nd_opt_set("arena_reserve", "1G");

	/* Node 1 is empty: the block starts at its slot base and every page
	 * after it is free, so each growth stays in place. */
	set_policy("preferred:1");
	size_t size = MiB;
	unsigned char *p = nd_malloc(size);
	CHECK(p != NULL);
	fill(p, 0, size);
	int kept = 0, steps = 0;
	p = grow(p, &size, 64 * MiB, 1, &kept, &steps);
	CHECK_EQ(kept, steps);
	CHECK(steps > 40, "steps %d", steps);
	CHECK_EQ(nd_usable_size(p), 64 * MiB);
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);

	/* A neighbour in use: the block moves, contents kept. */
	unsigned char *q = nd_malloc(MiB);
	CHECK(q == p + 64 * MiB, "neighbour %p, block ends at %p", (void *)q, (void *)(p + 64 * MiB));
	unsigned char *r = nd_realloc(p, size + MiB);
	CHECK(r != NULL && r != p, "moved: %p -> %p", (void *)p, (void *)r);
	CHECK(intact(r, size));
	fill(r, size, size + MiB);
	size += MiB;
	p = r;
	/* The moved block has free pages after it: it grows in place again. */
	nd_free(q);
	r = nd_realloc(p, size + MiB);
	CHECK(r == p, "grew in place after the move: %p -> %p", (void *)p, (void *)r);
	p = r;
	CHECK(intact(p, size));
	fill(p, size, size + MiB);
	size += MiB;

	/* Shrink by more than half: in place, the tail back to node 1. The
	 * tail goes to node 1's large-run cache, which may give back older
	 * runs (its bound) or none: what the node's blocks hold (pages in
	 * runs but not cached) drops by the tail, whatever the cache held.
	 * (Counting used_pages alone failed under load: when a second had
	 * passed since the move, the decay emptied the cache at nd_free(q),
	 * so the tail was cached and used_pages did not drop.) */
	_nd_page_info_t before, after;
	CHECK(_nd_page_info(1, &before) == 0);
	size_t cached_before = _nd_large_cached(1);
	r = nd_realloc(p, 8 * MiB);
	CHECK(r == p, "shrunk in place: %p -> %p", (void *)p, (void *)r);
	CHECK(_nd_page_info(1, &after) == 0);
	size_t cached_after = _nd_large_cached(1);
	CHECK_EQ((before.used_pages - cached_before / ND_PAGE_SIZE) - (after.used_pages - cached_after / ND_PAGE_SIZE),
		 (size - 8 * MiB) / ND_PAGE_SIZE);
	CHECK_EQ(nd_usable_size(p), 8 * MiB);
	CHECK(intact(p, 8 * MiB));
	size = 8 * MiB;
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);

	/* The policy now binds to node 2: growth moves the block there, and
	 * every later growth stays there. */
	set_policy("bind:2");
	kept = steps = 0;
	p = grow(p, &size, 32 * MiB, 2, &kept, &steps);
	CHECK(kept >= 1 && kept < steps, "kept %d of %d", kept, steps);
	nd_free(p);

	/* Interleave: never in place; each growth is a spread run, its 64K
	 * granules alternating between nodes 1 and 2. */
	set_policy("interleave:1,2@64K");
	size = MiB;
	p = nd_malloc(size);
	CHECK(p != NULL);
	fill(p, 0, size);
	CHECK(pages_on((char *)p, size, -1, 64 * 1024));
	kept = steps = 0;
	p = grow(p, &size, 8 * MiB, -1, &kept, &steps);
	CHECK_EQ(kept, 0);
	nd_free(p);

	/* A node-1 block grown under a policy that prefers node 0 keeps its
	 * node (realloc keeps a block's node; only bind moves it). The freed
	 * node-1 runs are cached: flushed so the growth takes a fresh run. */
	_nd_large_flush(-1);
	set_policy("preferred:1");
	p = nd_malloc(2 * MiB);
	CHECK(p && nd_node_of(p) == 1);
	set_policy("local");
	r = nd_realloc(p, 3 * MiB);
	CHECK(r != NULL && nd_node_of(r) == 1, "local growth: %p on node %d", (void *)r, r ? nd_node_of(r) : -2);
	nd_free(r);
	return CHECK_DONE();
}
