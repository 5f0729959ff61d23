// SPDX-License-Identifier: MIT
/* A slot's hole (room.c: the part not given to the buddy allocator yet,
 * or given back) has its head implied by the slot's mapped count, not
 * written into its first descriptor: at page 2^k (k >= 7) that
 * descriptor was the first of a page of descriptors of its own, one
 * resident page in every process whose slot grew past 512 KiB (issue 11:
 * the small bench rows' peak RSS). Here node 0's slot grows through
 * several powers of two: after each growth the descriptor page at the
 * hole's head is not resident, the slot's invariants hold (the walk stops
 * at the implied hole), and a run grown in place into the hole, freed
 * and shrunk back keep them. Fresh: the hole's head is past every page
 * the slot gave out (a shrunk slot's is on descriptors runs wrote). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

/* pagemap: present and mapped by this process alone (not the zero page) */
static int own_page(uintptr_t a)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;
	CHECK(fd >= 0 && pread(fd, &e, sizeof e, (off_t)(a / 4096 * sizeof e)) == sizeof e, "pagemap");
	if (fd >= 0)
		close(fd);
	return (e >> 63 & 1) && (e >> 56 & 1);
}

static void check_slot(_nd_arena_t *a, const char *when, bool fresh)
{
	char err[256] = "";
	CHECK(_nd_page_check(a->node, err, sizeof err) == 0, "%s: %s", when, err);
	uint64_t m = a->mapped;
	if (fresh && m >= (1u << 12) / sizeof(_nd_pagedesc_t) && m < 1ull << _nd_page_g.order_max) {
		uintptr_t d = (uintptr_t)&a->bd.desc[m];
		CHECK(d % 4096 == 0, "%s: the hole at page %llu starts a descriptor page", when, (unsigned long long)m);
		printf("%s: hole at page %llu, its descriptor page %s\n", when, (unsigned long long)m,
		       own_page(d) ? "resident" : "not resident");
		CHECK(!own_page(d), "%s: the descriptor page of the hole's head (page %llu) is resident", when,
		      (unsigned long long)m);
	}
}

enum { RUNS = 6, RUN_PAGES = 100 };

int main(void)
{
	void *r[RUNS];
	r[0] = _nd_page_alloc_exact(0, RUN_PAGES, 1);
	CHECK(r[0] != NULL);
	_nd_arena_t *a = &_nd_page_g.arenas[0];
	CHECK(a->node == 0 && a->usable, "node 0's slot");
	check_slot(a, "1 run", true);
	for (int i = 1; i < RUNS; i++) {
		r[i] = _nd_page_alloc_exact(0, RUN_PAGES, 1);
		CHECK(r[i] != NULL);
		char when[32];
		snprintf(when, sizeof when, "%d runs", i + 1);
		check_slot(a, when, true);
	}
	CHECK(a->mapped >= 512, "the slot grew past 2 MiB (%llu pages)", (unsigned long long)a->mapped);
	/* the highest run grows in place past the hole's head (page.c's walk
	 * meets the hole at mapped: the slot grows) */
	int hi = 0;
	for (int i = 1; i < RUNS; i++)
		hi = (uintptr_t)r[i] > (uintptr_t)r[hi] ? i : hi;
	uint64_t before = a->mapped, at = ((uintptr_t)r[hi] - (uintptr_t)a->base) >> 12;
	CHECK_EQ(_nd_page_grow(r[hi], (size_t)(before - at + 8)), 0);
	printf("run at page %llu grown to %llu pages: mapped %llu -> %llu\n", (unsigned long long)at,
	       (unsigned long long)(before - at + 8), (unsigned long long)before, (unsigned long long)a->mapped);
	CHECK(a->mapped > before, "the slot grew (%llu pages)", (unsigned long long)a->mapped);
	check_slot(a, "grown into the hole", true);
	for (int i = 0; i < RUNS; i++)
		CHECK_EQ(_nd_page_free(r[i]), 0);
	_nd_page_trim(0);
	/* shrunk: the hole starts lower, on descriptors the runs wrote */
	printf("all freed: mapped %llu\n", (unsigned long long)a->mapped);
	check_slot(a, "all freed", false);
	return CHECK_DONE();
}
