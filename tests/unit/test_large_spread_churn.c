// SPDX-License-Identifier: MIT
/*
 * Adversarial churn of spread runs (task audit26) through the spread
 * cache (large.c: reuse whole or by prefix, tails cached again, joins of
 * neighbours, shedding, decay) by threads of different policies at once,
 * while a trimmer thread trims as malloc_trim does and the main thread
 * forks children that allocate, check and trim on their own.
 *
 * Each worker has its own spreading policy (interleave at 4 KiB, at
 * 64 KiB, weighted 3:1) and LIVE blocks of 40 KiB - 2 MiB it frees,
 * allocates, grows and shrinks by realloc; every block is checked:
 * its contents (a stamp on each page: no block handed to two owners, no
 * page lost by a realloc) and, unless a realloc kept a one-node block's
 * node (docs/policy.md), its layout: every page on the node its policy
 * gives that page's granule for some phase of the policy (a cached run
 * laid out for another policy, or another granule, is never served). After: the large-run counts back to none in use and none
 * cached, the page level's invariants. Runs in make tsan too (part.cmake).
 *
 * Emulated machine: two 1 GiB nodes, a CPU each.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define KiB ((size_t)1 << 10)
enum { THREADS = 3, ROUNDS = 500, LIVE = 6, FORKS = 4 };
static const char *const specs[THREADS] = { "interleave:0,1", "interleave:0,1@64K", "weighted:0=3,1=1" };
static nd_policy_t pols[THREADS];
static int stop;
static long bad_data[THREADS], bad_layout[THREADS], failed[THREADS], reused[THREADS];

static void trim_all(void)
{
	_nd_heap_trim_self(false);
	_nd_heap_trim_parked();
	_nd_large_flush(-1);
	_nd_page_trim(-1);
}

/* Period of pol's granule pattern (in granules). */
static uint64_t period(const nd_policy_t *pol)
{
	if (pol->mode == ND_POLICY_INTERLEAVE)
		return (uint64_t)nd_nodemask_count(&pol->nodes);
	uint64_t w = 0;
	for (int n = 0; n < ND_MAX_NODES; n++)
		if (nd_nodemask_isset(&pol->nodes, n))
			w += pol->weights[n];
	return w;
}

/* Every page of block p (n bytes, a spread run: more than one granule)
 * on the node pol gives its granule, from some phase. */
static bool laid_out(const char *p, size_t n, const nd_policy_t *pol)
{
	size_t gp = (size_t)1 << pol->granularity_shift; /* pages */
	size_t np = n / ND_PAGE_SIZE;
	if (np <= gp)
		return true; /* one granule: a plain run of one node */
	uint64_t per = period(pol);
	for (uint64_t g0 = 0; g0 < per; g0++) {
		bool ok = true;
		for (size_t k = 0; ok && k < np; k++)
			ok = nd_node_of(p + k * ND_PAGE_SIZE) == _nd_policy_node_for_granule(pol, g0 + k / gp);
		if (ok)
			return true;
	}
	return false;
}

/* the pages that start in [from, to) */
static void stamp(unsigned char *p, size_t from, size_t to, unsigned char id)
{
	for (size_t o = ND_ALIGN_UP(from, ND_PAGE_SIZE); o < to; o += ND_PAGE_SIZE)
		p[o] = (unsigned char)(id ^ (o >> 12));
}

static bool stamped(const unsigned char *p, size_t n, unsigned char id)
{
	for (size_t o = 0; o < n; o += ND_PAGE_SIZE)
		if (p[o] != (unsigned char)(id ^ (o >> 12)))
			return false;
	return true;
}

