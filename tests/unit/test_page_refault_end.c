// SPDX-License-Identifier: MIT
/* Refaults end with their phase (purge.c: decay_slot, _nd_purge_after_free;
 * heap.c kept_expire). Refaults raise the cap of the bound on the empty
 * slabs heaps keep (test_page_refault); until branch ends22 that cap
 * stayed raised:
 *  - with NODALLOC_PURGE_DECAY_MS=0 for good: the counters moved only at
 *    a decay. Now the dirty limit's passes are their periods: a pass
 *    after the one that followed the refaults, with none since, leaves
 *    none (the bound is back to its cap);
 *  - with the decay, the kept slabs of a heap whose program freed its
 *    working set stayed (16 MiB, EMPTY_KEEP) whatever the decay did: a
 *    decay that finds the dirty pages unused ends the refaults, and the
 *    heap's next refill holds its kept slabs to the bound again; within
 *    a few periods the heap keeps none and the slot holds no dirty page;
 *  - with NODALLOC_PURGE_DECAY_MS=0 (branch ends23), a pass with no
 *    refault since the one before ends them as that decay does: the
 *    kept slabs of a heap whose program freed its working set stayed
 *    (the refaults 0) until another slab emptied;
 *  - an interleave heap keeps no slab: none to expire (node -1).
 * The first part on a CPU-less emulated node (TN) that malloc never
 * touches, the others with malloc on the node of main's CPU (the decay-0
 * one in a child). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "pin_fixture.h"

#define TN 1 /* the node under test: memory, no CPUs */
/* the default purge threshold (512 KiB): blocks of 128 pages, the
 * dirty limit 512, the cap 2048 */
#define CAP 2048
#define RUNS 625 /* runs of 4 pages: 2500 pages, past the cap */
#define HELD 125 /* runs held across the rounds: freed last */

static char *runs[RUNS], *held[HELD];

static void decay0(void)
{
	_nd_arena_t *a = &_nd_page_g.arenas[TN];
	uint64_t keep_ns = _nd_page_g.decay_ns;
	_nd_page_g.decay_ns = 0; /* NODALLOC_PURGE_DECAY_MS=0 (set once, before any run of TN) */
	for (int k = 0; k < HELD; k++)
		CHECK((held[k] = _nd_page_alloc_exact(TN, 4, 1)) != NULL);
	for (int round = 0; round < 2; round++) { /* the first purges, the second refaults */
		for (int k = 0; k < RUNS; k++)
			if (!(runs[k] = _nd_page_alloc_exact(TN, 4, 1)))
				abort();
		for (int k = 0; k < RUNS; k++)
			_nd_page_free(runs[k]);
	}
	uint64_t rf = a->refault_cur + a->refault_prev;
	CHECK(rf > 0, "the second round refaulted (%llu)", (unsigned long long)rf);
	/* the held runs go: a pass, no refault since the last one */
	for (int k = 0; k < HELD; k++)
		CHECK(_nd_page_free(held[k]) == 0);
	CHECK(a->refault_cur + a->refault_prev == 0, "refaults %llu + %llu after a pass without any",
	      (unsigned long long)a->refault_cur, (unsigned long long)a->refault_prev);
	CHECK(_nd_purge_over(TN, CAP + 200), "%d pages kept under a cap of %d again", CAP + 200, CAP);
	_nd_page_g.decay_ns = keep_ns;
}

static unsigned long long rng = 88172645463325252ull;
static unsigned xr(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)rng;
}

enum { OBJS = 200000 }; /* ~50 MiB of 16-512 B objects */
static void *obj[OBJS];

static uint32_t kept_pages(void)
{
	uint32_t n = 0;
	_nd_thread_t *t = _nd_tls;
	for (int i = 0; i < t->nheaps; i++)
		n += ((const _nd_heap_t *)t->heaps[i])->epages;
	return n;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);
}

/* three phases of ~50 MiB of small objects, each freed (the last: the
 * program's working set, freed for good) */
