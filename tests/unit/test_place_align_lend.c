// SPDX-License-Identifier: MIT
/* The x calls under the default policy with an alignment above 16 B keep
 * it when the thread's borrowed lists could lend (heap.c, bw_lend: an
 * object of a class up to 3/2 bigger serves a plain malloc that would
 * take fresh pages, and stays less aligned than the class asked for):
 * nd_mallocx_policy(NULL, ALIGN(a)) and nd_aligned_alloc_policy took
 * nd_malloc's path on the aligned size. Two threads of node 0 (emulated):
 * one makes objects, this one frees them (its borrowed list of their
 * class), then asks for aligned blocks of a smaller class:
 *  - 1500 B aligned to 512 (class 1536) with 1792 B objects borrowed
 *    (256-aligned);
 *  - 1700 B aligned to 256 (class 1792) with 2560 B objects borrowed
 *    (64-aligned: a coloured class, slab.c colour_of);
 *  - 90 B aligned to 32 (class 96) with 112 B objects borrowed.
 * Each round's plain malloc of the size borrows first (the lending goes
 * on, the fast path's dir[] on the lender's list). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 40, R = 12 };

/* In a child (a fresh thread state each case): returns the misaligned
 * blocks, or -1; *lent: plain mallocs that got a borrowed object. */
static int one_case(size_t big, size_t size, size_t align, int *lent)
{
	if (borrow_emulate() != 0)
		return -1;
	nd_emulate_cpu(0);
	free(malloc(16)); /* this thread's record and node-0 heap */
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	void *theirs[N];
	struct borrow_owner ob = { theirs, N, big, &bar };
	pthread_t th;
	if (pthread_create(&th, NULL, borrow_owner, &ob) != 0)
		return -1;
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		free(theirs[i]); /* borrowed: onto this thread's list of big */
	int bad = 0;
	*lent = 0;
	for (int r = 0; r < R; r++) {
		/* first a plain malloc: it borrows, dir[] on the lender's list */
		void *q = malloc(size);
		*lent += malloc_usable_size(q) == _nd_slab_class_size(_nd_slab_class_of(big));
		void *p[3] = { nd_mallocx_policy(size, NULL, ND_MALLOCX_ALIGN(align)),
			       nd_aligned_alloc_policy(align, size, NULL),
			       nd_mallocx_policy(size, NULL, ND_MALLOCX_ALIGN(align) | ND_MALLOCX_ZERO) };
		for (int k = 0; k < 3; k++) {
			CHECK(p[k] != NULL);
			if ((uintptr_t)p[k] % align) {
				fprintf(stderr, "call %d: %p for %zu B aligned to %zu (usable %zu)\n", k, p[k], size, align,
					malloc_usable_size(p[k]));
				bad++;
			}
		}
	}
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	return bad;
}

int main(void)
{
	static const struct {
		size_t big, size, align;
	} cs[] = { { 1700, 1500, 512 }, { 2500, 1700, 256 }, { 110, 90, 32 } };
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		int fd[2];
		CHECK(pipe(fd) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			int lent = 0, bad = one_case(cs[i].big, cs[i].size, cs[i].align, &lent);
			int out[2] = { bad, lent };
			_exit(write(fd[1], out, sizeof out) == sizeof out ? 0 : 1);
		}
		int out[2] = { -1, 0 }, st = -1;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK(read(fd[0], out, sizeof out) == sizeof out);
		close(fd[0]);
		close(fd[1]);
		CHECK(out[0] == 0, "%zu B aligned to %zu beside borrowed %zu B objects: %d misaligned", cs[i].size,
		      cs[i].align, cs[i].big, out[0]);
		CHECK(out[1] > 0, "plain mallocs of %zu B borrowed %d objects of %zu B", cs[i].size, out[1], cs[i].big);
	}
	return CHECK_DONE();
}
