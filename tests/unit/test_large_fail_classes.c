// SPDX-License-Identifier: MIT
/*
 * After a large allocation that failed, every size class serves from a
 * live slab (audit20). The failure trims the calling thread's heaps whole
 * (task bigslot: _nd_heap_trim_self(true)), current slabs included, while
 * the thread goes on using them: dir[]/cdir[] (malloc's fast path) and
 * the heaps' cur[] (the placement calls') must follow, or the next
 * malloc pops a slab whose pages went back to the page level.
 * On an emulated 64 MiB node 1, under bind:1 (a policy heap current) and
 * through nd_malloc_onnode (node heaps of 1 and 0): per class, objects
 * made and all freed (its current slab empty: released) or one kept
 * live (stamped); malloc(256 MiB) fails with ENOMEM; runs of 40 KiB and
 * one of 24 MiB, filled, take freed pages; then every size up to the
 * largest class through each path: each object the start of an object of
 * a live slab run on the right node, none inside a filled run, the live
 * ones intact, the slots consistent. First, a run larger than any slot
 * fails without that trim: the emptied current slab of a class stays.
 * Run as is and with NODALLOC_CHECK=1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

#define NFILL 64
#define FILL_SMALL (40u << 10)
#define FILL_BIG (24u << 20)

static char err[256];

enum { P_MALLOC, P_ON1, P_ON0, NPATH };
static const int path_node[NPATH] = { 1, 1, 0 };
static void *live[NPATH][ND_SLAB_SIZED];

static void *alloc(int path, size_t n)
{
	return path == P_MALLOC ? malloc(n) : nd_malloc_onnode(n, path_node[path]);
}

static char *fill[NFILL + 1];

static bool in_fill(const char *p, size_t n)
{
	for (int k = 0; k <= NFILL; k++) {
		size_t len = k < NFILL ? FILL_SMALL : FILL_BIG;
		if (fill[k] && p < fill[k] + len && p + n > fill[k])
			return true;
	}
	return false;
}

/* p from path for n bytes: the start of an object of a live slab run on
 * the path's node, outside every filled run. */
static void check_obj(int path, size_t n, char *p)
{
	CHECK(p != NULL, "path %d, %zu B after the failure: errno %d", path, n, errno);
	if (!p)
		return;
	/* every page of a slab run names its header; the run's head is a run */
	_nd_pagedesc_t *d = _nd_page_desc(p);
	const _nd_slab_t *s = d && d->use == ND_USE_SLAB ? (const _nd_slab_t *)d->user : NULL;
	const char *run = s ? _nd_slab_run(s) : NULL;
	const _nd_pagedesc_t *h = run ? _nd_page_desc(run) : NULL;
	bool ok = h && h->state == ND_PG_RUN && h->use == ND_USE_SLAB && h->user == d->user && p >= run &&
		  p + n <= run + ((size_t)h->npages << ND_PAGE_SHIFT);
	CHECK(ok, "path %d, %zu B at %p: not in a live slab run", path, n, (void *)p);
	if (!ok)
		return;
	const char *why = _nd_slab_invalid(p, d);
	CHECK(why == NULL, "path %d, %zu B at %p: %s", path, n, (void *)p, why);
	CHECK(_nd_page_node_of(p) == path_node[path], "path %d, %zu B on node %d", path, n, _nd_page_node_of(p));
	CHECK(!in_fill(p, n), "path %d, %zu B at %p: inside a run taken after the failure", path, n, (void *)p);
}

static uint64_t class_slabs(unsigned c)
{
	static _nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	return _nd_slab_class_stats(st, ND_SLAB_CLASSES) > (int)c ? st[c].slabs : UINT64_MAX;
}

/* A run no slot can hold fails without the trim: nothing freed could
 * serve it (a probe of malloc(1 TiB) walked every slab list: 0.7 ms a
 * failure with 1M small objects live). The emptied current slab stays. */
static void huge_keeps_slabs(void)
{
	unsigned c = _nd_slab_class_of(1000);
	free(malloc(1000));
	uint64_t before = class_slabs(c);
	CHECK(before >= 1 && before != UINT64_MAX, "class %u: %llu slabs", c, (unsigned long long)before);
	errno = 0;
	void *p = malloc((size_t)1 << 40);
	CHECK(p == NULL && errno == ENOMEM, "malloc(1 TiB): %p errno %d", p, errno);
	CHECK_EQ(class_slabs(c), before);
}

