// SPDX-License-Identifier: MIT
/* Slab geometry (docs/malloc.md, size classes): a slab is a power-of-two
 * page run of at least 16 KiB and 8 objects (8192 and 16384: one fewer, a
 * tail to colour: slab.c, colour_of; their uncoloured twins, which
 * aligned_alloc takes, 8); classes up to 1 KiB get 32
 * objects (at most 32 KiB), so that a free's read of its slab header
 * touches few headers (wl_larson: 16 KiB slabs of 640..1024 B put 8 MiB
 * live under ~600 headers); the multiples of 64 up to 256 B (where
 * 64-aligned requests gather) 256 (at most 64 KiB). Read per class from
 * _nd_slab_class_stats after one allocation of each class. A borrowed
 * list keeps up to 64 objects and 32 KiB of a class up to 1 KiB (128 KiB
 * above), at least 2: wl_larson's lists of 576..1024 B (16-28 objects at
 * 16 KiB) went to the node's exchange every 8-14 frees. */
#include <stdlib.h>

#include "check.h"
#include "internal.h"

int main(void)
{
	void *obj[ND_SLAB_CLASSES];
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		obj[c] = c < ND_SLAB_SIZED ? malloc(_nd_slab_class_size(c)) : aligned_alloc(4096, _nd_slab_class_size(c));
		CHECK(obj[c] != NULL, "class %u", c);
	}
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK_EQ(_nd_slab_class_stats(st, ND_SLAB_CLASSES), ND_SLAB_CLASSES);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		uint64_t size = st[c].size, n = st[c].slabs;
		CHECK(n >= 1, "class %llu has a slab", (unsigned long long)size);
		if (!n)
			continue;
		uint64_t bytes = st[c].slab_bytes / n, cap = st[c].capacity / n;
		CHECK(bytes >= 16384 && (bytes & (bytes - 1)) == 0, "class %llu: slab of %llu bytes",
		      (unsigned long long)size, (unsigned long long)bytes);
		bool pow2col = size >= 8192 && size <= 16384 && (size & (size - 1)) == 0 && c < ND_SLAB_SIZED;
		CHECK_EQ(cap, bytes / size - pow2col);
		CHECK(cap >= 8u - pow2col, "class %llu: %llu objects", (unsigned long long)size, (unsigned long long)cap);
		uint64_t nb = (size <= 1024 ? 32768 : 524288) / size;
		CHECK_EQ(_nd_slab_bw_cap(c), nb > 64 ? 64 : nb < 2 ? 2 : nb);
		if (size <= 1024) {
			/* 32 objects or more (256 for the multiples of 64 up to
			 * 256 B), and no more pages than that needs */
			uint64_t objs = size % 64 == 0 && size <= 256 ? 256 : 32;
			CHECK(cap >= objs && bytes <= (objs == 256 ? 65536 : 32768), "class %llu: %llu objects in %llu bytes",
			      (unsigned long long)size, (unsigned long long)cap, (unsigned long long)bytes);
			CHECK(bytes == 16384 || (bytes / 2) / size < objs, "class %llu: %llu bytes, half would do",
			      (unsigned long long)size, (unsigned long long)bytes);
		}
	}
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		free(obj[c]);
	return CHECK_DONE();
}
