// SPDX-License-Identifier: MIT
/*
 * Every size boundary (audit17): each small class's size and one byte
 * more, page multiples, ND_SLAB_MAX and one more, the huge page size and
 * its neighbours, two huge pages and a page. With two emulated nodes
 * (NODALLOC_TOPOLOGY's grammar, nd_topology_emulate):
 *  - realloc from each boundary to its neighbours (down one, up one and
 *    two), to the smallest and to the largest, of blocks from
 *    nd_malloc_onnode(1), nd_malloc_policy(bind:1) and malloc under the
 *    thread policies bind:1 and interleave:0-1: the bytes kept, the
 *    usable size at least the request, the block (first and last byte) on
 *    node 1 but under interleave (either node);
 *  - aligned_alloc, posix_memalign, memalign, nd_aligned_alloc_onnode(1)
 *    and nd_aligned_alloc_policy(bind:1) at each boundary and every
 *    alignment from 8 B to 8 KiB (and 2 MiB at the large ones): aligned,
 *    usable size at least the request, on node 1 where asked, and the
 *    live blocks of one size never overlap (each stamped, checked after).
 * A suspicion cleared: passes on main at 5ed9430.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "nodalloc.h"

static size_t sz[256];
static int nsz;

static void add(size_t s)
{
	for (int i = 0; i < nsz; i++)
		if (sz[i] == s)
			return;
	sz[nsz++] = s;
}

static int cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

static unsigned char pat(size_t i, size_t s) { return (unsigned char)(i * 7 + s * 13 + 1); }

/* stamps (full up to 64 KiB, sampled above, and the last byte) */
static void stamp(unsigned char *p, size_t n, size_t s)
{
	size_t step = n <= 65536 ? 1 : 4093;
	for (size_t i = 0; i < n; i += step)
		p[i] = pat(i, s);
	if (n)
		p[n - 1] = pat(n - 1, s);
}

/* the first keep bytes of a block stamped with n bytes */
static bool stamped(const unsigned char *p, size_t n, size_t keep, size_t s)
{
	size_t step = n <= 65536 ? 1 : 4093;
	for (size_t i = 0; i < keep; i += step)
		if (p[i] != pat(i, s))
			return false;
	return keep < n || !n || p[n - 1] == pat(n - 1, s);
}

static nd_policy_t bind1, il01;

enum { M_ONNODE, M_POLICY, M_THREAD_BIND, M_THREAD_IL, M__N };
static const char *mode_name[] = { "nd_malloc_onnode(1)", "nd_malloc_policy(bind:1)", "malloc under bind:1",
				   "malloc under interleave:0-1" };

static void *make(int m, size_t n)
{
	switch (m) {
	case M_ONNODE: return nd_malloc_onnode(n, 1);
	case M_POLICY: return nd_malloc_policy(n, &bind1);
	default: return malloc(n);
	}
}

static bool on_node1(int m, const unsigned char *p, size_t n)
{
	if (m == M_THREAD_IL) {
		int a = nd_node_of(p), b = nd_node_of(p + n - 1);
		return (a == 0 || a == 1) && (b == 0 || b == 1);
	}
	return nd_node_of(p) == 1 && nd_node_of(p + n - 1) == 1;
}

static void realloc_pair(int m, size_t from, size_t to)
{
	unsigned char *b = make(m, from);
	CHECK(b != NULL, "%s: %zu B failed", mode_name[m], from);
	if (!b)
		return;
	stamp(b, from, from);
	unsigned char *r = realloc(b, to);
	CHECK(r != NULL, "%s: realloc %zu -> %zu failed", mode_name[m], from, to);
	if (!r)
		return;
	size_t keep = from < to ? from : to;
	CHECK(stamped(r, from, keep, from), "%s: realloc %zu -> %zu lost bytes", mode_name[m], from, to);
	CHECK(malloc_usable_size(r) >= to, "%s: realloc %zu -> %zu: usable %zu", mode_name[m], from, to,
	      malloc_usable_size(r));
	CHECK(on_node1(m, r, to), "%s: realloc %zu -> %zu: nodes %d..%d", mode_name[m], from, to, nd_node_of(r),
	      nd_node_of(r + to - 1));
	memset(r, 0x5a, to); /* the whole block is ours */
	free(r);
}

