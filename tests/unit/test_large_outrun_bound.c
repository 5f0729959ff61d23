// SPDX-License-Identifier: MIT
/*
 * Runs outside the slot (outrun.c) and their growth by realloc (mremap,
 * task outrun2) under the rules of task outrun3: NODALLOC_ARENA_RESERVE
 * set by the user bounds every allocation (docs/arenas.md "Runs larger
 * than a slot"), a block grown by realloc included; and a growth refused
 * by the address space (ulimit -v) leaves the block, its contents, the
 * node's room and the statistics as they were (task audit26).
 *
 * Emulated 1 GiB nodes 0 and 1, the thread on CPU 1 (node 1),
 * NODALLOC_ARENA_RESERVE=256M: node 1's slot is split by one page at the
 * start of each 16 MiB block, so that a 40 MiB block goes outside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "internal.h"
#include "outrun_fixture.h"

#define MIB (1ull << 20)

static char err[256];
static char *pins[1024];
static int npins;

static void fill(char *p, size_t from, size_t to)
{
	for (size_t k = from; k < to; k += ND_PAGE_SIZE)
		p[k] = (char)(k >> 12);
}

static bool kept(const char *p, size_t n)
{
	for (size_t k = 0; k < n; k += ND_PAGE_SIZE)
		if (p[k] != (char)(k >> 12))
			return false;
	return true;
}

/* A block outside the slot grows by realloc up to the bound (256 MiB),
 * never past it: realloc(p, 300 MiB) is NULL with ENOMEM, p unchanged,
 * as malloc(300 MiB) is. Fails before: grown outside to 300 MiB. */
static void grow_bounded(void)
{
	char *p = malloc(40 * MIB);
	CHECK(p && outside(p), "40 MiB outside the split slot");
	if (!p)
		return;
	fill(p, 0, 40 * MIB);
	char *q = realloc(p, 200 * MIB);
	CHECK(q && outside(q), "200 MiB: grown outside");
	if (!q)
		return;
	p = q;
	fill(p, 40 * MIB, 200 * MIB);
	errno = 0;
	void *big = malloc(300 * MIB);
	CHECK(big == NULL && errno == ENOMEM, "malloc(300 MiB) past NODALLOC_ARENA_RESERVE=256M: %p", big);
	free(big);
	_nd_page_info_t in0 = info(1);
	errno = 0;
	q = realloc(p, 300 * MIB);
	CHECK(q == NULL && errno == ENOMEM, "realloc to 300 MiB past NODALLOC_ARENA_RESERVE=256M: %p, usable %zu MiB",
	      (void *)q, q ? malloc_usable_size(q) / MIB : 0);
	if (q)
		p = q;
	CHECK_EQ(malloc_usable_size(p), 200 * MIB);
	CHECK(kept(p, 200 * MIB), "contents kept");
	_nd_page_info_t in1 = info(1);
	CHECK_EQ(in1.used_pages, in0.used_pages);
	CHECK_EQ(in1.out_pages, in0.out_pages);
	free(p);
	CHECK_EQ(info(1).out_runs, 0);
}

/* Under ulimit -v a little above what the process maps, a block outside
 * the slot cannot grow by much (neither in place, nor moved, nor as a new
 * block and a copy; bind:1): realloc is NULL with ENOMEM, the block, its node's
 * room (used, out pages), its in-use and committed bytes unchanged; it
 * grows once the limit is gone, and all goes back at its free. */
static size_t vm_bytes(void)
{
	char buf[4096];
	long n = _nd_os_read_file("/proc/self/status", buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = 0;
	char *v = strstr(buf, "VmSize:");
	return v ? (size_t)strtoull(v + 7, NULL, 10) << 10 : 0;
}

static void grow_under_limit(void)
{
	nd_policy_t bind1; /* local would take node 0's slot when node 1's mapping is refused */
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&bind1) == 0);
	char *p = malloc(40 * MIB);
	CHECK(p && outside(p), "40 MiB outside the split slot");
	if (!p)
		return;
	fill(p, 0, 40 * MIB);
	struct rlimit old;
	CHECK(getrlimit(RLIMIT_AS, &old) == 0);
	size_t vm = vm_bytes();
	CHECK(vm > 0);
	struct rlimit lim = { vm + 24 * MIB, old.rlim_max };
	CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
	_nd_page_info_t in0 = info(1);
	nd_node_stats_t s0 = stats(1);
	for (size_t sz = 80 * MIB; sz <= 160 * MIB; sz += 40 * MIB) {
		errno = 0;
		char *q = realloc(p, sz);
		CHECK(q == NULL && errno == ENOMEM, "realloc to %zu MiB under ulimit -v: %p", sz / MIB, (void *)q);
		if (q) {
			p = q;
			break;
		}
		CHECK(outside(p) && malloc_usable_size(p) == 40 * MIB && kept(p, 40 * MIB), "%zu MiB: the block kept",
		      sz / MIB);
		_nd_page_info_t in = info(1);
		nd_node_stats_t s = stats(1);
		CHECK(in.used_pages == in0.used_pages && in.out_pages == in0.out_pages && in.out_runs == in0.out_runs,
		      "%zu MiB: room used %llu -> %llu, out %llu -> %llu", sz / MIB, (unsigned long long)in0.used_pages,
		      (unsigned long long)in.used_pages, (unsigned long long)in0.out_pages,
		      (unsigned long long)in.out_pages);
		CHECK(s.bytes_in_use == s0.bytes_in_use && s.bytes_committed == s0.bytes_committed,
		      "%zu MiB: in use %llu -> %llu, committed %llu -> %llu", sz / MIB,
		      (unsigned long long)s0.bytes_in_use, (unsigned long long)s.bytes_in_use,
		      (unsigned long long)s0.bytes_committed, (unsigned long long)s.bytes_committed);
	}
	/* 4 MiB more fits the limit in place, when the address space after
	 * the block is free; else ENOMEM as above */
	errno = 0;
	char *q = realloc(p, 44 * MIB);
	CHECK(q == p || (q == NULL && errno == ENOMEM), "realloc to 44 MiB under ulimit -v: %p (block %p)", (void *)q,
	      (void *)p);
	CHECK(outside(p) && kept(p, 40 * MIB));
	if (q)
		fill(p, 40 * MIB, 44 * MIB);
	CHECK(setrlimit(RLIMIT_AS, &old) == 0);
	size_t have = malloc_usable_size(p);
	q = realloc(p, 120 * MIB);
	CHECK(q && outside(q) && kept(q, have), "grown once the limit is gone");
	if (q)
		p = q;
	free(p);
	_nd_page_info_t in = info(1);
	CHECK(in.out_runs == 0 && in.used_pages + (40 * MIB >> ND_PAGE_SHIFT) == in0.used_pages,
	      "all given back: used %llu, %llu with the block", (unsigned long long)in.used_pages,
	      (unsigned long long)in0.used_pages);
}

int main(void)
{
	split_node1(pins, 1024, &npins);
	grow_bounded();
	grow_under_limit();
	for (int k = 0; k < npins; k++)
		CHECK_EQ(_nd_page_free(pins[k]), 0);
	return CHECK_DONE();
}
