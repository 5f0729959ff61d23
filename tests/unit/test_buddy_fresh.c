// SPDX-License-Identifier: MIT
/*
 * A split that pushes free heads on descriptor pages nothing touched yet
 * (a slot growing: src/buddy.c, push) faults each such page in once: its
 * first access is a write. Loading the head's flags first mapped the zero
 * page and the first store faulted again (wl_footprint's phase 1: 358 of
 * its page faults). The descriptors are a fresh mapping; taking one page
 * of a 2^16-page block pushes one head of each order 7..15 on a page of
 * its own (128 descriptors a page).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/resource.h>

#include "check.h"
#include "internal.h"

#define ORDER 16

static long minflt(void)
{
	struct rusage ru;
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

int main(void)
{
	size_t bytes = ((size_t)1 << ORDER) * sizeof(_nd_pagedesc_t);
	_nd_pagedesc_t *desc = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				    -1, 0);
	CHECK(desc != MAP_FAILED);
	if (desc == MAP_FAILED)
		return CHECK_DONE();
	madvise(desc, bytes, MADV_NOHUGEPAGE); /* 4 KiB pages: one fault each */
	static _nd_buddy_t b;
	_nd_buddy_init(&b, desc, ORDER, 4);
	_nd_buddy_push(&b, 0, ORDER, 0); /* page 0 of the descriptors */
	uint64_t d;
	long f0 = minflt();
	uint32_t i = _nd_buddy_take(&b, 0, false, &d);
	long f1 = minflt();
	CHECK_EQ(i, 0);
	unsigned fresh = ORDER - 7; /* heads 128, 256, ..., 32768 */
	for (unsigned o = 7; o < ORDER; o++)
		CHECK(b.head[o] == (1u << o) && desc[1u << o].state == ND_PG_FREE, "order %u head at %u", o, b.head[o]);
	CHECK(f1 - f0 <= (long)fresh, "the split faulted %ld times for %u fresh descriptor pages", f1 - f0, fresh);
	_nd_buddy_mark_run(&b, i, 1, 0); /* as the page level does */
	char err[256];
	CHECK(_nd_buddy_check(&b, err, sizeof err) == 0, "%s", err);
	munmap(desc, bytes);
	return CHECK_DONE();
}
