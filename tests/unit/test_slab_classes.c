// SPDX-License-Identifier: MIT
/* Size classes (issue 11, bench wl_footprint; docs/malloc.md "Size
 * classes"): from 256 to 1024 bytes a request loses at most 1/8 of itself
 * to its class (8 classes per doubling there; with 4, 257 bytes took 320),
 * and a slab of 1-2 KiB objects keeps at most 1/32 of its run unused at
 * the end of its last page, which its objects keep resident (1280 B in a
 * 16 KiB slab lost 1/16). */
#include <malloc.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static void rounding(void)
{
	for (size_t n = 257; n <= 1024; n++) {
		void *p = malloc(n);
		size_t u = malloc_usable_size(p);
		CHECK(u >= n && u - n <= n / 8, "malloc(%zu): %zu usable", n, u);
		CHECK(u % 16 == 0, "malloc(%zu): class %zu a multiple of 16", n, u);
		free(p);
	}
}

static void tails(void)
{
	void *p[ND_SLAB_CLASSES] = { 0 };
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		if (_nd_slab_class_size(c) > 1024 && _nd_slab_class_size(c) <= 2048)
			p[c] = malloc(_nd_slab_class_size(c));
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK_EQ(_nd_slab_class_stats(st, ND_SLAB_CLASSES), ND_SLAB_CLASSES);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		if (!p[c])
			continue;
		CHECK(st[c].slabs >= 1, "class %u: a slab", st[c].size);
		uint64_t run = st[c].slab_bytes / st[c].slabs, cap = st[c].capacity / st[c].slabs;
		uint64_t used = cap * st[c].size, tail = ND_ALIGN_UP(used, ND_PAGE_SIZE) - used;
		CHECK(cap == run / st[c].size && tail * 32 <= run, "class %u: %llu objects in %llu bytes, tail %llu",
		      st[c].size, (unsigned long long)cap, (unsigned long long)run, (unsigned long long)tail);
		free(p[c]);
	}
}

int main(void)
{
	free(malloc(1)); /* the init */
	rounding();
	tails();
	return CHECK_DONE();
}
