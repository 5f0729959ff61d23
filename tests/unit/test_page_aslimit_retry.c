// SPDX-License-Identifier: MIT
/*
 * Under an address space limit, a run whose mapping is refused is given
 * back, every slot's free address space released, and the run taken
 * again (page.c node_alloc). A packed run (below the purge threshold, no
 * alignment) cut at next_at set the run's order k to 0 (exact, no tail);
 * the retry kept that 0, so when next_at no longer fitted it took a block
 * of one page for a run of n and marked n pages over the runs and free
 * blocks after it: its MAP_FIXED mapping wiped a live block's pages (data
 * lost), and its free gave pages back twice (the free lists' cycles:
 * malloc hung or crashed under ulimit -v; audit15).
 * A child (this binary re-executed, NODALLOC_PURGE_DECAY_MS=0 so freed
 * runs stay dirty) sets RLIMIT_AS to its address space plus 64 MiB, takes
 * 16 blocks of 100 KiB (packed runs, one after the other from the fourth
 * on), stamps them, frees the even ones from the fifth on (dirty pieces
 * of at most 16 pages: the next run is cut at next_at, not from them), takes
 * every byte of address space left with its own mappings, then asks for
 * a block of 200 KiB: its mapping is refused, the release unmaps the dirty
 * pieces, the retry maps it. Status bits: 1: a live block lost its stamp;
 * 2: the new block overlaps a live block; 4: the new block failed (errno
 * not ENOMEM); 8: blocks taken after freeing the new one overlap live ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "vm_bytes.h"

#define ROOM (64ul << 20)
#define NB 16
#define BS (100ul << 10)

static unsigned char *blk[NB];

static bool stamped(const unsigned char *p, unsigned char v)
{
	for (size_t i = 0; i < BS; i += 512)
		if (p[i] != v)
			return false;
	return true;
}

/* Blocks 0-3 and the odd ones stay. */
static bool live(int i)
{
	return i < 4 || i % 2;
}

static bool overlaps(const unsigned char *p, size_t n)
{
	for (int i = 0; i < NB; i++)
		if (live(i) && p < blk[i] + BS && blk[i] < p + n)
			return true;
	return false;
}

static bool intact(void)
{
	for (int i = 0; i < NB; i++)
		if (live(i) && !stamped(blk[i], (unsigned char)(0x10 + i)))
			return false;
	return true;
}

/* Every byte of address space left, in mappings of halving sizes. */
static void exhaust(void)
{
	for (size_t sz = 1ul << 30; sz >= 4096; sz >>= 1)
		while (mmap(NULL, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED)
			;
}

static int child(void)
{
	int e = as_limit_room(ROOM);
	if (e)
		return e;
	for (int i = 0; i < NB; i++) {
		if (!(blk[i] = malloc(BS)))
			return 253;
		memset(blk[i], 0x10 + i, BS);
	}
	for (int i = 0; i < NB; i++)
		if (!live(i))
			free(blk[i]);
	exhaust();
	int st = 0;
	errno = 0;
	unsigned char *p = malloc(2 * BS); /* more than a freed block's place */
	if (p) {
		if (overlaps(p, 2 * BS))
			st |= 2;
		memset(p, 0xee, 2 * BS);
	} else if (errno != ENOMEM) {
		st |= 4;
	}
	if (!intact())
		st |= 1;
	free(p);
	/* what the pages went back as serves again without overlap */
	unsigned char *q[8];
	for (int k = 0; k < 8; k++) {
		q[k] = malloc(BS);
		if (q[k] && overlaps(q[k], BS))
			st |= 8;
		if (q[k])
			memset(q[k], 0xdd, BS);
	}
	if (!intact())
		st |= 1;
	for (int k = 0; k < 8; k++)
		free(q[k]);
	return st;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child();
	int st = as_limit_child("test_page_aslimit_retry", "NODALLOC_PURGE_DECAY_MS", "0");
	CHECK(WIFEXITED(st), "the child was killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	CHECK(rc == 0, "child status %d (1: a live block lost its contents, 2: the retried run overlaps a live block, "
		       "4: errno not ENOMEM, 8: later runs overlap live blocks; 25x: setup)", rc);
	return CHECK_DONE();
}
