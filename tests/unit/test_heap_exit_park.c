// SPDX-License-Identifier: MIT
/* A thread's exit gives back the free pages of its partial slabs of the
 * classes above 2 KiB, but for the first two free objects of each slab
 * (slab_purge.c, _nd_slab_purge_park; issue 11: wl_threads' peak RSS).
 * Before, a parked heap kept every such page until some thread adopted
 * it: each heap held the most objects each class ever had out at once.
 * A worker allocates 96 objects of 20,000 bytes, writes them whole and
 * frees all but one in 8 (the slabs stay partial), then exits: of the
 * pages that freed objects start in and no live object touches, at most
 * a third stay resident (before: all). The live objects keep their bytes;
 * a thread that adopts the heap callocs the freed objects back (zero,
 * the withheld ones as zero pages), writes them, and the live objects
 * still keep theirs; objects of 256 B (a class at most 2 KiB) keep their
 * free pages at the exit. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "internal.h"
#include "trim_fixture.h"

enum { N = 96, SZ = 20000, KEEP = 8, NS = 4096, SSZ = 256, SKEEP = 64 };
static unsigned char *o[N], *so[NS];
static uintptr_t seen[NS];

static void *worker(void *arg)
{
	(void)arg;
	trim_fill(o, N, SZ, KEEP);
	return NULL;
}

static void *small_worker(void *arg)
{
	(void)arg;
	trim_fill(so, NS, SSZ, SKEEP);
	return NULL;
}

/* the freed ones back with calloc: zero whole, then written */
static void *again(void *arg)
{
	int *nonzero = arg;
	for (int i = 0; i < N; i++)
		if (i % KEEP) {
			o[i] = calloc(1, SZ);
			CHECK(o[i] != NULL);
			if (!o[i])
				continue;
			for (size_t j = 0; j < SZ; j++)
				if (o[i][j]) {
					(*nonzero)++;
					break;
				}
			memset(o[i], 0x5a, SZ);
		}
	return NULL;
}

int main(void)
{
	void *warm = malloc(16); /* main's own heap: not the worker's */
	CHECK(_nd_slab_class_size(_nd_slab_class_of(SZ)) > 2048, "a class above 2 KiB");
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	int n, res;
	trim_free_pages(o, N, SZ, KEEP, seen, &n, &res);
	printf("after the worker's exit: %d of %d free pages of %d B objects resident\n", res, n, SZ);
	CHECK(n >= N / 2, "only %d pages without a live object", n);
	CHECK(res * 3 <= n, "%d of %d free pages of the exited thread's %d B slabs resident", res, n, SZ);
	int bad = trim_live_changed(o, N, SZ, KEEP);
	CHECK(bad == 0, "%d live objects changed", bad);
	int nonzero = 0;
	CHECK(pthread_create(&t, NULL, again, &nonzero) == 0);
	pthread_join(t, NULL);
	CHECK(nonzero == 0, "%d calloc'ed objects not zero", nonzero);
	bad = trim_live_changed(o, N, SZ, KEEP);
	CHECK(bad == 0, "%d live objects changed by the adopter's objects", bad);
	for (int i = 0; i < N; i++)
		free(o[i]);
	/* a class of at most 2 KiB: its free pages stay at an exit */
	CHECK(pthread_create(&t, NULL, small_worker, NULL) == 0);
	pthread_join(t, NULL);
	int sn, sres;
	trim_free_pages(so, NS, SSZ, SKEEP, seen, &sn, &sres);
	printf("after the next worker's exit: %d of %d free pages of %d B objects resident\n", sres, sn, SSZ);
	CHECK(sn >= (int)(NS * SSZ / ND_PAGE_SIZE / 2) && sres == sn,
	      "%d of %d free pages of %d B objects resident (kept at an exit)", sres, sn, SSZ);
	for (int i = 0; i < NS; i += SKEEP)
		free(so[i]);
	free(warm);
	return CHECK_DONE();
}
