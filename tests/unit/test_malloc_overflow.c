// SPDX-License-Identifier: MIT
/* A heap overflow into a free neighbour is reported by name, not SIGSEGV
 * (issue 12 item 10): an 8-byte write past a 24-byte block's 32-byte slot
 * overwrites the marker (word 0) of the free object after it; the cases
 * "_link" write the 8 bytes after it, the link (word 1). Under
 * NODALLOC_CHECK=1 the next free (which checks the owner's list head,
 * the object it will link to: b) and the
 * next mallocs (which check each listed object's marker and link before
 * following it) report "corrupted free list ... heap overflow"; before,
 * both died with SIGSEGV (a hit link), or went on unseen (a hit marker,
 * before the check of markers). Each case runs in a child (this binary
 * re-executed with NODALLOC_CHECK=1). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"

static void *volatile sink;

static int run_case(const char *name)
{
	/* two neighbours: a, then b right after it (32-byte class) */
	char *a = NULL, *b = NULL;
	char *v[64];
	for (int i = 0; i < 64; i++)
		v[i] = L(malloc(24));
	for (int i = 1; i < 64 && !a; i++)
		if (v[i] == v[i - 1] + 32) {
			a = v[i - 1];
			b = v[i];
		}
	if (!a)
		return 3;
	free(b); /* b is free: its first word its marker, its second the link */
	uint64_t evil = 0x4141414141414141ull;
	bool link = strstr(name, "_link") != NULL;
	memcpy(L(a) + 32 + (link ? 8 : 0), &evil, 8); /* overflow of a past its slot */
	if (!strncmp(name, "free", 4)) {
		free(L(a));
	} else {
		for (int i = 0; i < 4; i++)
			sink = malloc(24);
	}
	return 0; /* not reported: failure */
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return run_case(argv[1]);
	const char *cases[] = { "free", "malloc", "free_link", "malloc_link" };
	for (unsigned c = 0; c < 4; c++) {
		char msg[1024];
		int st = run_child("/proc/self/exe", (char *const[]){ argv[0], (char *)cases[c], NULL }, "NODALLOC_CHECK", "1",
				   false, msg, sizeof msg);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: status %d (signal %d)", cases[c], st,
		      WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		CHECK(strstr(msg, "corrupted free list") && strstr(msg, "heap overflow") &&
			      strstr(msg, c % 2 == 0 ? "free()" : "malloc()"),
		      "%s: message: %s", cases[c], msg);
	}
	return CHECK_DONE();
}
