// SPDX-License-Identifier: MIT
/*
 * Free's index check (nd_slab.h, _nd_slab_live_mul): since abce15c one
 * `test` of p * mul + chk (the multiply in an asm) with ~(0x7ff << 16),
 * where it was rotr(p * mul + chk, 16) < B. The two agree for every word
 * (rotr's bits 11-63 are x's bits 27-63 and 0-15); checked here on the
 * compiled code, asm included (gcc and clang builds), with every class's
 * real mul:
 *  - chk of synthetic slabs (starts from 2^16 to the top of user space,
 *    the real slab's, lim 0, 1, cap - 1, cap), every byte offset from a
 *    page below the slab to a page past its end: the new test and the
 *    rotation agree, and from the start on, the truth (an object start
 *    among the first lim). Below the start the check alone passes the
 *    B - lim objects there: the map names a slab only for its own units
 *    (slabs are whole 16 KiB units), so free never asks it of them;
 *  - the same offsets with high bits set (bits 47-63, non-canonical and
 *    kernel addresses), and the aliases 2^(48 + tz) away that the
 *    divisibility lets through: new and old agree;
 *  - random words for p and chk, and for x = p * mul + chk directly.
 */
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static bool old_live(uint64_t mul, uint64_t chk, uintptr_t p)
{
	return _nd_slab_rotr((uint64_t)p * mul + chk) < ND_SLAB_CHK_B;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	uint64_t x = rnd_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rnd_state = x;
}

int main(void)
{
	free(malloc(1)); /* init: classes and their mul */
	_nd_slab_hot_t hot = { 0 };
	const uintptr_t page = (uintptr_t)1 << ND_PAGE_SHIFT;
	uint64_t bad_truth = 0, bad_old = 0, n = 0;
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		size_t size = _nd_slab_class_size(c);
		void *obj = malloc(size);
		CHECK(obj != NULL);
		uint64_t mul;
		_nd_slab_t *real = (_nd_slab_t *)(void *)_nd_slab_of_mul(obj, &mul);
		CHECK((void *)real != (void *)_nd_slab_map.base, "class %zu: no slab", size);
		if ((void *)real == (void *)_nd_slab_map.base) {
			free(obj);
			continue;
		}
		CHECK(mul == real->mul, "class %zu", size);
		uint32_t cap = real->cap, tz = (uint32_t)__builtin_ctzll(size);
		uintptr_t bytes = (uintptr_t)cap * size;
		/* starts aligned as a slab's: to a page and to 2^tz (2^16 here) */
		const uintptr_t al = (uintptr_t)1 << 16;
		const uintptr_t starts[] = { al, (uintptr_t)real->start, ((uintptr_t)1 << 46) - 64 * al,
					     ((uintptr_t)1 << 47) - ND_ALIGN_UP(bytes + page, al) };
		const uint32_t lims[] = { 0, 1, cap - 1, cap };
		for (unsigned si = 0; si < sizeof starts / sizeof starts[0]; si++) {
			uintptr_t start = starts[si];
			for (unsigned li = 0; li < sizeof lims / sizeof lims[0]; li++) {
				uint32_t lim = lims[li];
				hot.chk = _nd_slab_chk((const char *)start, mul, lim);
				for (uintptr_t p = start - page; p < start + bytes + page; p++) {
					bool now = _nd_slab_live_mul(&hot, mul, (const void *)p);
					bool want = p >= start && (p - start) % size == 0 && (p - start) / size < lim;
					/* below start: see the top */
					bad_truth += p >= start && now != want;
					bad_old += now != old_live(mul, hot.chk, p);
					n++;
					/* high bits: new and old agree (bit 47 and up:
					 * no user address; 2^(48 + tz): an alias) */
					if (p % 16 == 0) {
						for (unsigned b = 47; b < 64; b++) {
							uintptr_t q = p | (uintptr_t)1 << b;
							bad_old += _nd_slab_live_mul(&hot, mul, (const void *)q) !=
								   old_live(mul, hot.chk, q);
						}
						if (48 + tz < 64) {
							uintptr_t q = p + ((uintptr_t)1 << (48 + tz));
							bool a = _nd_slab_live_mul(&hot, mul, (const void *)q);
							bad_old += a != old_live(mul, hot.chk, q);
							bad_truth += p >= start && a != want; /* as p */
						}
					}
				}
			}
		}
		/* random words */
		for (int i = 0; i < 200000; i++) {
			uintptr_t p = (uintptr_t)rnd();
			hot.chk = rnd();
			bad_old += _nd_slab_live_mul(&hot, mul, (const void *)p) != old_live(mul, hot.chk, p);
			/* x itself: p = 1 with mul 1 makes x = 1 + chk */
			uint64_t x = rnd() & (i & 1 ? ~0ull : 0xffffffffffff07ffull);
			hot.chk = x - 1;
			bad_old += _nd_slab_live_mul(&hot, 1, (const void *)1) != (_nd_slab_rotr(x) < ND_SLAB_CHK_B);
		}
		free(obj);
	}
	CHECK(n > 1000000, "%llu addresses", (unsigned long long)n);
	CHECK(bad_truth == 0, "%llu addresses misjudged", (unsigned long long)bad_truth);
	CHECK(bad_old == 0, "%llu addresses judged unlike the rotation", (unsigned long long)bad_old);
	return CHECK_DONE();
}
