// SPDX-License-Identifier: MIT
/* Large tables, the pure parts: the kernel's sizing rules against
 * hand-computed cases, the interleave granule choice, and the halving
 * retry loop under a fake capacity limit. Nothing is allocated. */
#include <errno.h>

#include "check.h"
#include "internal.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define TiB ((uint64_t)1 << 40)

static uint64_t sz(size_t bucket, uint64_t entries, unsigned scale, uint64_t low, uint64_t high, uint64_t mem)
{
	nd_table_desc_t d = { .name = "t", .bucket_size = bucket, .entries = entries, .scale = scale,
			      .low_limit = low, .high_limit = high };
	return _nd_table_size(&d, mem);
}

/* Fake allocator: succeeds when bytes <= cap; records what was tried. */
typedef struct fake {
	uint64_t cap;
	int tries;
	size_t tried[80];
} fake_t;
static char fake_mem;
static void *fake_try(size_t bytes, void *ctx)
{
	fake_t *f = ctx;
	if (f->tries < 80)
		f->tried[f->tries] = bytes;
	f->tries++;
	return bytes <= f->cap ? &fake_mem : NULL;
}

static void sizing(void)
{
	/* Dentry-like (8-byte buckets, one per 8 KiB): 4 GiB = 2^20 pages,
	 * >> (13 - 12) = 2^19 entries; the 1/16 cap (2^25) does not bite. */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 4 * GiB), 524288);
	/* Memory is rounded up to a whole MiB first: 2 GiB + 4 KiB is
	 * 524289 pages -> 524544 -> >> 1 = 262272 -> power of two 524288
	 * (without the MiB rounding it would be 262144). */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 2 * GiB), 262144);
	CHECK_EQ(sz(8, 0, 13, 0, 0, 2 * GiB + 4 * KiB), 524288);
	CHECK_EQ(sz(8, 0, 13, 0, 0, 4 * GiB - 4 * KiB), 524288);
	/* Inode-like, scale 14, 3 GiB: 786432 >> 2 = 196608 -> 262144. */
	CHECK_EQ(sz(8, 0, 14, 0, 0, 3 * GiB), 262144);
	/* Bucket not a power of two: 1 GiB, scale 14 -> 2^16. */
	CHECK_EQ(sz(24, 0, 14, 0, 0, 1 * GiB), 65536);

	/* Large memory: no adaptation at exactly 64 GiB (2^24 pages):
	 * 2^24 >> 1 = 2^23. */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 64 * GiB), 8388608);
	/* 128 GiB: 2^24 < 2^25 pages -> scale 14: 2^25 >> 2 = 2^23 (the
	 * table doubles only when memory quadruples). */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 128 * GiB), 8388608);
	/* 256 GiB: scale 14 (2^26 is not below 2^26): 2^26 >> 2 = 2^24. */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 256 * GiB), 16777216);
	/* 256 GiB + 1 MiB: one more step -> scale 15: (2^26 + 256) >> 3 =
	 * 2^23 + 32 -> power of two 2^24. */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 256 * GiB + MiB), 16777216);
	/* 1 TiB = 2^28 pages: +2 -> scale 15: 2^28 >> 3 = 2^25. */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 1 * TiB), 33554432);
	/* 4 TiB = 2^30 pages: 2^24, 2^26, 2^28 below -> scale 16: 2^26. */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 4 * TiB), 67108864);
	/* A high_limit turns the adaptation off: 128 GiB at scale 13 is
	 * 2^24 entries, below the limit of 2^30. */
	CHECK_EQ(sz(8, 0, 13, 0, (uint64_t)1 << 30, 128 * GiB), 16777216);
	/* TCP established-like (scale 17, high 512K): 8 GiB -> 2^21 >> 5 =
	 * 65536; 256 GiB -> 2^21 entries, capped at 524288. */
	CHECK_EQ(sz(8, 0, 17, 0, 512 * 1024, 8 * GiB), 65536);
	CHECK_EQ(sz(8, 0, 17, 0, 512 * 1024, 256 * GiB), 524288);
	/* Same without the limit: adapted scale 18 -> 2^26 >> 6 = 2^20. */
	CHECK_EQ(sz(8, 0, 17, 0, 0, 256 * GiB), 1048576);

	/* Power-of-two rounding of a given count. */
	CHECK_EQ(sz(8, 1000, 0, 0, 0, 1 * GiB), 1024);
	CHECK_EQ(sz(8, 1024, 0, 0, 0, 1 * GiB), 1024);
	CHECK_EQ(sz(8, 1025, 0, 0, 0, 1 * GiB), 2048);
	CHECK_EQ(sz(8, 1, 0, 0, 0, 1 * GiB), 1);
	/* A given count skips the scale entirely (scale 40 is ignored). */
	CHECK_EQ(sz(8, 4096, 40, 0, 0, 1 * GiB), 4096);

	/* The 1/16 cap: 64-byte buckets at scale 9 on 1 GiB want 2^21
	 * entries = 128 MiB; 1/16 of 1 GiB / 64 = 2^20. */
	CHECK_EQ(sz(64, 0, 9, 0, 0, 1 * GiB), 1048576);
	CHECK_EQ(sz(64, 0, 10, 0, 0, 1 * GiB), 1048576); /* exactly at the cap */
	/* Cap not a power of two: 3 GiB -> 6291456 -> 8388608 wanted, cap
	 * 3145728, rounded down (ilog2) to 2097152. */
	CHECK_EQ(sz(64, 0, 9, 0, 0, 3 * GiB), 2097152);
	/* The cap applies to given counts too. */
	CHECK_EQ(sz(8, (uint64_t)1 << 30, 0, 0, 0, 1 * GiB), 8388608);
	/* Never above 2^31 entries, whatever the memory. */
	CHECK_EQ(sz(1, (uint64_t)1 << 40, 0, 0, 0, 1 * TiB), 2147483648LL);
	CHECK_EQ(sz(8, UINT64_MAX, 0, 0, 0, 1 * TiB), 2147483648LL);

	/* Limits: low raises (64 MiB at scale 17 = 512 entries -> 4096). */
	CHECK_EQ(sz(8, 0, 17, 0, 0, 64 * MiB), 512);
	CHECK_EQ(sz(8, 0, 17, 4096, 0, 64 * MiB), 4096);
	/* A low limit that is not a power of two rounds down (kernel). */
	CHECK_EQ(sz(8, 0, 17, 3000, 0, 64 * MiB), 2048);
	/* high lowers: 524288 wanted, limit 100000 -> 65536. */
	CHECK_EQ(sz(8, 0, 13, 0, 100000, 4 * GiB), 65536);
	/* The 1/16 cap wins over a larger low limit: 64 MiB / 16 / 8. */
	CHECK_EQ(sz(8, 0, 17, (uint64_t)1 << 24, 0, 64 * MiB), 524288);

	/* At least one page of buckets: 16 MiB at scale 20 is 16 entries
	 * of 16 bytes = 256 bytes -> 4096 / 16 = 256 entries. */
	CHECK_EQ(sz(16, 0, 20, 0, 0, 16 * MiB), 256);
	/* Tiny memory: 64 KiB rounds to 1 MiB = 256 pages >> 1 = 128,
	 * raised to a page (512), equal to the cap (64K / 16 / 8). */
	CHECK_EQ(sz(8, 0, 13, 0, 0, 64 * KiB), 512);
	/* Buckets above a page and almost no memory: one entry. */
	CHECK_EQ(sz(8192, 0, 30, 0, 0, 4 * MiB), 1);
	/* Scale below the page shift: one entry per KiB of 4 MiB = 4096
	 * (the cap, 4 MiB / 16 / 8 = 32768, does not bite). */
	CHECK_EQ(sz(8, 0, 10, 0, 0, 4 * MiB), 4096);
}

