// SPDX-License-Identifier: MIT
/*
 * The thread cache of large runs (src/large.c, "The thread cache"; task
 * mixed27): a run of 9..64 pages (blocks just above the largest size
 * class) that a thread frees stays with the thread, not given back to
 * the page level (its free pages and dirty pages unchanged), counted out
 * of use, and serves the thread's next allocation of np..np + np/4 pages
 * on its node only; at most 128 runs and 1024 pages (in a block of the
 * thread's own, task mixed28; 128 pages after 64 puts in a row with no
 * take), and twice the node's large pages in use (none kept when the last
 * large blocks go; task mixed29: half dropped a phase end's runs), the
 * oldest going first;
 * given back at the thread's exit, at _nd_large_flush (malloc_trim), past
 * NODALLOC_LARGE_DECAY_MS; calloc clears a kept run; a second free of a kept run is a double free;
 * NODALLOC_LARGE_DECAY_MS=0 turns it off.
 *
 * Emulated machine as test_large_cache's: node 1 has memory and no CPUs,
 * so only this test's explicit allocations touch it.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "stats_fixture.h"

#define KiB ((size_t)1 << 10)
#define TN 1          /* node under test: memory, no CPUs */
#define DELAY_MS 300  /* NODALLOC_LARGE_DECAY_MS of this test */

#define IN_USE(n) (node_stats(n)->bytes_in_use)
#define HITS(n) (node_stats(n)->numa_hit)

