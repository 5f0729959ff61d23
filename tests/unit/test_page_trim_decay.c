// SPDX-License-Identifier: MIT
/*
 * Returning memory (issue 13): malloc_trim is exported and gives a slot's
 * dirty free pages back (committed bytes and the resident set drop; it
 * returns 1, then 0 when nothing is left), and the decay
 * (NODALLOC_PURGE_DECAY_MS) purges dirty free pages once they have been
 * free that long: not at the next page-level call right after the free,
 * but at the first one after the delay; pages taken again within it
 * restart the clock instead. Small runs on a CPU-less emulated
 * node (TN) that malloc never touches, below the dirty limit (which would
 * purge at once). No timing is asserted: the "not before" check is made
 * only when the free was less than the delay ago.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "vm_bytes.h"
#include "internal.h"

#define TN 1          /* the node under test: memory, no CPUs */
#define RUNS 48       /* runs of 4 pages: 192 dirty pages, under the dirty limit (1024) */
#define DECAY_MS 700

int malloc_trim(size_t pad);

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static _nd_page_info_t info(void)
{
	_nd_page_info_t in;
	memset(&in, 0, sizeof in);
	CHECK(_nd_page_info(TN, &in) == 0);
	return in;
}

/* RUNS small runs on TN, touched, then freed: dirty free pages. */
static void make_dirty(void)
{
	char *r[RUNS];
	for (int i = 0; i < RUNS; i++) {
		r[i] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(r[i] != NULL);
		if (r[i])
			memset(r[i], 0x5a, 4 * ND_PAGE_SIZE);
	}
	for (int i = 0; i < RUNS; i++)
		CHECK(r[i] && _nd_page_free(r[i]) == 0);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	char ms[16];
	snprintf(ms, sizeof ms, "%d", DECAY_MS);
	_nd_opt_set("purge_decay_ms", ms);
	_nd_opt_set("purge", "dontneed");

	/* trim */
	make_dirty();
	_nd_page_info_t a = info();
	CHECK(a.dirty_pages >= RUNS * 4, "dirty %llu", (unsigned long long)a.dirty_pages);
	long rss0 = (long)statm_pages(1);
	CHECK_EQ(malloc_trim(0), 1);
	_nd_page_info_t b = info();
	long rss1 = (long)statm_pages(1);
	CHECK_EQ(b.dirty_pages, 0);
	CHECK(a.committed_pages - b.committed_pages >= RUNS * 4, "committed %llu -> %llu",
	      (unsigned long long)a.committed_pages, (unsigned long long)b.committed_pages);
	CHECK(rss0 - rss1 >= RUNS * 4 / 2, /* statm's resident count is approximate */ "resident pages %ld -> %ld", rss0, rss1);
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
	CHECK_EQ(malloc_trim(0), 0); /* nothing left to give */

	/* decay: kept right after the free, purged after the delay */
	make_dirty();
	uint64_t t0 = now_ms();
	void *x = _nd_page_alloc_exact(TN, 1, 1); /* a page-level call: checks the decay */
	CHECK(x && _nd_page_free(x) == 0);
	a = info();
	if (now_ms() - t0 < DECAY_MS)
		CHECK(a.dirty_pages >= RUNS * 4, "purged before the delay: dirty %llu",
		      (unsigned long long)a.dirty_pages);
	usleep((DECAY_MS + 100) * 1000);
	CHECK(info().dirty_pages >= RUNS * 4, "purged without a page-level call (no thread)");
	x = _nd_page_alloc_exact(0, 1, 1); /* any node's call checks every slot */
	CHECK(x && _nd_page_free(x) == 0);
	b = info();
	CHECK_EQ(b.dirty_pages, 0);
	CHECK(a.committed_pages - b.committed_pages >= RUNS * 4, "committed %llu -> %llu",
	      (unsigned long long)a.committed_pages, (unsigned long long)b.committed_pages);
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);

	/* reused pages restart the clock: freed, all taken and freed again
	 * within the period, they are kept at the first call after it (the
	 * clock starts again then), and go at the first call a period later,
	 * not taken since. Before, they went at the first call after the
	 * period whether taken again or not (a burst of rounds of threads,
	 * bench wl_burst, faulted them all in again once a period). */
	t0 = now_ms();
	make_dirty();
	make_dirty(); /* takes the dirty pages of the first (packed runs: all of them) */
	bool quick = now_ms() - t0 < DECAY_MS; /* else a call of the second may have seen the period end */
	usleep((DECAY_MS + 100) * 1000);
	x = _nd_page_alloc_exact(0, 1, 1);
	CHECK(x && _nd_page_free(x) == 0);
	if (quick)
		CHECK(info().dirty_pages >= RUNS * 4, "pages taken again within the period purged at its end: dirty %llu",
		      (unsigned long long)info().dirty_pages);
	usleep((DECAY_MS + 100) * 1000);
	x = _nd_page_alloc_exact(0, 1, 1);
	CHECK(x && _nd_page_free(x) == 0);
	CHECK_EQ(info().dirty_pages, 0);
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