#define LIVE 8
static void aligned_at(size_t n, size_t a)
{
	unsigned char *p[5][LIVE] = { { 0 } };
	static const char *name[] = { "aligned_alloc", "posix_memalign", "memalign", "nd_aligned_alloc_onnode(1)",
				      "nd_aligned_alloc_policy(bind:1)" };
	int live = n <= 65536 ? LIVE : 2;
	for (int k = 0; k < 5; k++)
		for (int j = 0; j < live; j++) {
			void *q = NULL;
			switch (k) {
			case 0: q = aligned_alloc(a, n); break;
			case 1: if (posix_memalign(&q, a, n) != 0) q = NULL; break;
			case 2: q = memalign(a, n); break;
			case 3: q = nd_aligned_alloc_onnode(a, n, 1); break;
			default: q = nd_aligned_alloc_policy(a, n, &bind1); break;
			}
			CHECK(q && (uintptr_t)q % a == 0, "%s(%zu, %zu) = %p", name[k], a, n, q);
			if (!q)
				continue;
			CHECK(malloc_usable_size(q) >= n, "%s(%zu, %zu): usable %zu", name[k], a, n, malloc_usable_size(q));
			if (k >= 3)
				CHECK(nd_node_of(q) == 1 && nd_node_of((char *)q + n - 1) == 1, "%s(%zu, %zu) on node %d",
				      name[k], a, n, nd_node_of(q));
			p[k][j] = q;
			stamp(q, n, (size_t)(k * LIVE + j));
		}
	for (int k = 0; k < 5; k++)
		for (int j = 0; j < live; j++)
			if (p[k][j]) {
				CHECK(stamped(p[k][j], n, n, (size_t)(k * LIVE + j)), "%s(%zu, %zu) #%d overwritten", name[k], a,
				      n, j);
				free(p[k][j]);
			}
}

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=768M; 1: mem=768M", err, sizeof err) == 0, "emulate: %s", err);
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "bind:1: %s", err);
	CHECK(nd_policy_parse("interleave:0-1", &il01, err, sizeof err) == 0, "interleave: %s", err);
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
		add(_nd_slab_class_size(c));
		add(_nd_slab_class_size(c) + 1);
	}
	for (size_t k = 1; k <= 9; k++)
		add(k * 4096), add(k * 4096 + 1);
	add(ND_SLAB_MAX), add(ND_SLAB_MAX + 1), add(ND_SLAB_MAX + 4096);
	add(ND_HUGE_SIZE - 4096), add(ND_HUGE_SIZE - 1), add(ND_HUGE_SIZE), add(ND_HUGE_SIZE + 1);
	add(2 * ND_HUGE_SIZE + 4096);
	qsort(sz, (size_t)nsz, sizeof sz[0], cmp);
	CHECK(nsz > 40 && sz[nsz - 1] > 2 * ND_HUGE_SIZE, "%d sizes", nsz);

	for (int m = 0; m < M__N; m++) {
		if (m == M_THREAD_BIND)
			CHECK(nd_set_policy(&bind1) == 0, "nd_set_policy(bind:1)");
		if (m == M_THREAD_IL)
			CHECK(nd_set_policy(&il01) == 0, "nd_set_policy(interleave:0-1)");
		for (int i = 0; i < nsz; i++) {
			int to[] = { i - 1, i + 1, i + 2, 0, nsz - 1 };
			for (unsigned t = 0; t < sizeof to / sizeof to[0]; t++)
				if (to[t] >= 0 && to[t] < nsz)
					realloc_pair(m, sz[i], sz[to[t]]);
		}
	}
	CHECK(nd_set_policy(NULL) == 0, "nd_set_policy(NULL)");

	for (int i = 0; i < nsz; i++) {
		for (size_t a = 8; a <= 8192; a <<= 1)
			aligned_at(sz[i], a);
		if (sz[i] >= ND_SLAB_MAX)
			aligned_at(sz[i], ND_HUGE_SIZE);
	}
	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
	return CHECK_DONE();
}