static void *worker(void *arg)
{
	int id = (int)(uintptr_t)arg;
	unsigned char tag = (unsigned char)(0x40 + id);
	const nd_policy_t *pol = &pols[id];
	if (nd_set_policy(pol) != 0) /* no CHECK here: its counters are main's */
		failed[id]++;
	unsigned char *blk[LIVE] = { 0 };
	size_t len[LIVE] = { 0 };
	bool spread[LIVE] = { 0 }; /* laid out by the policy (else one node's) */
	uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(id + 7);
	for (int r = 0; r < ROUNDS; r++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		int k = (int)(rng % LIVE);
		size_t n = (40 * KiB) << ((rng >> 8) % 6); /* 40 KiB - 1.25 MiB */
		n += ((rng >> 16) % 64) * 4 * KiB + (rng >> 24) % 4096;
		if (blk[k] && !stamped(blk[k], len[k], tag))
			bad_data[id]++;
		if (blk[k] && (rng >> 40) % 3 == 0) { /* realloc: grow or shrink */
			/* a block of one node (one granule or less) keeps its
			 * node (docs/policy.md); a spread one is reallocated
			 * under the policy */
			spread[k] = _nd_page_desc(blk[k])->flags & ND_PGF_PLACED;
			unsigned char *q = nd_realloc(blk[k], n);
			if (!q) {
				failed[id]++;
				continue;
			}
			size_t kept = len[k] < n ? len[k] : n;
			if (!stamped(q, kept, tag))
				bad_data[id]++;
			blk[k] = q;
			stamp(q, kept, n, tag);
			len[k] = n;
		} else {
			nd_free(blk[k]);
			blk[k] = nd_malloc(n);
			if (!blk[k]) {
				failed[id]++;
				continue;
			}
			len[k] = n;
			spread[k] = true;
			reused[id] += (long)(_nd_page_desc(blk[k])->user >> 63); /* large.c USER_REUSED: from a cache */
			stamp(blk[k], 0, n, tag);
		}
		if (spread[k] && !laid_out((char *)blk[k], len[k] & ~(ND_PAGE_SIZE - 1), pol))
			bad_layout[id]++;
	}
	for (int k = 0; k < LIVE; k++) {
		if (blk[k] && !stamped(blk[k], len[k], tag))
			bad_data[id]++;
		nd_free(blk[k]);
	}
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		trim_all();
		usleep(2000);
	}
	return NULL;
}

/* A child: spread blocks of its own under each policy, checked, freed,
 * trimmed. Exit status: failures. */
static int child(void)
{
	int bad = 0;
	for (int t = 0; t < THREADS; t++) {
		unsigned char *b[4];
		for (int i = 0; i < 4; i++) {
			size_t n = (64 * KiB) << i;
			b[i] = nd_malloc_policy(n, &pols[t]);
			if (!b[i]) {
				bad++;
				continue;
			}
			stamp(b[i], 0, n, 0x11);
			bad += !laid_out((char *)b[i], n, &pols[t]);
		}
		for (int i = 0; i < 4; i++) {
			bad += b[i] && !stamped(b[i], (64 * KiB) << i, 0x11);
			nd_free(b[i]);
		}
	}
	/* no page check: runs other threads had in limbo at the fork
	 * (being placed or given back) stay so in the child */
	trim_all();
	return bad;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("large_decay_ms", "20"); /* decay passes during the churn too */
	for (int t = 0; t < THREADS; t++)
		CHECK(nd_policy_parse(specs[t], &pols[t], err, sizeof err) == 0, "%s: %s", specs[t], err);
	pthread_t w[THREADS], tr;
	CHECK(pthread_create(&tr, NULL, trimmer, NULL) == 0);
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&w[i], NULL, worker, (void *)i) == 0);
	for (int f = 0; f < FORKS; f++) {
		usleep(20000);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			_exit(child());
		int st = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork %d: child status %#x", f, st);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(tr, NULL);
	for (int i = 0; i < THREADS; i++) {
		CHECK(bad_data[i] == 0, "%s: %ld blocks lost or changed", specs[i], bad_data[i]);
		CHECK(bad_layout[i] == 0, "%s: %ld blocks not laid out by their policy", specs[i], bad_layout[i]);
		CHECK(failed[i] == 0, "%s: %ld allocations failed", specs[i], failed[i]);
	}
	long all = reused[0] + reused[1] + reused[2];
	CHECK(all >= THREADS * ROUNDS / 10, "%ld blocks from the caches", all);
	printf("%ld of about %d blocks from the caches\n", all, THREADS * ROUNDS * 2 / 3);
	trim_all();
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	CHECK(in_use == 0 && cached == 0 && runs == 0, "large runs: %llu in use, %llu cached in %llu runs",
	      (unsigned long long)in_use, (unsigned long long)cached, (unsigned long long)runs);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
