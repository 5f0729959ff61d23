/*
 * Purged pages read as zero even when the kernel refuses the purge
 * (issue 12, item 1). madvise(MADV_DONTNEED) fails with EINVAL on mlock'ed
 * pages; the page level used to warn and still mark them clean, so calloc
 * (which skips clean pages) handed the old bytes back. Three paths: a big
 * run purged when freed, small dirty runs purged by a trim pass, and a
 * spread (interleaved) run of the mixed slot. Real topology (the
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

	/* small runs stay dirty at free, a trim pass purges them and merges
	 * the (now clean) blocks; a big run taken from them is not zeroed */
	same = locked_reuse("64 KiB run + trim", 64 << 10, true);
	CHECK(same, "calloc did not reuse the freed 64 KiB run");
	enum { NSMALL = 64 };
	unsigned char *sm[NSMALL];
	for (int i = 0; i < NSMALL; i++) {
		sm[i] = malloc(64 << 10);
		memset(sm[i], 0xCD, 64 << 10);
		CHECK(mlock(sm[i], 64 << 10) == 0);
	}
	for (int i = 0; i < NSMALL; i++)
		free(sm[i]);
	_nd_page_trim(-1);
	unsigned char *big = calloc(1, 2 << 20);
	long bad = nonzero(big, 2 << 20);
	CHECK(bad == 0, "calloc(2 MiB) over trimmed small runs returned %ld old bytes", bad);
	bool over = false;
	for (int i = 0; i < NSMALL; i++)
		over |= sm[i] >= big && sm[i] < big + (2 << 20);
	CHECK(over, "calloc(2 MiB) did not reuse the small runs' pages: the test does not reach the path");
	free(big);

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
