// SPDX-License-Identifier: MIT
/* Page level, spread runs and transparent huge pages: a spread with 2 MiB
 * granules, made where a 4 KiB granule spread lived before, is backed by
 * huge pages (the old run's page tables must not survive: MADV_DONTNEED
 * keeps them, and a PMD holding a page table only gets 4 KiB faults), and
 * freeing it leaves no extra VMA behind (its MADV_HUGEPAGE advice goes with
 * it). The huge page check needs THP "always" or "madvise" on the host;
 * with "never" only the structural checks run. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define SPREAD_PAGES 1024 /* 4 MiB: two 2 MiB granules */

/* Lines of /proc/self/maps, with plain system calls (no allocation). */
static int map_count(void)
{
	static char buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY), n = 0;
	ssize_t r;
	if (fd < 0)
		return -1;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

/* AnonHugePages (kB) of the mappings overlapping [p, p+len). */
static long huge_kb(const void *p, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	long kb = 0;
	int in = 0;
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	while (fgets(line, sizeof line, f)) {
		unsigned long s, e;
		long v;
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2)
			in = s < hi && e > lo;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

static int thp_possible(void)
{
	char buf[128] = "";
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (!strstr(buf, "[always]") && !strstr(buf, "[madvise]"))
		return 0;
	return prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0;
}

static void *spread(const char *spec)
{
	nd_policy_t pol;
	char err[128] = "";
	CHECK(nd_policy_parse(spec, &pol, err, sizeof err) == 0, "%s: %s", spec, err);
	return _nd_page_alloc_spread(SPREAD_PAGES, &pol);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	int thp = thp_possible();

	/* 4 KiB granules first, touched: page tables over the whole run. */
	char *small = spread("interleave:0,1@4K");
	CHECK(small != NULL);
	if (small)
		memset(small, 1, (size_t)SPREAD_PAGES << ND_PAGE_SHIFT);
	CHECK(_nd_page_free(small) == 0);

	/* 2 MiB granules at the same place (the mixed slot reuses its lowest
	 * block; if it did not, this test would prove nothing). */
	int maps0 = map_count();
	char *big = spread("interleave:0,1@2M");
	CHECK(big != NULL);
	CHECK(big == small, "the 2M spread is at %p, the 4K one was at %p", (void *)big, (void *)small);
	CHECK(((uintptr_t)big & (ND_HUGE_SIZE - 1)) == 0, "%p not 2 MiB aligned", (void *)big);
	if (big) {
		memset(big, 2, (size_t)SPREAD_PAGES << ND_PAGE_SHIFT);
		long kb = huge_kb(big, (size_t)SPREAD_PAGES << ND_PAGE_SHIFT);
		if (thp)
			/* both granules; at least one if the host is short of
			 * free 2 MiB blocks */
			CHECK(kb >= 2048, "AnonHugePages of the 2M spread: %ld kB, expected 2048-4096", kb);
		else
			printf("THP disabled on this host: huge page check skipped (%ld kB)\n", kb);
		CHECK(_nd_page_free(big) == 0);
	}
	/* Gone without a trace: its VMAs merged back into the slot's. */
	CHECK_EQ(map_count(), maps0);

	/* A 2 MiB granule spread whose last granule is partial. */
	nd_policy_t pol;
	CHECK(nd_policy_parse("interleave:0,1@2M", &pol, err, sizeof err) == 0, "%s", err);
	char *odd = _nd_page_alloc_spread(SPREAD_PAGES + 3, &pol);
	CHECK(odd != NULL);
	if (odd) {
		memset(odd, 3, (size_t)(SPREAD_PAGES + 3) << ND_PAGE_SHIFT);
		CHECK_EQ(_nd_page_node_of(odd), 0);
		CHECK_EQ(_nd_page_node_of(odd + ND_HUGE_SIZE), 1);
		CHECK_EQ(_nd_page_node_of(odd + 2 * ND_HUGE_SIZE), 0);
		CHECK(_nd_page_free(odd) == 0);
	}
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "mixed slot: %s", err);
	CHECK_EQ(map_count(), maps0);
	return CHECK_DONE();
}
