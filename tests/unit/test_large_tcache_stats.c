// SPDX-License-Identifier: MIT
/*
 * The thread cache's runs (src/large.c, "The thread cache") in the
 * statistics (audit27; docs/malloc.md, mallinfo2's table): a run a thread
 * keeps is free, not in use, and its pages stay committed. So
 * nd_stats' bytes_in_use drops by it and bytes_committed does not;
 * mallinfo2's uordblks drops, fordblks rises, ordblks (cached large runs,
 * freed, kept for reuse) and keepcost (what malloc_trim releases without
 * looking into slabs) count every thread's kept runs: malloc_trim gives
 * back every live thread's (tcsteal28). Before, ordblks and keepcost left
 * them out.
 *
 * A fork's child counts the other threads' kept runs too, and its
 * malloc_trim gives them back (fork takes every record's lblk_lock, so
 * their blocks are whole in the child).
 *
 * Also: NODALLOC_LARGE_DECAY_MS past the thread cache's clock (26 days:
 * 3e9 ms here) keeps runs, as a long decay should; before, every kept
 * run read as expired at the next put and went back.
 *
 * Emulated machine as test_large_tcache's: node 1 has memory and no CPUs,
 * so only this test's explicit allocations touch it.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "stats_fixture.h"

#define KiB ((size_t)1 << 10)
#define TN 1

static _nd_page_info_t info(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

/* keepcost less the slots' dirty free pages (which other allocations
 * take and leave): the cached and kept runs' part */
static size_t runs_kept(const struct mallinfo2 *m)
{
	uint64_t dirty = 0;
	for (int n = -1; n <= TN; n++) /* -1: the mixed slot */
		dirty += info(n).dirty_pages << ND_PAGE_SHIFT;
	return m->keepcost - (size_t)dirty;
}

/* Ten 40 KiB blocks freed: all kept by the thread (the node's free pages
 * unchanged), counted free and committed. */
static void kept_counted(void)
{
	nd_free(nd_malloc_onnode(40 * KiB, TN)); /* the thread's cache made (metadata: arena) */
	_nd_large_flush(-1);
	void *p[10];
	for (int i = 0; i < 10; i++)
		CHECK((p[i] = nd_malloc_onnode(40 * KiB, TN)) != NULL);
	struct mallinfo2 a = mallinfo2();
	uint64_t in_use = node_stats(TN)->bytes_in_use, committed = node_stats(TN)->bytes_committed;
	uint64_t free_pages = info(TN).free_pages;
	for (int i = 0; i < 10; i++)
		nd_free(p[i]);
	struct mallinfo2 b = mallinfo2();
	CHECK_EQ(info(TN).free_pages, free_pages); /* every run kept */
	CHECK_EQ(in_use - node_stats(TN)->bytes_in_use, 400 * KiB);
	CHECK_EQ(node_stats(TN)->bytes_committed, committed);
	CHECK_EQ(a.uordblks - b.uordblks, 400 * KiB);
	CHECK_EQ(b.arena, a.arena);
	CHECK_EQ(b.fordblks - a.fordblks, 400 * KiB);
	CHECK(b.ordblks == a.ordblks + 10, "ordblks %zu -> %zu: ten runs kept", a.ordblks, b.ordblks);
	CHECK(b.keepcost == a.keepcost + 400 * KiB, "keepcost %zu -> %zu: 400 KiB kept", a.keepcost, b.keepcost);
	CHECK_EQ(runs_kept(&b), 400 * KiB);
}

static int go[2], done[2];

/* Keeps five 48 KiB runs, reports its own keepcost's rise, waits. */
static void *keeper(void *arg)
{
	(void)arg;
	void *p[5];
	for (int i = 0; i < 5; i++)
		CHECK((p[i] = nd_malloc_onnode(48 * KiB, TN)) != NULL);
	size_t k0 = mallinfo2().keepcost;
	for (int i = 0; i < 5; i++)
		nd_free(p[i]);
	size_t rise = mallinfo2().keepcost - k0;
	CHECK(write(done[1], &rise, sizeof rise) == sizeof rise);
	char c;
	CHECK(read(go[0], &c, 1) == 1);
	return NULL;
}

/* Another thread's kept runs: in ordblks and keepcost; malloc_trim (the
 * caller's, the child's of a fork) gives them back while it lives. */
static void others_kept(void)
{
	CHECK(pipe(go) == 0 && pipe(done) == 0);
	struct mallinfo2 a = mallinfo2();
	size_t ka = runs_kept(&a);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, keeper, NULL) == 0);
	size_t rise = 0;
	CHECK(read(done[0], &rise, sizeof rise) == sizeof rise);
	CHECK_EQ(rise, 5 * 48 * KiB); /* its own keepcost */
	struct mallinfo2 b = mallinfo2();
	CHECK(b.ordblks == a.ordblks + 5, "ordblks %zu -> %zu: the other thread's five", a.ordblks, b.ordblks);
	size_t kb = runs_kept(&b);
	CHECK(kb == ka + 5 * 48 * KiB, "keepcost's runs %zu -> %zu: the other thread's too", ka, kb);
	/* a fork's child: the other thread's runs counted, and its trim takes them */
	pid_t pid = fork();
	if (pid == 0) {
		struct mallinfo2 f = mallinfo2();
		bool ok = f.ordblks == b.ordblks && runs_kept(&f) == kb;
		malloc_trim(0);
		struct mallinfo2 g = mallinfo2();
		_exit(ok && g.ordblks == 0 && runs_kept(&g) == 0 ? 0 : 1);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's ordblks and keepcost: every thread's runs, none after its trim");
	malloc_trim(0);
	struct mallinfo2 c = mallinfo2();
	CHECK(c.ordblks == 0, "after malloc_trim: %zu cached runs (the other thread's 5 given back)", c.ordblks);
	CHECK(runs_kept(&c) == 0, "after malloc_trim: keepcost's runs %zu", runs_kept(&c));
	CHECK(write(go[1], "x", 1) == 1);
	pthread_join(th, NULL);
	CHECK_EQ(mallinfo2().ordblks, 0);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("large_decay_ms", "3000000000"); /* 34.7 days */
	/* large pages in use on node 1, so that up to 512 pages are kept */
	void *hold = nd_malloc_onnode(4 << 20, TN);
	CHECK(hold != NULL);
	kept_counted();
	others_kept();
	nd_free(hold);
	return CHECK_DONE();
}
