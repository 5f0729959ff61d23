// SPDX-License-Identifier: MIT
/* malloc_trim gives back the free pages inside the calling thread's
 * partial slabs (audit14). It gave back kept empty slabs, the large-run
 * caches and the page level's dirty pages only: a slab with one object
 * out kept all its pages until a heap pass (slab_purge.c, run when the
 * heap grows), and a pass leaves the classes spans took slots of since
 * the last one (h->spbusy, fptime4), so a heap whose spans kept a class
 * busy between every two passes never gave that class's pages back.
 * 256-byte objects, all but one of every 64 freed (the first of each
 * run of 64, wherever the slabs start): the pages holding no live object
 * are resident before, not after malloc_trim (the class marked busy, as
 * spans would leave it). The live objects keep their bytes. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

enum { N = 16384, SZ = 256, KEEP = 64 };
static unsigned char *o[N];

static int live_page(uintptr_t pg)
{
	for (int i = 0; i < N; i += KEEP) {
		uintptr_t a = (uintptr_t)o[i] & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		uintptr_t b = ((uintptr_t)o[i] + SZ - 1) & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		if (pg == a || pg == b)
			return 1;
	}
	return 0;
}

/* Of the pages the objects cover that hold no live object: how many,
 * and how many resident. */
static void free_pages(int *n, int *res)
{
	static uintptr_t seen[N];
	int ns = 0;
	*n = *res = 0;
	for (int i = 0; i < N; i++) {
		uintptr_t pg = (uintptr_t)o[i] & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		int dup = 0;
		for (int j = ns - 1; j >= 0 && j >= ns - 64 && !dup; j--)
			dup = seen[j] == pg;
		if (dup || live_page(pg))
			continue;
		seen[ns++] = pg;
		unsigned char v = 0;
		CHECK(mincore((void *)pg, ND_PAGE_SIZE, &v) == 0, "mincore");
		(*n)++;
		*res += v & 1;
	}
}

int main(void)
{
	for (int i = 0; i < N; i++) {
		o[i] = malloc(SZ);
		CHECK(o[i] != NULL);
		memset(o[i], (int)(i & 0x7f) + 1, SZ);
	}
	for (int i = 0; i < N; i++)
		if (i % KEEP) {
			free(o[i]);
		}
	/* spans took slots of this class since the last pass: a pass leaves
	 * it whole */
	_nd_pagedesc_t *d = _nd_page_desc(o[0]);
	_nd_slab_t *s = d && d->use == ND_USE_SLAB ? (_nd_slab_t *)d->user : NULL;
	CHECK(s != NULL && s->heap != NULL, "the slab of the first object");
	if (!s)
		return CHECK_DONE();
	int c = _nd_slab_class_for(SZ, 0);
	CHECK(c >= 0, "class of %d B", SZ);
	s->heap->spbusy |= (uint64_t)1 << c;

	int n, res;
	free_pages(&n, &res);
	printf("before malloc_trim: %d of %d free pages resident\n", res, n);
	CHECK(n >= (int)(N * SZ / ND_PAGE_SIZE / 2), "only %d pages without a live object", n);
	CHECK(res == n, "%d of %d free pages resident before malloc_trim", res, n);
	malloc_trim(0);
	free_pages(&n, &res);
	printf("after malloc_trim: %d of %d free pages resident\n", res, n);
	CHECK(res == 0, "%d of %d free pages inside partial slabs resident after malloc_trim", res, n);
	for (int i = 0; i < N; i += KEEP) {
		int ok = 1;
		for (int j = 0; j < SZ; j++)
			ok &= o[i][j] == (unsigned char)((i & 0x7f) + 1);
		CHECK(ok, "live object %d changed", i);
	}
	/* the freed objects come back, usable */
	for (int i = 0; i < N; i++)
		if (i % KEEP) {
			o[i] = malloc(SZ);
			CHECK(o[i] != NULL);
			memset(o[i], 0x5a, SZ);
		}
	for (int i = 0; i < N; i++)
		free(o[i]);
	return CHECK_DONE();
}