static void granules(void)
{
	uint64_t lo, hi;
	/* 16 nodes, a 2 MiB table: 128 KiB granules, one per node. */
	CHECK_EQ(_nd_table_granule_shift(2 * MiB, 16), 5);
	_nd_table_spread_minmax(2 * MiB, 16, 5, &lo, &hi);
	CHECK(lo == 128 * KiB && hi == 128 * KiB, "lo %llu hi %llu", (unsigned long long)lo, (unsigned long long)hi);
	/* Big enough: 2 MiB granules (huge pages) and an exact split. */
	CHECK_EQ(_nd_table_granule_shift(32 * MiB, 16), 9);
	CHECK_EQ(_nd_table_granule_shift(64 * MiB, 16), 9);
	CHECK_EQ(_nd_table_granule_shift(64 * MiB, 4), 9);
	/* 3 nodes, 8 MiB: 2 MiB granules would give 4/2/2 MiB; the first
	 * within 1.05 is 128 KiB (64 granules: 22/21/21). */
	CHECK_EQ(_nd_table_granule_shift(8 * MiB, 3), 5);
	_nd_table_spread_minmax(8 * MiB, 3, 9, &lo, &hi);
	CHECK(lo == 2 * MiB && hi == 4 * MiB, "lo %llu hi %llu", (unsigned long long)lo, (unsigned long long)hi);
	_nd_table_spread_minmax(8 * MiB, 3, 5, &lo, &hi);
	CHECK(lo == 21 * 128 * KiB && hi == 22 * 128 * KiB);
	/* 3 nodes, 128 MiB: 64 huge granules are within 1.05 (22/21). */
	CHECK_EQ(_nd_table_granule_shift(128 * MiB, 3), 9);
	/* A partial last granule: 3 MiB + 4 KiB over 2 nodes at 2 MiB. */
	_nd_table_spread_minmax(3 * MiB + 4 * KiB, 2, 9, &lo, &hi);
	CHECK(lo == MiB + 4 * KiB && hi == 2 * MiB);
	/* Bytes count as whole pages. */
	_nd_table_spread_minmax(100, 1, 0, &lo, &hi);
	CHECK(lo == 4096 && hi == 4096);
	/* 16 nodes, 64 KiB (16 pages): one page each. */
	CHECK_EQ(_nd_table_granule_shift(64 * KiB, 16), 0);
	/* 5 nodes, 1 MiB (256 pages): 16 KiB granules give 13/12 (1.08),
	 * 8 KiB give 26/25 (1.04): shift 1. */
	CHECK_EQ(_nd_table_granule_shift(1 * MiB, 5), 1);
	/* The promise holds whenever each node can get >= 21 pages. */
	for (int n = 2; n <= 16; n++) {
		for (uint64_t b = 256 * KiB; b <= 256 * MiB; b <<= 1) {
			if (b / 4096 < 21 * (uint64_t)n)
				continue;
			unsigned s = _nd_table_granule_shift(b, n);
			_nd_table_spread_minmax(b, n, s, &lo, &hi);
			CHECK(lo > 0 && 20 * hi <= 21 * lo, "n %d bytes %llu shift %u lo %llu hi %llu", n,
			      (unsigned long long)b, s, (unsigned long long)lo, (unsigned long long)hi);
			CHECK(s <= 9);
			if (b >= (uint64_t)n * 40 * MiB)
				CHECK_EQ(s, 9); /* >= 20 huge granules per node */
		}
	}
}

