// SPDX-License-Identifier: MIT
/* realloc keeps a placed block's node (issue 11's "Done means"), for
 * every placement call that makes a block on one node and every pair of
 * size ranges: a block on node 1 (the thread runs on node 0's CPU) from
 * nd_malloc_onnode, nd_mallocx_onnode (ALIGN(64), ALIGN(4096), ZERO),
 * nd_calloc_onnode, nd_aligned_alloc_onnode, nd_malloc_policy and
 * nd_aligned_alloc_policy (bind:1, preferred:1, preferred-many:1,
 * weighted:1=1, interleave:1; plain and prepared objects),
 * nd_mallocx_policy, nd_malloc_interleaved({1}) (weighted and interleave
 * up to a page: above it a block is spread by offset and reallocated
 * under the policy in force, docs/policy.md), of sizes in a small class (24, 3000), a page
 * run (40,000) and large (3 MiB), grown or shrunk by realloc and
 * reallocarray to each of 24, 200, 3000, 40,000, 3 MiB and 100 bytes
 * (a fresh block for each pair): the new block is on node 1, holds the
 * old one's bytes, and the old one is freed. Then the same under a thread
 * policy (interleave:0-1, weighted:0=1,1=1 and preferred:0: realloc
 * keeps the node; bind:0-1: node 1 is in the set, kept: a small new
 * block took the bind policy's first node, 0, before audit14). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nodalloc.h"

static const size_t from_sizes[] = { 24, 3000, 40000, 3u << 20 };
static const size_t to_sizes[] = { 24, 200, 3000, 40000, 3u << 20, 100 };
static nd_policy_t pols[5];
static const nd_policy_t *prep[5];
static const char *pol_specs[5] = { "bind:1", "preferred:1", "preferred-many:1", "weighted:1=1", "interleave:1" };
static nd_nodemask_t one;

enum { CALLS = 8 + 5 * 3 + 1 };

static const char *call_name(int c)
{
	static char buf[96];
	static const char *fixed[] = { "nd_malloc_onnode",
				       "nd_mallocx_onnode ALIGN(64)",
				       "nd_mallocx_onnode ALIGN(4096)",
				       "nd_mallocx_onnode ZERO",
				       "nd_calloc_onnode",
				       "nd_aligned_alloc_onnode(64)",
				       "nd_malloc_interleaved({1})",
				       "nd_mallocx_policy(prepared bind:1, ALIGN(128))" };
	if (c < 8)
		return fixed[c];
	c -= 8;
	if (c < 15) {
		static const char *k[] = { "nd_malloc_policy plain", "nd_malloc_policy prepared",
					   "nd_aligned_alloc_policy(64, prepared)" };
		snprintf(buf, sizeof buf, "%s %s", k[c % 3], pol_specs[c / 3]);
		return buf;
	}
	return "reallocarray of nd_malloc_onnode";
}

/* Call c places a block of size on one node: not the interleaved call
 * nor a weighted or interleave policy above a page (spread). */
static int one_node(int c, size_t size)
{
	int p = (c - 8) / 3;
	return size <= 4096 || !(c == 6 || (c >= 8 && c < CALLS - 1 && (p == 3 || p == 4)));
}

/* A block of size on node 1 by call c. */
static void *make(int c, size_t size)
{
	switch (c) {
	case 0: return nd_malloc_onnode(size, 1);
	case 1: return nd_mallocx_onnode(size, 1, ND_MALLOCX_ALIGN(64));
	case 2: return nd_mallocx_onnode(size, 1, ND_MALLOCX_ALIGN(4096));
	case 3: return nd_mallocx_onnode(size, 1, ND_MALLOCX_ZERO);
	case 4: return nd_calloc_onnode(1, size, 1);
	case 5: return nd_aligned_alloc_onnode(64, size, 1);
	case 6: return nd_malloc_interleaved(size, &one, 0);
	case 7: return nd_mallocx_policy(size, prep[0], ND_MALLOCX_ALIGN(128));
	case CALLS - 1: return nd_malloc_onnode(size, 1);
	default: break;
	}
	c -= 8;
	int k = c % 3, p = c / 3;
	if (k == 0)
		return nd_malloc_policy(size, &pols[p]);
	if (k == 1)
		return nd_malloc_policy(size, prep[p]);
	return nd_aligned_alloc_policy(64, size, prep[p]);
}

static void run_matrix(const char *under)
{
	for (int c = 0; c < CALLS; c++) {
		for (unsigned f = 0; f < sizeof from_sizes / sizeof from_sizes[0]; f++) {
			for (unsigned t = 0; t < sizeof to_sizes / sizeof to_sizes[0]; t++) {
				size_t fs = from_sizes[f], ts = to_sizes[t];
				if (!one_node(c, fs))
					continue;
				unsigned char *b = make(c, fs);
				CHECK(b != NULL, "%s: %s of %zu B failed", under, call_name(c), fs);
				if (!b)
					continue;
				CHECK(nd_node_of(b) == 1, "%s: %s of %zu B on node %d", under, call_name(c), fs,
				      nd_node_of(b));
				size_t keep = fs < ts ? fs : ts;
				for (size_t i = 0; i < keep; i += 97)
					b[i] = (unsigned char)(i * 7 + 1);
				unsigned char *r = c == CALLS - 1 ? reallocarray(b, ts / 4 ? ts / 4 : 1, 4) : realloc(b, ts);
				CHECK(r != NULL, "%s: %s: realloc %zu -> %zu failed", under, call_name(c), fs, ts);
				if (!r)
					continue;
				int nd = nd_node_of(r), nl = nd_node_of(r + ts - 1);
				CHECK(nd == 1 && nl == 1, "%s: %s: realloc %zu -> %zu: node %d (last byte %d)", under,
				      call_name(c), fs, ts, nd, nl);
				size_t bad = SIZE_MAX;
				for (size_t i = 0; i < keep && bad == SIZE_MAX; i += 97)
					if (r[i] != (unsigned char)(i * 7 + 1))
						bad = i;
				CHECK(bad == SIZE_MAX, "%s: %s: realloc %zu -> %zu: byte %zu lost", under, call_name(c), fs,
				      ts, bad);
				free(r);
			}
		}
	}
}

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=512M; 1: mem=512M", err, sizeof err) == 0, "emulate: %s", err);
	nd_nodemask_zero(&one);
	nd_nodemask_set(&one, 1);
	for (int i = 0; i < 5; i++) {
		CHECK(nd_policy_parse(pol_specs[i], &pols[i], err, sizeof err) == 0, "%s: %s", pol_specs[i], err);
		prep[i] = nd_policy_prepare(&pols[i]);
		CHECK(prep[i] != NULL, "prepare %s", pol_specs[i]);
	}
	run_matrix("local");
	static const char *thread_pols[] = { "interleave:0-1", "weighted:0=1,1=1", "bind:0-1", "preferred:0" };
	for (unsigned i = 0; i < sizeof thread_pols / sizeof thread_pols[0]; i++) {
		nd_policy_t tp;
		CHECK(nd_policy_parse(thread_pols[i], &tp, err, sizeof err) == 0, "%s: %s", thread_pols[i], err);
		CHECK(nd_set_policy(&tp) == 0, "nd_set_policy(%s)", thread_pols[i]);
		run_matrix(thread_pols[i]);
	}
	CHECK(nd_set_policy(NULL) == 0, "nd_set_policy(NULL)");
	return CHECK_DONE();
}
