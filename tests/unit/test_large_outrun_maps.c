// SPDX-License-Identifier: MIT
/*
 * A run outside the slot (outrun.c) that cannot grow in place moves with
 * its pages into a fresh reservation (mremap MREMAP_FIXED). Near
 * vm.max_map_count the kernel refuses the move before it unmaps anything
 * (ENOMEM): the reservation must go, not stay mapped (audit27: it stayed,
 * 80 MiB of address space and a map more at each refusal, which pushed
 * the process on towards the limit). The block, its node's room and the
 * statistics stay as they were; away from the limit the move works.
 *
 * The process's maps are brought to 4 below the limit with a PROT_NONE
 * mapping split by mprotect (about 65,000 maps at the default limit);
 * skipped where the limit is above 2^18.
 * Emulated 1 GiB nodes 0 and 1, the thread on CPU 1 (node 1), node 1's
 * slot split by a page every 16 MiB (as test_large_outrun_bound), so that
 * a 40 MiB block is outside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "outrun_fixture.h"

#define MIB ((size_t)1 << 20)

static char *pins[1024];
static int npins;

/* The kernel's count of the process's maps (the [vsyscall] line is none
 * of them), and the number of those of exactly len bytes. */
static long maps(size_t len, long *of_len)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	CHECK(fd >= 0);
	static char buf[1 << 16];
	char line[512];
	size_t ll = 0;
	long n = 0, k = 0;
	ssize_t r;
	while (fd >= 0 && (r = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof line - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			if (strstr(line, "[vsyscall]"))
				continue;
			n++;
			unsigned long a, b;
			if (sscanf(line, "%lx-%lx", &a, &b) == 2 && b - a == len)
				k++;
		}
	if (fd >= 0)
		close(fd);
	if (of_len)
		*of_len = k;
	return n;
}

static long max_map_count(void)
{
	char b[32] = "";
	int fd = open("/proc/sys/vm/max_map_count", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, b, sizeof b - 1);
	close(fd);
	return r > 0 ? strtol(b, NULL, 10) : -1;
}

/* Maps up to `want` in all: a PROT_NONE mapping of 2 * want pages, split
 * by mprotect (a page in its middle: two maps more; its last page: one).
 * Its start and length in *at, *len. */
static void fill_to(long want, char **at, size_t *len)
{
	long have = maps(0, NULL);
	long add = want - have;
	CHECK(add > 2, "%ld maps, %ld wanted", have, want);
	*len = (size_t)(2 * add + 4) * 4096;
	*at = mmap(NULL, *len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(*at != MAP_FAILED);
	if (*at == MAP_FAILED)
		return;
	long now = maps(0, NULL); /* one more, or none if it joined a neighbour */
	int bad = 0;
	for (long i = 0; i < (want - now) / 2; i++)
		bad += mprotect(*at + (size_t)(2 * i + 1) * 4096, 4096, PROT_READ) != 0;
	if ((want - now) & 1)
		bad += mprotect(*at + *len - 4096, 4096, PROT_READ) != 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(maps(0, NULL), want);
}

/* A 40 MiB block outside the slot, a page mapped right after it: growing
 * to 80 MiB must move it. With the maps 4 below the limit the kernel
 * refuses the move: NULL, the block, the room, the statistics and the
 * maps as before (none of 80 MiB left). */
static void refused_near_limit(long limit)
{
	char *p = malloc(40 * MIB);
	CHECK(p && outside(p), "40 MiB outside the split slot");
	if (!p)
		return;
	for (size_t k = 0; k < 40 * MIB; k += ND_PAGE_SIZE)
		p[k] = (char)(k >> 12);
	void *fence = mmap(p + 40 * MIB, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(fence != MAP_FAILED || errno == EEXIST, "a page after the block");
	char *fill;
	size_t flen;
	long of80;
	maps(80 * MIB, &of80);
	CHECK_EQ(of80, 0);
	_nd_page_info_t in0 = info(1);
	nd_node_stats_t s0 = stats(1);
	fill_to(limit - 4, &fill, &flen);
	void *q = _nd_outrun_grow(p, (80 * MIB) >> ND_PAGE_SHIFT);
	long n = maps(80 * MIB, &of80);
	CHECK(q == NULL, "grown near the map limit: %p", q);
	CHECK(n == limit - 4 && of80 == 0, "after the refused move: %ld maps (%ld before), %ld of 80 MiB (the reservation left)",
	      n, limit - 4, of80);
	if (fill != MAP_FAILED)
		munmap(fill, flen);
	CHECK(outside(p) && malloc_usable_size(p) == 40 * MIB, "the block kept");
	bool same = true;
	for (size_t k = 0; k < 40 * MIB; k += ND_PAGE_SIZE)
		same &= p[k] == (char)(k >> 12);
	CHECK(same, "its contents kept");
	_nd_page_info_t in = info(1);
	nd_node_stats_t s = stats(1);
	CHECK(in.used_pages == in0.used_pages && in.out_pages == in0.out_pages, "room: used %llu -> %llu, out %llu -> %llu",
	      (unsigned long long)in0.used_pages, (unsigned long long)in.used_pages, (unsigned long long)in0.out_pages,
	      (unsigned long long)in.out_pages);
	CHECK(s.bytes_in_use == s0.bytes_in_use && s.bytes_committed == s0.bytes_committed);
	/* away from the limit: moved with its pages */
	char *r = realloc(p, 80 * MIB);
	CHECK(r && r != p && outside(r) && malloc_usable_size(r) == 80 * MIB, "moved once the maps are back: %p", (void *)r);
	if (r)
		p = r;
	same = true;
	for (size_t k = 0; k < 40 * MIB; k += ND_PAGE_SIZE)
		same &= p[k] == (char)(k >> 12);
	CHECK(same, "its contents moved");
	free(p);
	if (fence != MAP_FAILED)
		munmap(fence, 4096);
	CHECK_EQ(info(1).out_runs, 0);
}

int main(void)
{
	long limit = max_map_count();
	if (limit <= 0 || limit > (1L << 18)) {
		printf("vm.max_map_count %ld: not filled, test skipped\n", limit);
		return CHECK_DONE();
	}
	split_node1(pins, 1024, &npins);
	refused_near_limit(limit);
	for (int k = 0; k < npins; k++)
		CHECK_EQ(_nd_page_free(pins[k]), 0);
	return CHECK_DONE();
}
