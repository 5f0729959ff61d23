// SPDX-License-Identifier: MIT
/* Page level, a heap's slab runs next to its own (_nd_page_alloc_near,
 * task batch28): two heaps that take 16 KiB slab runs in turn get them
 * each in a 32-page group of its own, not interleaved run by run (two
 * threads writing neighbouring runs at once: bench batch2 1.3x
 * mimalloc's time, docs/malloc.md "Threads"). A run at the hint is
 * taken only as a plain run would be: freed (dirty) pages first. On a
 * CPU-less emulated node (TN) that malloc never touches. */
#include "check.h"
#include "internal.h"

#define TN 1
#define RUNS 8 /* a group: 32 pages of 4-page runs */
#define RUN (4 * 4096)

static void check_slot(const char *when)
{
	char err[256] = "";
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s: %s", when, err);
}

static char *near(char **hint)
{
	int got = -1;
	char *p = _nd_page_alloc_near(4, NULL, TN, &got, hint);
	CHECK(p && got == TN, "a run of 4 pages on node %d (got %d)", TN, got);
	CHECK(!((uintptr_t)p & (RUN - 1)), "a slab run is aligned to its size: %p", (void *)p);
	CHECK(*hint == p + RUN, "the hint moves to the run's end");
	return p;
}

static uint64_t dirty(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	return in.dirty_pages;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_threshold", "512K");
	_nd_opt_set("purge", "dontneed");
	_nd_opt_set("purge_decay_ms", "0"); /* nothing purged behind the test's back */
	/* the slot grown first, under a one-page run that keeps it so (a run
	 * of 512 pages, purged when freed: clean) */
	char *pin = _nd_page_alloc_exact(TN, 1, 1), *big = _nd_page_alloc_exact(TN, 512, 1);
	CHECK(pin && big && _nd_page_free(big) == 0);
	CHECK(dirty() == 0, "the grown slot is clean");

	/* two heaps in turn: each one's runs follow one another */
	char *ha = NULL, *hb = NULL, *a[RUNS], *b[RUNS];
	for (int k = 0; k < RUNS; k++) {
		a[k] = near(&ha);
		b[k] = near(&hb);
	}
	check_slot("two heaps' runs");
	for (int k = 1; k < RUNS; k++) {
		CHECK(a[k] == a[0] + (size_t)k * RUN, "heap a's run %d follows its run %d (%p, %p)", k, k - 1,
		      (void *)a[k - 1], (void *)a[k]);
		CHECK(b[k] == b[0] + (size_t)k * RUN, "heap b's run %d follows its run %d (%p, %p)", k, k - 1,
		      (void *)b[k - 1], (void *)b[k]);
	}
	CHECK(a[0] + RUNS * RUN <= b[0] || b[0] + RUNS * RUN <= a[0], "the two groups do not overlap");

	/* a's runs freed (dirty): b's next run goes to them, not to the clean
	 * pages after its own (a plain run would take a dirty block too) */
	for (int k = 0; k < RUNS; k++)
		CHECK(_nd_page_free(a[k]) == 0);
	check_slot("a's runs freed");
	uint64_t d0 = dirty();
	CHECK(d0 >= RUNS * 4, "a's pages stay committed: %llu dirty", (unsigned long long)d0);
	char *n = near(&hb);
	CHECK(n >= a[0] && n < a[0] + RUNS * RUN, "b's next run takes freed pages (%p; a's at %p)", (void *)n,
	      (void *)a[0]);
	CHECK(dirty() == d0 - 4, "4 dirty pages taken: %llu -> %llu", (unsigned long long)d0, (unsigned long long)dirty());
	/* and the run after it follows it, on the dirty pages still free */
	char *n2 = near(&hb);
	CHECK(n2 == n + RUN || dirty() == d0 - 8, "the next one follows it or takes dirty pages too");
	check_slot("dirty runs taken");
	CHECK(_nd_page_free(n) == 0 && _nd_page_free(n2) == 0);
	for (int k = 0; k < RUNS; k++)
		CHECK(_nd_page_free(b[k]) == 0);
	CHECK(_nd_page_free(pin) == 0);
	check_slot("all freed");
	return CHECK_DONE();
}
