// SPDX-License-Identifier: MIT
/*
 * realloc chains through every size regime (task audit26): slab classes
 * (the 1152 and 4608 classes and their neighbours), one page, one
 * interleave granule, spread runs (the spread cache's rounded lengths,
 * prefixes and joins), big runs of 2 MiB pages, up to 40 MiB and back
 * down, under interleave and weighted policies of several granules and
 * under the default policy; sizes near SIZE_MAX refused with ENOMEM and
 * the block left alone. At each step: the contents kept (a byte in 512), the usable size
 * at least the request, every page of a page run on a node of the
 * policy's set, errno left alone by a success (and by free). After: no large run in use, the caches flushed to none,
 * the nodes' in-use bytes back where they were, the page level's
 * invariants.
 *
 * Emulated machine: two 1 GiB nodes, a CPU each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "stats_fixture.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static const size_t sizes[] = {
	1, 24, 100, 1000, 1024, 1025, 1100, 1152, 1153, 1280, 4095, 4096, 4097, 4368, 4608, 4609, 5120,
	8191, 8193, 16 * KiB, 32 * KiB - 1, 32 * KiB, 32 * KiB + 1, 48 * KiB, 64 * KiB, 64 * KiB + 1, 100 * KiB,
	129 * KiB, 640 * KiB, MiB - 1, MiB + 3, 2 * MiB, 2 * MiB + 4097, 5 * MiB, 16 * MiB, 40 * MiB,
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static unsigned char pat(size_t o, unsigned seed)
{
	return (unsigned char)((o * 131u) ^ (o >> 12) ^ seed);
}

static void fill(unsigned char *p, size_t from, size_t to, unsigned seed)
{
	for (size_t o = ND_ALIGN_UP(from, 512); o < to; o += 512)
		p[o] = pat(o, seed);
}

static bool kept(const unsigned char *p, size_t n, unsigned seed, size_t *bad_at)
{
	for (size_t o = 0; o < n; o += 512)
		if (p[o] != pat(o, seed)) {
			*bad_at = o;
			return false;
		}
	return true;
}

static bool nodes_in(const char *p, size_t n, const nd_policy_t *pol)
{
	for (size_t o = 0; o < n; o += ND_PAGE_SIZE) {
		int node = nd_node_of(p + o);
		if (node < 0 || (pol->mode != ND_POLICY_DEFAULT && !nd_nodemask_isset(&pol->nodes, node)))
			return false;
	}
	return true;
}

/* One step: p (n bytes, stamped up to n) to m bytes. */
static unsigned char *step(unsigned char *p, size_t n, size_t m, unsigned seed, const char *spec)
{
	errno = EBADMSG; /* a success leaves errno alone */
	unsigned char *q = realloc(p, m);
	CHECK(q != NULL, "%s: realloc %zu -> %zu", spec, n, m);
	if (!q)
		return p;
	CHECK(errno == EBADMSG, "%s: realloc %zu -> %zu set errno %d", spec, n, m, errno);
	size_t at = 0, keep = n < m ? n : m;
	CHECK(kept(q, keep, seed, &at), "%s: %zu -> %zu: byte %zu changed", spec, n, m, at);
	CHECK(malloc_usable_size(q) >= m, "%s: %zu -> %zu: usable %zu", spec, n, m, malloc_usable_size(q));
	const _nd_pagedesc_t *d = _nd_page_desc(q);
	if (d && d->use == ND_USE_LARGE) {
		nd_policy_t pol = { .mode = ND_POLICY_DEFAULT };
		CHECK(nd_get_policy(&pol) == 0);
		CHECK(nodes_in((char *)q, m, &pol), "%s: %zu -> %zu: a page off the policy's nodes", spec, n, m);
	}
	fill(q, keep, m, seed);
	return q;
}

static void chain(const char *spec)
{
	nd_policy_t pol = { .mode = ND_POLICY_DEFAULT };
	char err[256] = "";
	if (spec)
		CHECK(nd_policy_parse(spec, &pol, err, sizeof err) == 0, "%s: %s", spec, err);
	CHECK(nd_set_policy(&pol) == 0);
	const char *name = spec ? spec : "default";
	unsigned seed = (unsigned)(uintptr_t)name;
	unsigned char *p = malloc(sizes[0]);
	CHECK(p != NULL);
	fill(p, 0, sizes[0], seed);
	size_t n = sizes[0];
	/* up, down, then up by every other size with a spread block freed
	 * beside (into the spread cache) at each step */
	for (size_t i = 1; i < NSIZES; i++) {
		p = step(p, n, sizes[i], seed, name);
		n = sizes[i];
	}
	for (size_t i = NSIZES - 1; i-- > 0;) {
		p = step(p, n, sizes[i], seed, name);
		n = sizes[i];
	}
	n = sizes[0];
	for (size_t i = 1; i < NSIZES; i += 2) {
		void *side = malloc(sizes[i]);
		CHECK(side != NULL);
		p = step(p, n, sizes[i], seed, name);
		n = sizes[i];
		errno = EBADMSG;
		free(side);
		CHECK(errno == EBADMSG, "%s: free of %zu set errno %d", name, sizes[i], errno);
	}
	/* near SIZE_MAX: ENOMEM, the block left alone */
	static const size_t off[] = { 0, 1, 4095, 4096, 4097, 8192, 1 << 20 };
	for (size_t k = 0; k < sizeof off / sizeof off[0]; k++) {
		errno = 0;
		void *q = realloc(p, SIZE_MAX - off[k]);
		CHECK(q == NULL && errno == ENOMEM, "%s: realloc to SIZE_MAX - %zu: %p errno %d", name, off[k], q, errno);
		errno = 0;
		q = malloc(SIZE_MAX - off[k]);
		CHECK(q == NULL && errno == ENOMEM, "%s: malloc(SIZE_MAX - %zu): %p errno %d", name, off[k], q, errno);
	}
	size_t at = 0;
	CHECK(kept(p, n, seed, &at), "%s: byte %zu changed by the refused reallocs", name, at);
	free(p);
	nd_policy_t def = { .mode = ND_POLICY_DEFAULT };
	CHECK(nd_set_policy(&def) == 0);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	free(malloc(64));
	malloc_trim(0);
	uint64_t u0 = node_stats(0)->bytes_in_use, u1 = node_stats(1)->bytes_in_use;
	static const char *const specs[] = { NULL, "interleave:0,1", "interleave:0,1@64K", "interleave:0,1@2M",
					     "weighted:0=1,1=2@16K", "weighted:0=3,1=1", "interleave:1" };
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
		chain(specs[s]);
	malloc_trim(0);
	_nd_heap_trim_self(true); /* the current slabs too */
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	CHECK(in_use == 0 && cached == 0 && runs == 0, "large: %llu in use, %llu cached", (unsigned long long)in_use,
	      (unsigned long long)cached);
	/* slab pages of the thread's heaps may stay (current slabs): within 1 MiB */
	int64_t d0 = (int64_t)node_stats(0)->bytes_in_use - (int64_t)u0, d1 = (int64_t)node_stats(1)->bytes_in_use - (int64_t)u1;
	CHECK(d0 < (int64_t)MiB && d1 < (int64_t)MiB && d0 > -(int64_t)MiB && d1 > -(int64_t)MiB,
	      "in use: node 0 %+lld, node 1 %+lld bytes", (long long)d0, (long long)d1);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