static _nd_page_info_t info(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* A freed 40 KiB block stays with the thread: the page level does not see
 * it back; statistics count it out of use; the next block of its size on
 * its node is the same run, not purged; another node never gets it. */
static void kept_and_reused(void)
{
	_nd_large_flush(-1);
	uint64_t u0 = IN_USE(TN);
	unsigned char *p = nd_malloc_onnode(40 * KiB, TN);
	CHECK(p != NULL && nd_node_of(p) == TN);
	memset(p, 0xAB, 40 * KiB);
	_nd_page_info_t a = info(TN);
	nd_free(p);
	_nd_page_info_t b = info(TN);
	CHECK_EQ(b.free_pages, a.free_pages); /* not the page level's again */
	CHECK_EQ(b.dirty_pages, a.dirty_pages);
	CHECK_EQ(IN_USE(TN), u0);
	unsigned char *o = nd_malloc_onnode(40 * KiB, 0);
	CHECK(o && o != p && nd_node_of(o) == 0, "node 1's kept run served node 0");
	nd_free(o);
	uint64_t h0 = HITS(TN);
	unsigned char *q = nd_malloc_onnode(36 * KiB + 1, TN); /* 10 pages: 10..12 fit */
	CHECK(q == p, "reuse: %p, freed %p", (void *)q, (void *)p);
	CHECK(q && q[0] == 0xAB && q[40 * KiB - 1] == 0xAB, "the kept run was purged");
	CHECK_EQ(HITS(TN) - h0, 1);
	CHECK_EQ(IN_USE(TN) - u0, 40 * KiB);
	CHECK_EQ(malloc_usable_size(q), 40 * KiB);
	nd_free(q);
	CHECK_EQ(_nd_large_flush(TN), 40 * KiB);
	/* a block of 9 pages does not take a run of 12 (np/4: 2) */
	unsigned char *r = nd_malloc_onnode(48 * KiB, TN);
	nd_free(r);
	unsigned char *s = nd_malloc_onnode(33 * KiB, TN);
	CHECK(s && s != r, "9 pages from a 12-page run");
	nd_free(s);
	CHECK_EQ(_nd_large_flush(TN), (48 + 36) * KiB);
	CHECK_EQ(_nd_large_flush(TN), 0);
	_nd_page_info_t c = info(TN);
	CHECK_EQ(c.free_pages, a.free_pages + 10);
	CHECK_EQ(IN_USE(TN), u0);
}

/* With no other large block in use on the node, a freed run goes back:
 * the last blocks of a program leave no pages kept. While others are in
 * use, up to twice their pages are kept (task mixed29: with half, a phase
 * end that frees every block of two threads dropped most runs). */
static void last_not_kept(void)
{
	_nd_large_flush(-1);
	_nd_page_info_t a = info(TN);
	void *p = nd_malloc_onnode(40 * KiB, TN), *q = nd_malloc_onnode(64 * KiB, TN);
	CHECK(p && q);
	nd_free(p); /* 16 pages in use: twice is 32, above its 10 */
	CHECK_EQ(_nd_large_flush(TN), 40 * KiB);
	CHECK((p = nd_malloc_onnode(40 * KiB, TN)) != NULL);
	nd_free(p);
	nd_free(q); /* none in use: p goes too */
	CHECK_EQ(_nd_large_flush(TN), 0);
	CHECK_EQ(info(TN).free_pages, a.free_pages);
}

/* A take from the thread cache (the bound is 1024 pages again), then
 * none kept. */
static void take_once(void)
{
	_nd_large_flush(-1);
	void *p = nd_malloc_onnode(40 * KiB, TN);
	nd_free(p);
	CHECK(nd_malloc_onnode(40 * KiB, TN) == p, "a kept run taken");
	nd_free(p);
	CHECK_EQ(_nd_large_flush(TN), 40 * KiB);
}

/* At most 1024 pages (task mixed29; 512 before: 60 runs of 10 pages, a
 * phase end of bench mixed, kept 51): the oldest go back first; 128
 * pages after 64 puts in a row with no take between. */
static void bounded(void)
{
	take_once();
	void *p[70];
	for (int i = 0; i < 60; i++)
		CHECK((p[i] = nd_malloc_onnode(40 * KiB, TN)) != NULL);
	for (int i = 0; i < 60; i++)
		nd_free(p[i]);
	CHECK_EQ(_nd_large_flush(TN), 60 * 40 * KiB); /* 600 pages */
	take_once();
	for (int i = 0; i < 20; i++)
		CHECK((p[i] = nd_malloc_onnode(256 * KiB, TN)) != NULL); /* 64 pages: sixteen fit */
	for (int i = 0; i < 20; i++)
		nd_free(p[i]);
	CHECK_EQ(_nd_large_flush(TN), 16 * 256 * KiB);
	take_once();
	for (int i = 0; i < 70; i++)
		CHECK((p[i] = nd_malloc_onnode(40 * KiB, TN)) != NULL);
	for (int i = 0; i < 70; i++)
		nd_free(p[i]);
	CHECK_EQ(_nd_large_flush(TN), 12 * 40 * KiB); /* past 64 puts: 120 pages */
	/* above 64 pages: never kept */
	void *big = nd_malloc_onnode(256 * KiB + 1, TN);
	nd_free(big);
	CHECK_EQ(_nd_large_flush(TN), 0);
}

/* A burst of 40 frees (a phase end) all kept, and the next 40 blocks of
 * their size served from them: no page-level call either way (the node's
 * free and dirty pages unchanged), every run one of those freed. */
static void burst_kept(void)
{
	take_once();
	void *p[40], *q[40];
	for (int i = 0; i < 40; i++)
		CHECK((p[i] = nd_malloc_onnode(36 * KiB + 1 + (size_t)(i % 3) * KiB, TN)) != NULL); /* 10 pages */
	_nd_page_info_t a = info(TN);
	for (int i = 0; i < 40; i++)
		nd_free(p[i]);
	_nd_page_info_t b = info(TN);
	CHECK_EQ(b.free_pages, a.free_pages);
	CHECK_EQ(b.dirty_pages, a.dirty_pages);
	int found = 0;
	for (int i = 0; i < 40; i++) {
		CHECK((q[i] = nd_malloc_onnode(40 * KiB, TN)) != NULL);
		for (int j = 0; j < 40; j++)
			found += q[i] == p[j];
	}
	CHECK_EQ(found, 40);
	b = info(TN);
	CHECK_EQ(b.free_pages, a.free_pages);
	CHECK_EQ(b.dirty_pages, a.dirty_pages);
	for (int i = 0; i < 40; i++)
		nd_free(q[i]);
	CHECK_EQ(_nd_large_flush(TN), 40 * 40 * KiB);
}

/* calloc from a kept run (malloc's local node, 0): its old bytes cleared. */
static void calloc_kept(void)
{
	void *hold = malloc(1 << 20); /* large pages in use on node 0 */
	unsigned char *p = malloc(40 * KiB);
	CHECK(hold && p);
	memset(p, 0xCD, 40 * KiB);
	free(p);
	unsigned char *q = calloc(1, 40 * KiB);
	CHECK(q == p, "calloc: %p, kept %p", (void *)q, (void *)p);
	long bad = 0;
	for (size_t i = 0; q && i < 40 * KiB; i++)
		bad += q[i] != 0;
	CHECK_EQ(bad, 0);
	free(q);
	free(hold);
	_nd_large_flush(-1);
}

/* Past NODALLOC_LARGE_DECAY_MS a kept run goes back at the thread's next
 * free of such a run. */
static void decays(void)
{
	_nd_large_flush(-1);
	void *p = nd_malloc_onnode(40 * KiB, TN), *q = nd_malloc_onnode(40 * KiB, TN);
	CHECK(p && q);
	nd_free(p);
	sleep_ms(DELAY_MS + 100);
	nd_free(q);
	CHECK_EQ(_nd_large_flush(TN), 40 * KiB);
}

static void *exiting(void *arg)
{
	(void)arg;
	free(malloc(16)); /* a record of its own */
	void *p = nd_malloc_onnode(40 * KiB, TN);
	nd_free(p);
	return p;
}

/* A thread's exit gives its kept runs back to the page level. */
static void thread_exit(void)
{
	_nd_large_flush(-1);
	_nd_page_info_t a = info(TN);
	pthread_t th;
	void *r;
	CHECK(pthread_create(&th, NULL, exiting, NULL) == 0);
	pthread_join(th, &r);
	CHECK(r != NULL);
	_nd_page_info_t b = info(TN);
	CHECK_EQ(b.free_pages, a.free_pages); /* the exited thread's run given back */
	CHECK_EQ(_nd_large_flush(TN), 0);
	char err[256] = "";
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
}

/* Freeing a kept run again (the child, below): a double free. */
static void double_free_child(void)
{
	void *hold = nd_malloc_onnode(1 << 20, TN), *p = nd_malloc_onnode(40 * KiB, TN);
	nd_free(p);
	CHECK_EQ(_nd_large_cached(TN), 0); /* kept by the thread, not the node cache */
	nd_free(p);
	nd_free(hold);
}

/* NODALLOC_LARGE_DECAY_MS=0: a freed run goes back at once. */
static int cache_off(void)
{
	_nd_page_info_t a = info(TN);
	void *p = nd_malloc_onnode(40 * KiB, TN);
	CHECK(p != NULL);
	nd_free(p);
	CHECK_EQ(info(TN).free_pages, a.free_pages);
	CHECK_EQ(_nd_large_flush(TN), 0);
	return CHECK_DONE();
}

int main(int argc, char **argv)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	char ms[16];
	snprintf(ms, sizeof ms, "%d", DELAY_MS);
	if (argc > 1 && strcmp(argv[1], "off") == 0) /* re-executed with NODALLOC_LARGE_DECAY_MS=0 */
		return cache_off();
	_nd_opt_set("large_decay_ms", ms);
	if (argc > 1) { /* "double" */
		double_free_child();
		return 0;
	}
	last_not_kept();
	/* large pages in use on node 1 (1024 + the blocks below), so that
	 * up to 1024 pages are kept */
	void *hold = nd_malloc_onnode(4 << 20, TN);
	CHECK(hold != NULL);
	kept_and_reused();
	bounded();
	burst_kept();
	calloc_kept();
	decays();
	thread_exit();
	nd_free(hold);

	char out[1024];
	int s = run_child(argv[0], (char *[]){ argv[0], "double", NULL }, NULL, NULL, false, out, sizeof out);
	CHECK(WIFSIGNALED(s) && WTERMSIG(s) == SIGABRT, "second free of a kept run: status %d", s);
	CHECK(strstr(out, "already freed") != NULL, "message: %s", out);
	s = run_child(argv[0], (char *[]){ argv[0], "off", NULL }, "NODALLOC_LARGE_DECAY_MS", "0", false, out, sizeof out);
	CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 0, "with NODALLOC_LARGE_DECAY_MS=0: status %d: %s", s, out);
	return CHECK_DONE();
}
