// SPDX-License-Identifier: MIT
/* The bound churn's generator (test_large_bind_bigslot, test_large_outrun):
 * xorshift64 from churn_rs (set it first), and block sizes of 1 B - 64 MiB
 * in four ranges. */
#ifndef ND_CHURN_FIXTURE_H
#define ND_CHURN_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

static uint64_t churn_rs = 88172645463325252ull;

static inline uint64_t rnd(void)
{
	churn_rs ^= churn_rs << 13;
	churn_rs ^= churn_rs >> 7;
	churn_rs ^= churn_rs << 17;
	return churn_rs;
}

/* 1-256 B, 257 B - 16 KiB, 16 KiB - 1 MiB, 1-64 MiB */
static inline size_t pick(void)
{
	switch (rnd() % 8) {
	case 0: case 1: case 2: case 3: return 1 + rnd() % 256;
	case 4: case 5: return 257 + rnd() % (16u << 10);
	case 6: return (16u << 10) + rnd() % (1u << 20);
	default: return (1u << 20) + rnd() % (63u << 20);
	}
}

#endif
