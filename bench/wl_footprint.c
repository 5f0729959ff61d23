// SPDX-License-Identifier: MIT
/*
 * Workload 4: memory footprint (peak RSS).
 *
 *   wl_footprint [objects]
 *
 * Phase 1 allocates `objects` (default 300000) objects of mixed sizes (85%
 * 16..256 B, 14% 257..2048 B, 1% 2 KiB..64 KiB) and fills them. Phase 2
 * frees 90% of them at random, leaving a sparse, fragmented heap. Phase 3
 * allocates as many bytes again with a different size mix (uniform 32..1024
 * B), which an allocator can serve from the holes only if it reuses freed
 * memory across size classes or returns empty pages. The runner takes the
 * peak RSS of the whole process; the program also prints the RSS after each
 * phase (KiB) and at the end, after freeing everything.
 */
#include "wl_common.h"

static size_t size_mix(uint64_t *rng)
{
	return wl_tier_size(rng, 85, 14, 65536);
}

int main(int argc, char **argv)
{
	long n = wl_arg(argc, argv, 1, 300000, "object count");
	char **obj = calloc((size_t)n * 2, sizeof *obj);
	if (!obj)
		wl_oom(argv[0], (size_t)n * 2 * sizeof *obj);
	uint64_t rng = 0x2545F4914F6CDD1DULL;
	long mallocs = 0;
	size_t live = 0, freed = 0;

	double t0 = wl_now();
	for (long i = 0; i < n; i++) {
		size_t sz = size_mix(&rng);
		obj[i] = malloc(sz);
		if (!obj[i])
			wl_oom(argv[0], sz);
		memset(obj[i], (int)(i & 0xff), sz);
		live += sz;
		mallocs++;
	}
	long rss1 = wl_rss_kb();
	for (long i = 0; i < n; i++) {
		if (wl_rand(&rng) % 10 != 0) {
			free(obj[i]);
			obj[i] = NULL;
		}
	}
	long rss2 = wl_rss_kb();
	/* re-allocate about as many bytes as phase 2 freed (~90% of live) */
	freed = live - live / 10;
	long m = n;
	for (size_t done = 0; done < freed && m < 2 * n; m++) {
		size_t sz = wl_range(&rng, 32, 1024);
		obj[m] = malloc(sz);
		if (!obj[m])
			wl_oom(argv[0], sz);
		memset(obj[m], (int)(m & 0xff), sz);
		done += sz;
		mallocs++;
	}
	long rss3 = wl_rss_kb();
	double t = wl_now() - t0;
	for (long i = 0; i < m; i++)
		free(obj[i]);
	long rss4 = wl_rss_kb();
	free(obj);
	char extra[160];
	snprintf(extra, sizeof extra, "live_kb=%zu rss_full_kb=%ld rss_sparse_kb=%ld rss_refill_kb=%ld rss_end_kb=%ld",
		 live / 1024, rss1, rss2, rss3, rss4);
	wl_result("footprint", 1, mallocs, t, extra);
	return 0;
}
