// SPDX-License-Identifier: MIT
/*
 * Benchmark of the page level (not a test: prints figures, asserts
 * nothing). Page-run allocation throughput (1, 4, 64, 512 pages) through
 * _nd_page_alloc (policy + fallback + statistics) and _nd_page_alloc_exact,
 * in two patterns: "pair" (alloc then free at once: the hot reuse path)
 * and "batch" (64 runs live, then freed: splits and merges); plus the
 * cost of a policy decision (_nd_policy_first) for several policies, and
 * a spread run. Pages are not touched: this measures the allocator.
 *
 * usage: bench_page [iterations-scale] [emulated-topology-spec]
 * build: by bench/part.cmake (bench_*.c), or by hand:
 *   cc -O2 -Isrc -Iinclude bench/bench_page.c -Wl,--whole-archive \
 *      build/libnodalloc.a -Wl,--no-whole-archive -lpthread -o bench_page
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uintptr_t sink;

static void bench_pair(const char *what, size_t npages, long iters, bool exact)
{
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		int got;
		void *p = exact ? _nd_page_alloc_exact(0, npages, 1) : _nd_page_alloc(npages, 1, NULL, -1, &got);
		if (!p) {
			printf("  %-6s %4zu pages: allocation failed\n", what, npages);
			return;
		}
		sink += (uintptr_t)p;
		_nd_page_free(p);
	}
	double ns = (now() - t0) / (double)iters;
	printf("  pair   %-6s %4zu pages: %8.1f ns per alloc+free\n", what, npages, ns);
}

#define BATCH 64
static void bench_batch(const char *what, size_t npages, long rounds, bool exact)
{
	void *live[BATCH];
	double t0 = now();
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < BATCH; k++) {
			int got;
			live[k] = exact ? _nd_page_alloc_exact(0, npages, 1) : _nd_page_alloc(npages, 1, NULL, -1, &got);
			if (!live[k]) {
				printf("  %-6s %4zu pages: allocation failed\n", what, npages);
				while (k--)
					_nd_page_free(live[k]);
				return;
			}
		}
		/* free in a scattered order so merges are not trivial */
		for (int k = 0; k < BATCH; k++)
			_nd_page_free(live[(k * 37) % BATCH]);
	}
	double ns = (now() - t0) / (double)(rounds * BATCH);
	printf("  batch  %-6s %4zu pages: %8.1f ns per alloc+free\n", what, npages, ns);
}

static void bench_policy(const char *spec, long iters)
{
	static nd_policy_t pol;
	char err[200];
	const nd_policy_t *pp = NULL;
	if (spec) {
		if (nd_policy_parse(spec, &pol, err, sizeof err) != 0) {
			printf("  policy %-22s: %s\n", spec, err);
			return;
		}
		pp = &pol;
	}
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		_nd_policy_iter_t it;
		sink += (uintptr_t)_nd_policy_first(&it, pp, -1);
	}
	double ns = (now() - t0) / (double)iters;
	printf("  policy %-22s: %8.1f ns per _nd_policy_first\n", spec ? spec : "(current: NULL)", ns);
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 1;
	if (scale < 1)
		scale = 1;
	if (argc > 2) {
		char err[256];
		if (nd_topology_emulate(argv[2], err, sizeof err) != 0) {
			fprintf(stderr, "bench_page: %s\n", err);
			return 2;
		}
	}
	const _nd_topo_t *t = _nd_topo();
	printf("bench_page: %d node(s)%s, purge threshold %lld bytes\n", t->node_limit,
	       t->emulated ? " (emulated)" : "", (long long)_nd_opt_int(ND_OPT_PURGE_THRESHOLD));
	static const size_t sizes[] = { 1, 4, 64, 512 };
	for (unsigned k = 0; k < 4; k++) {
		long it = 200000 * scale / (long)(sizes[k] >= 512 ? 20 : 1);
		bench_pair("policy", sizes[k], it, false);
		bench_pair("exact", sizes[k], it, true);
	}
	for (unsigned k = 0; k < 4; k++) {
		long rounds = 3000 * scale / (long)(sizes[k] >= 512 ? 20 : 1);
		bench_batch("policy", sizes[k], rounds, false);
		bench_batch("exact", sizes[k], rounds, true);
	}
	long pit = 2000000 * scale;
	bench_policy(NULL, pit);
	bench_policy("local", pit);
	bench_policy("preferred:0", pit);
	bench_policy("bind:0", pit);
	bench_policy("interleave:0@2M", pit);
	bench_policy("weighted:0=3@64K", pit);
	/* A 2 MiB spread run at 4 KiB granules: 512 placements + binding. */
	static nd_policy_t il;
	char err[200];
	if (nd_policy_parse("interleave:0", &il, err, sizeof err) == 0) {
		long n = 200 * scale;
		double t0 = now();
		for (long i = 0; i < n; i++) {
			void *p = _nd_page_alloc_spread(512, &il);
			if (!p)
				break;
			_nd_page_free(p);
		}
		printf("  spread 512 pages @4K: %8.1f us per alloc+free\n", (now() - t0) / (double)n / 1000.0);
	}
	return 0;
}
