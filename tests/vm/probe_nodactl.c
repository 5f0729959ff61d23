// SPDX-License-Identifier: MIT
/*
 * The program tests/vm/vm_nodactl.c runs under nodactl inside the VM, built
 * twice: dynamic (nodactl preloads libnodalloc into it) and static (only
 * the kernel policy can reach it). Not a test itself (no vm_ prefix).
 *   probe_nodactl MIB [nothp]
 * touches a stack buffer, an anonymous mmap of MIB MiB and a malloc'd
 * block of 1 MiB (the heap: nodalloc's when preloaded), asks the kernel
 * where each page is (move_pages) and prints, one line each:
 *   PROBE policy mode=M mask=HEX       get_mempolicy of the process
 *   PROBE cpus C C ...                  its CPU affinity
 *   PROBE stack|mmap|heap N:COUNT ...   pages per node (-1: not present)
 * nothp: MADV_NOHUGEPAGE on the mmap, so the kernel's interleave is seen
 * page by page (the bed's THP is "always": 2 MiB pages interleave whole).
 * Raw syscalls only: no libnuma, the same code static and dynamic.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL
#define MAXN 64

static void where(const char *what, char *p, size_t len)
{
	static void *pages[65536];
	static int status[65536];
	size_t n = len / PAGE;
	if (n > 65536)
		n = 65536;
	for (size_t i = 0; i < n; i++)
		pages[i] = p + i * PAGE;
	long counts[MAXN + 1] = { 0 };
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) != 0) {
		printf("PROBE %s error\n", what);
		return;
	}
	for (size_t i = 0; i < n; i++)
		counts[status[i] >= 0 && status[i] < MAXN ? status[i] : MAXN]++;
	printf("PROBE %s", what);
	for (int k = 0; k <= MAXN; k++)
		if (counts[k])
			printf(" %d:%ld", k < MAXN ? k : -1, counts[k]);
	printf("\n");
}

static void touch(char *p, size_t len)
{
	for (size_t i = 0; i < len; i += PAGE)
		((volatile char *)p)[i] = 1;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 4;
	int mode = -1;
	unsigned long mask[MAXN / 64 + 1] = { 0 };
	if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)MAXN + 1, NULL, 0) != 0)
		mode = -1;
	printf("PROBE policy mode=%d mask=%lx\n", mode, mask[0]);
	cpu_set_t set;
	printf("PROBE cpus");
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				printf(" %d", c);
	printf("\n");

	/* 64 KiB of stack, page aligned within the frame */
	char frame[17 * PAGE];
	char *stack = (char *)(((uintptr_t)frame + PAGE - 1) & ~(PAGE - 1));
	touch(stack, 16 * PAGE);
	where("stack", stack, 16 * PAGE);

	char *m = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		printf("PROBE mmap error\n");
		return 1;
	}
	if (argc > 2 && strcmp(argv[2], "nothp") == 0)
		madvise(m, mib << 20, MADV_NOHUGEPAGE);
	touch(m, mib << 20);
	where("mmap", m, mib << 20);

	char *h = malloc(1 << 20);
	if (!h) {
		printf("PROBE heap error\n");
		return 1;
	}
	/* the whole pages of the block */
	char *hp = (char *)(((uintptr_t)h + PAGE - 1) & ~(PAGE - 1));
	touch(hp, (1 << 20) - PAGE);
	where("heap", hp, (1 << 20) - PAGE);
	fflush(stdout);
	if (argc > 2 && strcmp(argv[2], "kill") == 0)
		raise(SIGTERM); /* nodactl --stats' report of a signalled end */
	return 0;
}
