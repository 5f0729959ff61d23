// SPDX-License-Identifier: MIT
/*
 * Workload: churn of mid-size blocks under interleave (task spread64).
 *
 *   wl_spread [iterations [buffers [min-KiB [max-KiB [il]]]]]
 *
 * `buffers` (default 8) slots hold blocks of min..max KiB (default
 * 48..1024: a power of two times 1 to 2, uniform each, fixed seed); each iteration allocates a new
 * block, writes all of it and frees the one its slot held. With "il" the
 * program first sets the kernel policy MPOL_INTERLEAVE over every node and
 * runs itself again, as `numactl --interleave=all` does: the kernel
 * interleaves other allocators' pages, nodalloc inherits the policy
 * (docs/policy.md) and spreads every block above one granule over the
 * nodes. An allocator that gives each freed block back and takes fresh
 * pages for the next pays a purge and a page fault per 4 KiB every time.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "wl_common.h"

#define SEED 0x9E3779B97F4A7C15ULL
#define MPOL_INTERLEAVE_ 3

int main(int argc, char **argv)
{
	long iters = wl_arg(argc, argv, 1, 20000, "iteration count");
	long nbuf = wl_arg(argc, argv, 2, 8, "buffer count");
	long lo = wl_arg(argc, argv, 3, 48, "minimum size (KiB)");
	long hi = wl_arg(argc, argv, 4, 1024, "maximum size (KiB)");
	int il = argc > 5 && strcmp(argv[5], "il") == 0;
	if (hi < lo || lo < 1) {
		fprintf(stderr, "%s: bad sizes %ld..%ld KiB\n", argv[0], lo, hi);
		return 2;
	}
	if (il && !getenv("WL_SPREAD_SET")) {
		unsigned long mask[16];
		memset(mask, 0xff, sizeof mask); /* every node: the kernel keeps the online ones */
		if (syscall(SYS_set_mempolicy, MPOL_INTERLEAVE_, mask, sizeof mask * 8) != 0) {
			perror("set_mempolicy");
			return 1;
		}
		setenv("WL_SPREAD_SET", "1", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	char **buf = calloc((size_t)nbuf, sizeof *buf);
	if (!buf)
		wl_oom(argv[0], (size_t)nbuf * sizeof *buf);
	uint64_t rng = SEED;
	int doublings = 0;
	while ((lo << (doublings + 1)) <= hi)
		doublings++;

	double t0 = wl_now();
	for (long i = 0; i < iters; i++) {
		size_t k = (size_t)(wl_rand(&rng) % (uint64_t)nbuf);
		size_t b = (size_t)lo << (10 + wl_rand(&rng) % (uint64_t)(doublings + 1));
		size_t sz = b + (size_t)(wl_rand(&rng) % b);
		if (sz > (size_t)hi << 10)
			sz = (size_t)hi << 10;
		wl_slot_replace(&buf[k], sz, i, argv[0]);
	}
	double t = wl_now() - t0;
	long bad = wl_slots_free(buf, nbuf);
	if (bad) {
		fprintf(stderr, "%s: %ld buffers lost their contents\n", argv[0], bad);
		return 1;
	}
	char extra[64];
	snprintf(extra, sizeof extra, "policy=%s", il ? "interleave" : "default");
	wl_result("spread", 1, iters, t, extra);
	return 0;
}
