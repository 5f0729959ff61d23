// SPDX-License-Identifier: MIT
/*
 * Workload 9: a burst of page-run frees just before a thread exits.
 *
 *   wl_burst [threads [rounds [MiB-per-thread [min-KiB [max-KiB]]]]]
 *
 * `rounds` (default 10) rounds; each starts `threads` (default 1) fresh
 * threads and waits for them. Each thread callocs blocks of min..max KiB
 * (default 64..128: page runs, above every allocator's small classes and
 * below their "return at once" thresholds) until it holds MiB (default
 * 512), writes a byte into every 4 KiB of each, then frees them all and
 * exits; the next round's threads do the same. An allocator that gives the
 * burst back to the kernel when it is freed (or when the thread exits)
 * faults it all in again in the next round; one that keeps it holds it
 * across the gap between rounds. Prints the RSS after the last round.
 * One block = one malloc/free pair.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "wl_common.h"

static size_t bytes_per_thread, lo, hi;
static atomic_long bad;

struct worker {
	pthread_t th;
	uint64_t seed;
	long blocks;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = w->seed;
	size_t cap = bytes_per_thread / lo + 1, n = 0, held = 0;
	unsigned char **blk = malloc(cap * sizeof *blk);
	if (!blk)
		wl_oom("wl_burst", cap * sizeof *blk);
	long local_bad = 0;
	while (held < bytes_per_thread && n < cap) {
		size_t sz = wl_range(&rng, lo, hi);
		unsigned char *p = calloc(1, sz);
		if (!p)
			wl_oom("wl_burst", sz);
		local_bad += p[sz - 1] != 0; /* calloc: reused pages too */
		for (size_t o = 0; o < sz; o += 4096)
			p[o] = (unsigned char)(n + 1);
		p[sz - 1] = (unsigned char)n;
		blk[n++] = p;
		held += sz;
	}
	for (size_t i = 0; i < n; i++) {
		local_bad += blk[i][0] != (unsigned char)(i + 1);
		free(blk[i]);
	}
	free(blk);
	w->blocks = (long)n;
	atomic_fetch_add(&bad, local_bad);
	return NULL;
}

int main(int argc, char **argv)
{
	long nt = wl_arg(argc, argv, 1, 1, "thread count");
	long rounds = wl_arg(argc, argv, 2, 10, "round count");
	long mib = wl_arg(argc, argv, 3, 512, "MiB per thread");
	lo = (size_t)wl_arg(argc, argv, 4, 64, "minimum size (KiB)") << 10;
	hi = (size_t)wl_arg(argc, argv, 5, 128, "maximum size (KiB)") << 10;
	if (hi < lo) {
		fprintf(stderr, "%s: maximum size %zu KiB below the minimum %zu KiB\n", argv[0], hi >> 10, lo >> 10);
		return 2;
	}
	bytes_per_thread = (size_t)mib << 20;
	struct worker *ws = calloc((size_t)nt, sizeof *ws);
	if (!ws)
		wl_oom(argv[0], (size_t)nt * sizeof *ws);
	long ops = 0;
	double t0 = wl_now();
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < nt; i++) {
			ws[i].seed = wl_seed(r, nt, i);
			wl_spawn(&ws[i].th, work, &ws[i], argv[0]);
		}
		for (long i = 0; i < nt; i++) {
			pthread_join(ws[i].th, NULL);
			ops += ws[i].blocks;
		}
	}
	double t = wl_now() - t0;
	long end_kb = wl_rss_kb();
	free(ws);
	if (bad) {
		fprintf(stderr, "%s: %ld blocks read back wrong\n", argv[0], (long)bad);
		return 1;
	}
	char extra[64];
	snprintf(extra, sizeof extra, "rss_end_kb=%ld", end_kb);
	wl_result("burst", (int)nt, ops, t, extra);
	return 0;
}
