// SPDX-License-Identifier: MIT
/*
 * Under an address space limit (ulimit -v) a program gets most of what
 * the limit leaves, as with glibc (issue 12, item 11). The page level
 * reserved every slot up front, halving them until all fitted: a node
 * slot was about a quarter of the room, and under 48 MiB nothing at all.
 * Now the layout is sized to the limit and mapped as runs need it.
 * Each case runs in a child (this binary re-executed) that sets RLIMIT_AS
 * to its address space now plus R, then mallocs blocks of one size (each
 * touched) until NULL; its exit status is the percentage of R obtained.
 * Asserted: at least 70% of R, for R = 100000 KiB and 48 MiB, blocks of
 * 4 KiB, 64 KiB and 1 MiB.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "vm_bytes.h"

static int child(unsigned long room, size_t block)
{
	int e = as_limit_room(room);
	if (e)
		return e;
	unsigned long got = 0;
	for (;;) {
		char *p = malloc(block);
		if (!p)
			break;
		p[0] = 1;
		got += block;
	}
	return (int)(got * 100 / room);
}

/* Percentage of room a child obtains in blocks of block bytes. */
static int run(unsigned long room, size_t block)
{
	pid_t pid = fork();
	if (pid == 0) {
		char r[32], b[32];
		snprintf(r, sizeof r, "%lu", room);
		snprintf(b, sizeof b, "%zu", block);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2); /* the slab map's warning when it comes too late */
		execl("/proc/self/exe", "test_page_aslimit", r, b, (char *)NULL);
		_exit(253);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc > 2)
		return child(strtoul(argv[1], NULL, 10), strtoul(argv[2], NULL, 10));
	unsigned long rooms[] = { 100000ul << 10, 48ul << 20 };
	size_t blocks[] = { 4096, 64 << 10, 1 << 20 };
	for (unsigned i = 0; i < 2; i++)
		for (unsigned j = 0; j < 3; j++) {
			int pct = run(rooms[i], blocks[j]);
			printf("room %lu KiB, blocks of %zu: %d%% obtained\n", rooms[i] >> 10, blocks[j], pct);
			CHECK(pct >= 70 && pct <= 100, "room %lu KiB, blocks of %zu bytes: %d%% obtained", rooms[i] >> 10,
			      blocks[j], pct);
		}
	return CHECK_DONE();
}
