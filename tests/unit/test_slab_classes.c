// SPDX-License-Identifier: MIT
/* Size classes (issue 11, bench wl_footprint; docs/malloc.md "Size
 * classes"): from 256 to 1024 bytes a request loses at most 1/8 of itself
 * to its class (8 classes per doubling there; with 4, 257 bytes took 320),
 * and a slab of 1-2 KiB objects keeps at most 1/32 of its run unused at
 * the end of its last page, which its objects keep resident (1280 B in a
 * 16 KiB slab lost 1/16). A power of two of 1 or 4 KiB plus a header
 * of up to 1/8 takes the class 9/8 of it (1152, 4608), not the next
 * class of 4 per doubling (1280, 5120): sqlite3's in-memory journal
 * chunks (1032 B) and page cache pages (4368 B) held 1.24x and 1.17x
 * their bytes, its peak RSS 1.25x glibc's (docs/benchmarks.md). */
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

/* 1025..1152 and 4097..4608 B lose at most 1/8 of themselves; NOBJ
 * objects of sqlite's sizes hold at most 1/8 more than their bytes in
 * their slabs, plus a slab's tail (1/32). */
enum { NOBJ = 1400 };
static void *held[NOBJ];

/* the slab bytes of the class of size n */
static uint64_t slab_bytes(size_t n)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK_EQ(_nd_slab_class_stats(st, ND_SLAB_CLASSES), ND_SLAB_CLASSES);
	return st[_nd_slab_class_of(n)].slab_bytes;
}

static void headers(void)
{
	for (size_t k = 1024; k <= 4096; k *= 4)
		for (size_t n = k + 1; n <= k + k / 8; n++) {
			void *p = malloc(n);
			size_t u = malloc_usable_size(p);
			CHECK(u >= n && u - n <= n / 8, "malloc(%zu): %zu usable", n, u);
			free(p);
		}
	static const size_t sq[] = { 1032, 4368 };
	for (unsigned i = 0; i < 2; i++) {
		uint64_t b0 = slab_bytes(sq[i]);
		for (int j = 0; j < NOBJ; j++)
			CHECK((held[j] = malloc(sq[i])) != NULL);
		uint64_t b = slab_bytes(sq[i]) - b0, want = (uint64_t)NOBJ * sq[i];
		printf("%d objects of %zu B: %llu slab bytes (%.3fx)\n", NOBJ, sq[i], (unsigned long long)b,
		       (double)b / (double)want);
		CHECK(b * 32 * 8 <= want * 33 * 9, "%d objects of %zu B held %llu slab bytes", NOBJ, sq[i],
		      (unsigned long long)b);
		for (int j = 0; j < NOBJ; j++)
			free(held[j]);
	}
}

int main(void)
{
	free(malloc(1)); /* the init */
	rounding();
	tails();
	headers();
	return CHECK_DONE();
}