static void phases(void)
{
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < OBJS; i++) {
			size_t sz = 16 + xr() % (round & 1 ? 497 : 241);
			obj[i] = malloc(sz);
			if (!obj[i])
				abort();
			memset(obj[i], 1, sz);
		}
		for (int i = OBJS - 1; i > 0; i--) {
			int j = (int)(xr() % (unsigned)(i + 1));
			void *x = obj[i];
			obj[i] = obj[j];
			obj[j] = x;
		}
		for (int i = 0; i < OBJS; i++)
			free(obj[i]);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void decay_kept(void)
{
	uint64_t t0 = mono_ns();
	phases();
	/* the refaults must fall within a decay period or two: on a machine
	 * too loaded for that (the VM tests beside it), decays run inside
	 * the phases and end the refaults there (a fresh clone's make test
	 * saw 488 pages kept) */
	if (mono_ns() - t0 > _nd_page_g.decay_ns) {
		printf("decay_kept skipped: the phases took %.2f s, more than a decay period\n", (double)(mono_ns() - t0) / 1e9);
		return;
	}
	uint32_t kept = kept_pages();
	CHECK(kept > CAP, "the refaults let the heap keep more than the cap (8 MiB): %u pages", kept);
	/* each period: a page-level call (the decay runs), then a class
	 * never used (a refill: kept_expire) */
	static const size_t fresh[] = { 2600, 3200, 3800, 4600, 5600, 6600 };
	int p = 0;
	for (; p < 6 && kept_pages(); p++) {
		nap(_nd_page_g.decay_ns + _nd_page_g.decay_ns / 4);
		free(malloc(1 << 20));
		free(malloc(fresh[p]));
	}
	CHECK(kept_pages() == 0, "%u pages kept after %d decay periods (were %u)", kept_pages(), p, kept);
	nap(_nd_page_g.decay_ns + _nd_page_g.decay_ns / 4);
	free(malloc(1 << 20));
	int node = _nd_tls->heap ? ((const _nd_heap_t *)_nd_tls->heap)->node : 0;
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	CHECK(in.dirty_pages == 0, "%llu dirty pages a period after the kept slabs went",
	      (unsigned long long)in.dirty_pages);
}

/* NODALLOC_PURGE_DECAY_MS=0 on the node of main's CPU: page runs that
 * refault (two rounds past the limit), runs held (two sets), then ~8 MiB
 * of small objects, all freed (the working set): the refaults let the
 * heap keep them, past the cap. The held sets go: passes of the dirty
 * limit, the last with no refault since the one before, so none is left.
 * A refill (a class not used yet) then holds the kept slabs to the bound
 * without them; before, they stayed until another slab emptied (none
 * will: 2120 pages kept, the refaults 0). In a child: the decay stays
 * off for its whole run. Then an interleave heap (node -1, whose
 * kept_gen is 0): it keeps no slab at all (slab.c keep_empty, take_idle
 * keep slabs of the heap's own node only), so none outlives a phase. */
static char *two[2][RUNS];
static void decay0_kept(void)
{
	_nd_page_g.decay_ns = 0;
	free(malloc(16)); /* the thread's heap */
	int node = ((const _nd_heap_t *)_nd_tls->heap)->node;
	const _nd_arena_t *a = &_nd_page_g.arenas[node];
	for (int round = 0; round < 2; round++) {
		for (int k = 0; k < RUNS; k++)
			if (!(runs[k] = _nd_page_alloc_exact(node, 4, 1)))
				abort();
		for (int k = 0; k < RUNS; k++)
			_nd_page_free(runs[k]);
	}
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < RUNS; k++)
			if (!(two[h][k] = _nd_page_alloc_exact(node, 4, 1)))
				abort();
	enum { N = 60000 };
	for (int i = 0; i < N; i++) {
		size_t sz = 16 + xr() % 241;
		if (!(obj[i] = malloc(sz)))
			abort();
		memset(obj[i], 1, sz);
	}
	for (int i = 0; i < N; i++)
		free(obj[i]);
	uint32_t kept = kept_pages();
	CHECK(kept > CAP, "decay 0: the refaults let the heap keep more than the cap: %u pages", kept);
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < RUNS; k++)
			CHECK(_nd_page_free(two[h][k]) == 0);
	CHECK(a->refault_cur + a->refault_prev == 0, "decay 0: refaults %llu + %llu after passes without any",
	      (unsigned long long)a->refault_cur, (unsigned long long)a->refault_prev);
	free(malloc(2600));
	CHECK(kept_pages() == 0, "decay 0: %u pages kept after the refaults ended (were %u)", kept_pages(), kept);

	char err[256] = "";
	nd_policy_t il;
	CHECK(nd_policy_parse("interleave:0-1", &il, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&il) == 0);
	for (int i = 0; i < N; i++)
		if (!(obj[i] = malloc(16 + xr() % 241)))
			abort();
	for (int i = 0; i < N; i++)
		free(obj[i]);
	_nd_thread_t *t = _nd_tls;
	int nil = 0;
	for (int i = 0; i < t->nph; i++) {
		const _nd_heap_t *h = (const _nd_heap_t *)t->ph[i];
		if (h->node < 0) {
			nil++;
			CHECK(h->epages == 0, "an interleave heap keeps %u pages", h->epages);
		}
	}
	CHECK(nil == 1, "one interleave heap (%d)", nil);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge", "dontneed");
	void *warm = _nd_page_alloc_exact(TN, 1, 1);
	CHECK(warm != NULL);
	CHECK(_nd_page_g.dirty_limit / 4 * 16 == CAP, "the cap: %llu pages", (unsigned long long)(_nd_page_g.dirty_limit / 4 * 16));
	decay0();
	CHECK(_nd_page_free(warm) == 0);
	pin_here();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		decay0_kept();
		int rc = CHECK_DONE();
		fflush(stdout);
		_exit(rc);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the decay-0 child: status %#x", st);
	if (_nd_page_g.decay_ns)
		decay_kept();
	return CHECK_DONE();
}
