// SPDX-License-Identifier: MIT
/*
 * The host's share of the large-block row: the first touch of fresh
 * anonymous memory, no allocator involved (mmap straight from the kernel).
 *
 *   wl_touch [MiB [huge]]
 *
 * Maps MiB (default 400) aligned to 2 MiB, advises it MADV_HUGEPAGE when
 * huge is 1 (default) or MADV_NOHUGEPAGE when 0, writes every byte once,
 * and reports the time of advice and writes. On this VM (free page
 * reporting of the virtio balloon: freed blocks of 8 MiB go back to the
 * host after about 2 s) the huge page case is bimodal: fast when the
 * kernel's free huge blocks were freed a moment ago, 10-30x slower after a
 * pause (the host faults the reported block in again under the guest's
 * zeroing), while 4 KiB pages cost the same either way. wl_large under
 * nodalloc (MADV_HUGEPAGE on big runs) inherits the two modes; run.sh's
 * BENCH_SETTLE runs this before every timed run so that every allocator
 * starts from the same warm state. docs/benchmarks.md has the figures.
 */
#include <sys/mman.h>

#include "wl_common.h"

#define HUGE ((size_t)2 << 20)

int main(int argc, char **argv)
{
	size_t len = (size_t)wl_arg(argc, argv, 1, 400, "size (MiB)") << 20;
	int huge = argc > 2 ? argv[2][0] != '0' : 1;
	double t0 = wl_now();
	char *m = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		wl_oom(argv[0], len + HUGE);
	char *p = (char *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	if (madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0)
		fprintf(stderr, "%s: madvise: %s (the kernel's default applies)\n", argv[0], strerror(errno));
	memset(p, 1, len);
	double t = wl_now() - t0;
	long rss = wl_rss_kb();
	munmap(m, len + HUGE);
	char extra[64];
	snprintf(extra, sizeof extra, "huge=%d rss_kb=%ld", huge, rss);
	wl_result("touch", 1, (long)(len >> 20), t, extra);
	return 0;
}
