// SPDX-License-Identifier: MIT
/*
 * wl_probe: tells run.sh which allocator actually serves malloc under the
 * current LD_PRELOAD. glibc serves small requests from the brk heap (the
 * main arena); nodalloc, jemalloc and mimalloc never do (tcmalloc does, so
 * this is only asked about nodalloc). If nodalloc's small objects land in
 * the brk heap, libnodalloc.so is still the bootstrap that forwards to
 * glibc, and its figures are glibc's. Also reports nd_usable_size() when
 * the preloaded library exports it (the bootstrap answers 0).
 * Prints "PROBE heap=brk|mmap nd_usable=<n>|absent".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern char end; /* end of the program's data: the brk heap starts above */

int main(void)
{
	void *p = malloc(64);
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)&end, hi = (uintptr_t)sbrk(0);
	size_t (*usable)(const void *) = (size_t (*)(const void *))dlsym(RTLD_DEFAULT, "nd_usable_size");
	printf("PROBE heap=%s nd_usable=", p && a >= lo && a < hi ? "brk" : "mmap");
	if (usable)
		printf("%zu\n", usable(p));
	else
		printf("absent\n");
	free(p);
	return 0;
}
