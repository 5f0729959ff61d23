// SPDX-License-Identifier: MIT
/* The pages of the library's static data that a process touches at init
 * (issue 11: peak RSS of the small workloads, where nodalloc's fixed cost
 * was most of the gap to glibc). After the init and a few allocations of
 * every size, at most BSS_PAGES pages of .bss may be resident (the
 * library's bss is ~950 KiB: boot buffer, per-node tables, snapshot
 * buffers, all meant to stay untouched until used). The option table used
 * to hold a 4 KiB string buffer per option and wrote a default into each
 * at init: 18 pages (31 resident in this test, 13 since). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

extern char __bss_start[], _end[];

enum { BSS_PAGES = 16 };

int main(void)
{
	void *p[12];
	for (int i = 0; i < 12; i++)
		p[i] = malloc((size_t)16 << i);
	for (int i = 0; i < 12; i++)
		free(p[i]);
	uintptr_t a = (uintptr_t)__bss_start & ~(uintptr_t)4095, e = ((uintptr_t)_end + 4095) & ~(uintptr_t)4095;
	size_t n = (e - a) / 4096;
	unsigned char *v = malloc(n);
	CHECK(v && mincore((void *)a, e - a, v) == 0);
	int res = 0;
	for (size_t i = 0; v && i < n; i++)
		res += v[i] & 1;
	printf(".bss: %d of %zu pages resident\n", res, n);
	CHECK(res <= BSS_PAGES, "%d pages of .bss resident after the init (at most %d)", res, BSS_PAGES);
	free(v);
	return CHECK_DONE();
}
