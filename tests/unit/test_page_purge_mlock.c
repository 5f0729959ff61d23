// SPDX-License-Identifier: MIT
/*
 * Purged pages read as zero even when the kernel refuses the purge
 * (issue 12, item 1). madvise(MADV_DONTNEED) fails with EINVAL on mlock'ed
 * pages; the page level used to warn and still mark them clean, so calloc
 * (which skips clean pages) handed the old bytes back. Paths: the issue's
 * reproduction through malloc/calloc, then at the page level a big run
 * purged when freed, small dirty runs purged by a trim pass and reused as
 * one big run, and a spread (interleaved) run of the mixed slot. Real topology (the
 * machine's), so the node-slot path also rebinds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "check.h"
#include "internal.h"

static long nonzero(const unsigned char *p, size_t n)
{
	long bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != 0;
	return bad;
}

/* malloc n, fill, mlock, free (then trim if asked), calloc n: all zero.
 * Returns whether calloc got the same address (the stale path was hit). */
static bool locked_reuse(const char *what, size_t n, bool trim)
{
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	memset(p, 0xAB, n);
	int r = mlock(p, n);
	CHECK(r == 0, "%s: mlock failed (errno %d): raise RLIMIT_MEMLOCK", what, errno);
	free(p);
	if (trim)
		_nd_page_trim(-1);
	unsigned char *q = calloc(1, n);
	CHECK(q != NULL);
	long bad = nonzero(q, n);
	CHECK(bad == 0, "%s: calloc(%zu) returned %ld old bytes (same address: %d)", what, n, bad, q == p);
	bool same = q == p;
	munlock(q, n);
	free(q);
	return same;
}

int main(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	setrlimit(RLIMIT_MEMLOCK, &rl); /* root: fine; else the default 8 MiB will do */

	/* big run (>= 1 MiB threshold): purged at free */
	bool same = locked_reuse("2 MiB run", 2 << 20, false);
	CHECK(same, "calloc did not reuse the freed 2 MiB run: the test does not reach the purge path");
	/* the exact reproduction, and again (the fresh range is reused) */
	locked_reuse("2 MiB run again", 2 << 20, false);

	/* The page level itself (malloc may keep freed large runs in a cache
	 * in front of it): a big run purged when freed, and small runs left
	 * dirty, trimmed (purged, merged) and taken again as one big run. */
	int node = _nd_topo()->cpu_mem_node[_nd_topo_cpu()];
	char *r = _nd_page_alloc_exact(node, 512, 1);
	CHECK(r != NULL);
	memset(r, 0xEF, 2 << 20);
	CHECK(mlock(r, 2 << 20) == 0);
	CHECK(_nd_page_free(r) == 0);
	char *r2 = _nd_page_alloc_exact(node, 512, 1);
	CHECK(r2 == r, "the page level did not reuse the freed run");
	_nd_page_zero(r2, 2 << 20);
	long bad = nonzero((unsigned char *)r2, 2 << 20);
	CHECK(bad == 0, "page run: %ld old bytes after a refused purge", bad);
	munlock(r2, 2 << 20);
	CHECK(_nd_page_free(r2) == 0);

	enum { NSMALL = 64 };
	char *sm[NSMALL];
	for (int i = 0; i < NSMALL; i++) {
		sm[i] = _nd_page_alloc_exact(node, 16, 1);
		memset(sm[i], 0xCD, 64 << 10);
		CHECK(mlock(sm[i], 64 << 10) == 0);
	}
	for (int i = 0; i < NSMALL; i++)
		CHECK(_nd_page_free(sm[i]) == 0);
	_nd_page_trim(-1);
	char *big = _nd_page_alloc_exact(node, 512, 1);
	CHECK(big != NULL);
	_nd_page_zero(big, 2 << 20);
	bad = nonzero((unsigned char *)big, 2 << 20);
	CHECK(bad == 0, "run over trimmed small runs: %ld old bytes", bad);
	bool over = false;
	for (int i = 0; i < NSMALL; i++)
		over |= sm[i] >= big && sm[i] < big + (2 << 20);
	CHECK(over, "the big run did not reuse the small runs' pages: the test does not reach the path");
	for (int i = 0; i < NSMALL; i++)
		if (sm[i] >= big && sm[i] < big + (2 << 20))
			munlock(sm[i], 64 << 10);
	CHECK(_nd_page_free(big) == 0);

	/* spread run in the mixed slot (interleave over the one node, 4 KiB) */
	nd_policy_t pol;
	char err[128];
	CHECK(nd_policy_parse("interleave:0@4K", &pol, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&pol) == 0);
	same = locked_reuse("256 KiB spread run", 256 << 10, false);
	CHECK(same, "calloc did not reuse the freed spread run");
	locked_reuse("4 MiB spread run", 4 << 20, false);
	CHECK(nd_set_policy(NULL) == 0);

	/* the slots' bookkeeping is still consistent */
	char e[200];
	CHECK(_nd_page_check(0, e, sizeof e) == 0, "%s", e);
	CHECK(_nd_page_check(-1, e, sizeof e) == 0, "%s", e);
	return CHECK_DONE();
}
