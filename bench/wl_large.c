// SPDX-License-Identifier: MIT
/*
 * Workload 5: large-block churn.
 *
 *   wl_large [iterations [buffers [min-MiB [max-MiB]]]]
 *
 * `buffers` (default 20) slots hold blocks of min..max MiB (default 5..25,
 * uniform, fixed seed). Each iteration picks a slot, allocates a new block
 * of a new size, fills all of it (as C++'s make_unique<char[]>(n) does:
 * every byte written) and only then frees the block the slot held, as an
 * assignment of a new buffer would. So about buffers x 15 MiB stay live and
 * one block is freed per iteration: an allocator that returns every freed
 * block to the kernel and takes fresh pages for the next one pays a purge
 * and a page fault per 4 KiB on every iteration. One iteration = one
 * malloc/free pair.
 */
#include "wl_common.h"

#define SEED 0xD1B54A32D192ED03ULL

int main(int argc, char **argv)
{
	long iters = wl_arg(argc, argv, 1, 500, "iteration count");
	long nbuf = wl_arg(argc, argv, 2, 20, "buffer count");
	long lo = wl_arg(argc, argv, 3, 5, "minimum size (MiB)");
	long hi = wl_arg(argc, argv, 4, 25, "maximum size (MiB)");
	if (hi < lo) {
		fprintf(stderr, "%s: maximum size %ld MiB below the minimum %ld MiB\n", argv[0], hi, lo);
		return 2;
	}
	char **buf = calloc((size_t)nbuf, sizeof *buf);
	if (!buf)
		wl_oom(argv[0], (size_t)nbuf * sizeof *buf);
	uint64_t rng = SEED;
	long end_kb = 0;

	double t0 = wl_now();
	for (long i = 0; i < iters; i++) {
		size_t k = (size_t)(wl_rand(&rng) % (uint64_t)nbuf);
		size_t sz = wl_range(&rng, (size_t)lo << 20, (size_t)hi << 20);
		wl_slot_replace(&buf[k], sz, i, argv[0]);
	}
	double t = wl_now() - t0;
	long bad = wl_slots_free(buf, nbuf);
	end_kb = wl_rss_kb();
	if (bad) {
		fprintf(stderr, "%s: %ld buffers lost their contents\n", argv[0], bad);
		return 1;
	}
	char extra[64];
	snprintf(extra, sizeof extra, "rss_end_kb=%ld", end_kb);
	wl_result("large", 1, iters, t, extra);
	return 0;
}
