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
 *
 * WL_ANATOMY=1 also prints what the refill's end, the peak, consists of,
 * for any allocator: per size band the bytes asked for, the usable bytes
 * (malloc_usable_size: rounding) and the pages holding a live object, then
 * the resident pages holding none (/proc/self/pagemap), per mapping. Not
 * for the bench: it runs after the timed phases and the phases' RSS, but
 * its 32 MiB table raises the process's peak RSS (ru_maxrss).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl_common.h"

#define WL_SEED 0x2545F4914F6CDD1DULL

static size_t size_mix(uint64_t *rng)
{
	return wl_tier_size(rng, 85, 14, 65536);
}

/* ---- WL_ANATOMY ---- */
#define AN_BANDS 5
static const char *const an_name[AN_BANDS] = { "16-256", "257-1024", "257-1024 in a slot above 1 KiB",
					       "1025-2048", "2049-" };
#define AN_SLOTS (1u << 22) /* open hash of the pages holding a live object: page number + 1 */
static uint64_t *an_tab;

static unsigned an_band(size_t req, size_t usable)
{
	if (req <= 256)
		return 0;
	if (req <= 1024)
		return usable > 1024 ? 2 : 1;
	return req <= 2048 ? 3 : 4;
}

/* Whether page pg is in the table; add: put it in. */
static bool an_page(uint64_t pg, bool add)
{
	for (uint32_t h = (uint32_t)(pg * 0x9E3779B97F4A7C15ull >> 42);; h = (h + 1) & (AN_SLOTS - 1)) {
		if (an_tab[h] == pg + 1)
			return true;
		if (!an_tab[h]) {
			if (add)
				an_tab[h] = pg + 1;
			return false;
		}
	}
}

/* obj[0, m) after the refill; the sizes asked for come from replaying
 * main's random sequence (nothing recorded in the timed loops). */
static void anatomy(char **obj, long n, long m, size_t objbytes)
{
	uint64_t rng = WL_SEED;
	double asked[AN_BANDS] = { 0 }, usable[AN_BANDS] = { 0 }, pages[AN_BANDS] = { 0 };
	an_tab = mmap(NULL, AN_SLOTS * sizeof *an_tab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int pm = open("/proc/self/pagemap", O_RDONLY);
	FILE *f = fopen("/proc/self/maps", "r");
	if (an_tab == MAP_FAILED || pm < 0 || !f) {
		fprintf(stderr, "wl_footprint: WL_ANATOMY: no table, pagemap or maps\n");
		exit(1);
	}
	if (objbytes / 4096 + (size_t)m * 2 > AN_SLOTS / 2) {
		fprintf(stderr, "wl_footprint: WL_ANATOMY: at most %u objects\n", AN_SLOTS / 8);
		exit(1);
	}
	for (uintptr_t a = (uintptr_t)obj; a < (uintptr_t)obj + objbytes; a += 4096)
		an_page(a >> 12, true); /* the pointer array: counted in no band */
	for (long i = 0; i < m; i++) {
		if (i == n)
			for (long k = 0; k < n; k++) /* phase 2's draws */
				wl_rand(&rng);
		size_t req = i < n ? size_mix(&rng) : wl_range(&rng, 32, 1024);
		if (!obj[i])
			continue;
		size_t u = malloc_usable_size(obj[i]);
		unsigned b = an_band(req, u);
		asked[b] += req;
		usable[b] += u;
		for (uintptr_t pg = (uintptr_t)obj[i] >> 12; pg <= ((uintptr_t)obj[i] + u - 1) >> 12; pg++)
			if (!an_page(pg, true))
				pages[b] += 4096;
	}
	printf("ANATOMY band asked_kb usable_kb pages_kb (pages holding a live object, first object's band)\n");
	double sum[3] = { 0 };
	for (unsigned b = 0; b < AN_BANDS; b++) {
		printf("ANATOMY %-31s %8.0f %8.0f %8.0f\n", an_name[b], asked[b] / 1024, usable[b] / 1024, pages[b] / 1024);
		sum[0] += asked[b], sum[1] += usable[b], sum[2] += pages[b];
	}
	printf("ANATOMY %-31s %8.0f %8.0f %8.0f\n", "all", sum[0] / 1024, sum[1] / 1024, sum[2] / 1024);
	char line[512];
	long other = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || lo == (uintptr_t)an_tab)
			continue; /* the anatomy's own table */
		long res = 0;
		for (uintptr_t a = lo; a < hi;) { /* 512 pagemap entries a read */
			uint64_t e[512];
			size_t want = (hi - a) >> 12 < 512 ? (hi - a) >> 12 : 512;
			ssize_t got = pread(pm, e, want * sizeof *e, (off_t)(a >> 12) * 8);
			if (got <= 0)
				break;
			for (size_t k = 0; k < (size_t)got / sizeof *e; k++, a += 4096)
				res += (e[k] >> 63) && !an_page(a >> 12, false);
		}
		other += res;
		line[strcspn(line, "\n")] = 0;
		if (res >= 64)
			printf("ANATOMY resident, no live object: %6ld KiB in %s\n", res * 4, line);
	}
	printf("ANATOMY resident, no live object: %ld KiB in all\n", other * 4);
	fclose(f);
	close(pm);
	munmap(an_tab, AN_SLOTS * sizeof *an_tab);
}

int main(int argc, char **argv)
{
	long n = wl_arg(argc, argv, 1, 300000, "object count");
	char **obj = calloc((size_t)n * 2, sizeof *obj);
	if (!obj)
		wl_oom(argv[0], (size_t)n * 2 * sizeof *obj);
	uint64_t rng = WL_SEED;
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
	double t1 = wl_now();
	long rss1 = wl_rss_kb();
	for (long i = 0; i < n; i++) {
		if (wl_rand(&rng) % 10 != 0) {
			free(obj[i]);
			obj[i] = NULL;
		}
	}
	double t2 = wl_now();
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
	double t3 = wl_now();
	long rss3 = wl_rss_kb();
	double t = wl_now() - t0;
	if (getenv("WL_ANATOMY"))
		anatomy(obj, n, m, (size_t)n * 2 * sizeof *obj);
	for (long i = 0; i < m; i++)
		free(obj[i]);
	long rss4 = wl_rss_kb();
	free(obj);
	char extra[256];
	snprintf(extra, sizeof extra,
		 "live_kb=%zu rss_full_kb=%ld rss_sparse_kb=%ld rss_refill_kb=%ld rss_end_kb=%ld"
		 " alloc_ms=%.2f free_ms=%.2f refill_ms=%.2f",
		 live / 1024, rss1, rss2, rss3, rss4, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3);
	wl_result("footprint", 1, mallocs, t, extra);
	return 0;
}
