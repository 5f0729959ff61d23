// SPDX-License-Identifier: MIT
/*
 * Under an address space limit (ulimit -v), after a peak of small objects
 * that are then all freed, large blocks get most of the limit again, as
 * with glibc. Before, the slot kept its mapped extent (its free pages
 * held address space) and the slab headers' chunks (meta.c), taken from
 * the slot every 5 MiB or so, split its free space: with 156 MiB of
 * 64 B objects freed under ulimit -v 200000, malloc(16 MiB) failed at
 * once and the largest block was 7 MiB (glibc: 160 MiB of 16 MiB blocks).
 * Now clean free pages of a lazy slot are unmapped (room.c maps a run's
 * pages when it is taken; a refused mapping gives every slot's free
 * address space back and retries), the chunks are mapped outside it, and
 * the slot is twice the room (an aligned block above the small objects'
 * peak, where an empty current slab stays).
 * A child (this binary re-executed) sets RLIMIT_AS to its address space
 * plus R = 96 MiB, fills 3/4 of R with 64 B objects, frees them, then
 * (status bits) 1: a block of R / 2 fails; 2: 16 MiB blocks until NULL
 * give under half of R; 4: that NULL's errno is not ENOMEM; 8: small
 * objects fail again after the large blocks are freed.
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

#define ROOM (96ul << 20)
#define OBJ 64
static void *obj[ROOM / OBJ * 3 / 4];

static int child(void)
{
	int e = as_limit_room(ROOM);
	if (e)
		return e;
	size_t n = 0;
	for (; n < sizeof obj / sizeof obj[0]; n++) {
		if (!(obj[n] = malloc(OBJ)))
			break;
		memset(obj[n], 1, OBJ);
	}
	if (n < sizeof obj / sizeof obj[0] / 2)
		return 253; /* not the premise: the small objects did not fit */
	for (size_t i = 0; i < n; i++)
		free(obj[i]);
	int st = 0;
	void *one = malloc(ROOM / 2);
	if (!one)
		st |= 1;
	free(one);
	void *big[16];
	int k = 0;
	errno = 0;
	for (; k < 16 && (big[k] = malloc(16ul << 20)) != NULL; k++)
		memset(big[k], 2, 4096);
	if ((unsigned long)k * (16ul << 20) < ROOM / 2)
		st |= 2;
	if (k < 16 && errno != ENOMEM)
		st |= 4;
	while (k > 0)
		free(big[--k]);
	for (size_t i = 0; i < n / 2; i++)
		if (!(obj[i] = malloc(OBJ))) {
			st |= 8;
			break;
		}
	return st;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child();
	int st = as_limit_child("test_page_aslimit_frag", NULL, NULL); /* stderr: the slab map's late warning */
	CHECK(WIFEXITED(st), "the child was killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	CHECK(rc == 0, "child status %d (1: a block of half the room failed, 2: 16 MiB blocks under half the room, 4: errno not ENOMEM, "
		       "8: small objects failed again; 25x: setup)", rc);
	return CHECK_DONE();
}
