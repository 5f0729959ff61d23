// SPDX-License-Identifier: MIT
/* The tsan tests' stamped churn (tsan_spread_cache, tsan_tcache_steal):
 * rounds of a free and a malloc in one of live (<= STAMP_LIVE) slots, each
 * block stamped with id + 1 at both ends and checked before its free, the
 * rest freed at the end. get(rng, &len) makes a block (its length in len)
 * from a random number. Returns the blocks lost or changed: a block handed
 * to two owners shows another stamp. */
#ifndef ND_STAMP_FIXTURE_H
#define ND_STAMP_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#define STAMP_LIVE 16

static inline long stamp_churn(uintptr_t id, int rounds, int live, uint64_t rng, void *(*get)(uint64_t rng, size_t *len))
{
	unsigned char *blk[STAMP_LIVE] = { 0 };
	size_t len[STAMP_LIVE] = { 0 };
	unsigned char s = (unsigned char)(id + 1);
	long bad = 0;
	for (int r = 0; r < rounds; r++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		int k = (int)(rng % (uint64_t)live);
		if (blk[k]) {
			bad += blk[k][0] != s || blk[k][len[k] - 1] != s;
			nd_free(blk[k]);
		}
		blk[k] = get(rng, &len[k]);
		if (!blk[k]) {
			bad++;
			continue;
		}
		blk[k][0] = blk[k][len[k] - 1] = s;
	}
	for (int k = 0; k < live; k++)
		if (blk[k]) {
			bad += blk[k][0] != s;
			nd_free(blk[k]);
		}
	return bad;
}

#endif