static void halving(void)
{
	fake_t f = { .cap = 1 * MiB };
	unsigned lg = 20; /* 8 MiB of 8-byte buckets */
	CHECK(_nd_table_try_halving(8, &lg, fake_try, &f) == &fake_mem);
	CHECK_EQ(lg, 17); /* 1 MiB */
	CHECK_EQ(f.tries, 4);
	CHECK_EQ(f.tried[0], 8 * MiB);
	CHECK_EQ(f.tried[3], 1 * MiB);

	/* Nothing fits: halve down to one page, then give up. */
	f = (fake_t){ .cap = 0 };
	lg = 20;
	CHECK(_nd_table_try_halving(8, &lg, fake_try, &f) == NULL);
	CHECK_EQ(f.tries, 12); /* 8 MiB ... 4 KiB */
	CHECK_EQ(f.tried[11], 4096);

	/* Exactly one page fits. */
	f = (fake_t){ .cap = 4096 };
	lg = 20;
	CHECK(_nd_table_try_halving(8, &lg, fake_try, &f) == &fake_mem);
	CHECK_EQ(lg, 9);

	/* Buckets above a page: the kernel stops before a one-entry retry. */
	f = (fake_t){ .cap = 0 };
	lg = 3;
	CHECK(_nd_table_try_halving(8192, &lg, fake_try, &f) == NULL);
	CHECK_EQ(f.tries, 3); /* 64K, 32K, 16K */
	CHECK_EQ(f.tried[2], 16384);

	/* A size that overflows size_t fails like a full node and halves. */
	f = (fake_t){ .cap = 1 * GiB };
	lg = 63;
	CHECK(_nd_table_try_halving(4096, &lg, fake_try, &f) == &fake_mem);
	CHECK_EQ(lg, 18);
}

static void bad_input(void)
{
	nd_table_t t;
	nd_table_desc_t d = { .name = "bad", .bucket_size = 0, .entries = 16 };
	errno = 0;
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	d.bucket_size = 8;
	d.flags = ND_TABLE_LOCAL | ND_TABLE_DISTRIBUTE;
	errno = 0;
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	d.flags = 0x100;
	errno = 0;
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	d.flags = 0;
	d.low_limit = 100;
	d.high_limit = 10;
	errno = 0;
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	d.low_limit = d.high_limit = 0;
	d.entries = 0;
	d.scale = 64;
	errno = 0;
	CHECK(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(nd_table_alloc(NULL, &t) == -1 && errno == EINVAL);
}

int main(void)
{
	sizing();
	granules();
	halving();
	bad_input();
	return CHECK_DONE();
}