static int run(void)
{
	CHECK(nd_topology_emulate("0: cpus=0 mem=256M; 1: cpus=1 mem=64M", err, sizeof err) == 0, "%s", err);
	huge_keeps_slabs();
	nd_policy_t bind1;
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&bind1) == 0);

	/* each class's current slab: emptied (odd classes) or one live */
	for (int path = 0; path < NPATH; path++)
		for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
			size_t n = _nd_slab_class_size(c);
			void *o[3];
			for (int k = 0; k < 3; k++) {
				o[k] = alloc(path, n);
				CHECK(o[k] != NULL, "path %d class %u", path, c);
				if (o[k])
					memset(o[k], 0x11, n);
			}
			int keep = c % 2 ? -1 : 1;
			for (int k = 0; k < 3; k++)
				if (k != keep)
					free(o[k]);
			if (keep >= 0 && o[keep]) {
				live[path][c] = o[keep];
				memset(o[keep], (int)(0x40 + c), n);
			}
		}

	errno = 0;
	void *huge = malloc(256u << 20);
	CHECK(huge == NULL && errno == ENOMEM, "malloc(256 MiB) on the 64 MiB node: %p errno %d", huge, errno);
	free(huge);
	errno = 0;
	huge = nd_malloc_onnode(256u << 20, 1);
	CHECK(huge == NULL && errno == ENOMEM, "nd_malloc_onnode(256 MiB, 1): %p errno %d", huge, errno);
	free(huge);

	/* freed pages taken again, by runs the objects must stay out of */
	for (int k = 0; k <= NFILL; k++) {
		size_t len = k < NFILL ? FILL_SMALL : FILL_BIG;
		fill[k] = nd_malloc_onnode(len, 1);
		CHECK(fill[k] != NULL, "filler %d", k);
		if (fill[k])
			memset(fill[k], 0x5A, len);
	}

	static void *got[NPATH][ND_SLAB_MAX / 16 + 1];
	for (int path = 0; path < NPATH; path++)
		for (size_t n = 16, i = 0; n <= ND_SLAB_MAX; n += n < 1024 ? 16 : n / 8, i++) {
			char *p = alloc(path, n);
			check_obj(path, n, p);
			if (p)
				memset(p, 0xC3, n);
			got[path][i] = p;
		}

	for (int k = 0; k <= NFILL; k++) {
		size_t len = k < NFILL ? FILL_SMALL : FILL_BIG;
		size_t bad = 0;
		for (size_t j = 0; fill[k] && j < len; j++)
			bad += fill[k][j] != 0x5A;
		CHECK(bad == 0, "filler %d: %zu bytes overwritten", k, bad);
	}
	for (int path = 0; path < NPATH; path++)
		for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
			const unsigned char *o = live[path][c];
			if (!o)
				continue;
			size_t n = _nd_slab_class_size(c), bad = 0;
			for (size_t j = 0; j < n; j++)
				bad += o[j] != 0x40 + c;
			CHECK(bad == 0, "path %d class %u: the live object lost %zu bytes", path, c, bad);
		}
	for (int node = 0; node < 2; node++) {
		err[0] = '\0';
		CHECK(_nd_page_check(node, err, sizeof err) == 0, "node %d: %s", node, err);
	}
	for (int path = 0; path < NPATH; path++) {
		for (size_t i = 0; i < sizeof got[0] / sizeof got[0][0]; i++)
			free(got[path][i]);
		for (unsigned c = 0; c < ND_SLAB_SIZED; c++)
			free(live[path][c]);
	}
	for (int k = 0; k <= NFILL; k++)
		free(fill[k]);
	return CHECK_DONE();
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return run();
	int r = run();
	char out[4096];
	int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "check", NULL }, "NODALLOC_CHECK", "1", true, out,
			   sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "under NODALLOC_CHECK=1: status 0x%x\n%s", st, out);
	return r ? r : CHECK_DONE();
}
