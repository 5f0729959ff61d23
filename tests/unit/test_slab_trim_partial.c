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
#include "trim_fixture.h"

enum { N = 16384, SZ = 256, KEEP = 64 };
static unsigned char *o[N];

static uintptr_t seen[N];

int main(void)
{
	trim_fill(o, N, SZ, KEEP);
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
	trim_free_pages(o, N, SZ, KEEP, seen, &n, &res);
	printf("before malloc_trim: %d of %d free pages resident\n", res, n);
	CHECK(n >= (int)(N * SZ / ND_PAGE_SIZE / 2), "only %d pages without a live object", n);
	CHECK(res == n, "%d of %d free pages resident before malloc_trim", res, n);
	malloc_trim(0);
	trim_free_pages(o, N, SZ, KEEP, seen, &n, &res);
	printf("after malloc_trim: %d of %d free pages resident\n", res, n);
	CHECK(res == 0, "%d of %d free pages inside partial slabs resident after malloc_trim", res, n);
	int bad = trim_live_changed(o, N, SZ, KEEP);
	CHECK(bad == 0, "%d live objects changed", bad);
	/* the freed objects come back, usable */
	trim_refill_free(o, N, SZ, KEEP);
	return CHECK_DONE();
}
