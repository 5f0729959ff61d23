// SPDX-License-Identifier: MIT
/*
 * Trust (task trust27): a process that fills a node falls back by the
 * fallback list, or under bind gets NULL with ENOMEM, and never crashes;
 * the caches that hold runs of the full node are flushed before it gives
 * up. Emulated: node 0 (CPUs, 96 MiB) and node 1 (CPU-less, 32 MiB,
 * hard capacity); each case runs in a child of its own (fresh caches; a
 * crash is a failed case, not a dead test):
 * - fill: bind:1 fills node 1 with large blocks, then small ones, until
 *   NULL + ENOMEM; most of the node was given;
 * - node_cache, thread_cache, spread_cache: node 1 full but for what one
 *   cache holds (its runs freed dirty into it); a bind:1 block that needs
 *   those pages is served (_nd_large_flush of the node before failing:
 *   without it thread_cache fails, without its flush of the spread lists
 *   spread_cache; node_cache passes either way, by the miss's shed);
 * - fallback: preferred:1 on the full node, caches holding node 1 runs:
 *   every block is served, on node 0 once node 1 is out;
 * - other_thread: another live thread's thread cache holds the pages:
 *   served (_nd_large_flush takes every thread's kept runs of the node,
 *   task tcsteal28; ENOMEM before), and that thread's cache still works;
 * - trim: malloc_trim gives back the runs another live thread keeps (node
 *   1's pages in use fall by them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define MAXB 40000

static char *held[MAXB];
static int nheld;

static void set(const char *s)
{
	nd_policy_t p;
	char err[256] = "";
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s: %s", s, err);
	CHECK(nd_set_policy(&p) == 0);
}

static uint64_t free1(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	return in.capacity_pages - in.used_pages;
}

/* Blocks of size under the thread's policy until NULL (which must say
 * ENOMEM) or max of them; the count. */
static int fill(size_t size, int max)
{
	int n = 0;
	while (n < max && nheld < MAXB) {
		errno = 0;
		char *p = malloc(size);
		if (!p) {
			CHECK_EQ(errno, ENOMEM);
			break;
		}
		memset(p, 0x6b, size < 8192 ? size : 8192);
		held[nheld++] = p;
		n++;
	}
	return n;
}

static void release_all(void)
{
	while (nheld > 0)
		free(held[--nheld]);
}

static void case_fill(void)
{
	set("bind:1");
	int big = fill(1 * MiB, 64);
	CHECK(big >= 24, "1 MiB blocks on a 32 MiB node: %d", big);
	for (int i = 0; i < big; i++)
		CHECK(nd_node_of(held[i]) == 1);
	int mid = fill(100 * KiB, 1000);
	int small = fill(700, 100000);
	CHECK(small < 100000, "small blocks never ran out under bind:1 (%d)", small);
	for (int i = 0; i < nheld; i++)
		if (nd_node_of(held[i]) != 1) {
			CHECK(0, "block %d (%p) on node %d under bind:1", i, (void *)held[i], nd_node_of(held[i]));
			break;
		}
	printf("fill: %d x 1 MiB, %d x 100 KiB, %d x 700 B, %llu pages left\n", big, mid, small,
	       (unsigned long long)free1());
	errno = 0;
	CHECK(malloc(1 * MiB) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc(1000, 1000) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(realloc(held[0], 8 * MiB) == NULL && errno == ENOMEM);
	CHECK(held[0][0] == 0x6b, "a failed realloc kept the block");
	release_all();
	/* all back: the node fills again as much */
	int again = fill(1 * MiB, 64);
	CHECK(again >= big, "after the frees: %d x 1 MiB, %d before", again, big);
	release_all();
}

/* Node 1 full but for the runs freed into one cache; then a bind:1 block
 * of need bytes, which only those pages can serve. */
static void full_but(const char *what, size_t blk, int nfree, size_t need)
{
	set("bind:1");
	fill(blk, MAXB);
	fill(64 * KiB, MAXB); /* the rest, but what the slab layer holds */
	fill(8 * KiB, MAXB);
	/* free nfree blocks of size blk, every other one (not adjacent) */
	int freed = 0;
	for (int i = 0; i < nheld && freed < nfree; i += 2, freed++) {
		if (malloc_usable_size(held[i]) < blk)
			break;
		memset(held[i], 0x5d, blk);
		free(held[i]);
		held[i] = NULL;
	}
	CHECK_EQ(freed, nfree);
	uint64_t left = free1();
	CHECK(left < need >> ND_PAGE_SHIFT, "%s: %llu pages free without the cache", what, (unsigned long long)left);
	errno = 0;
	char *p = malloc(need);
	CHECK(p != NULL, "%s: bind:1 block of %zu B failed (errno %d) with %d x %zu B freed into the cache", what, need,
	      errno, nfree, blk);
	CHECK(!p || nd_node_of(p) == 1);
	free(p);
	for (int i = 0; i < nheld; i++)
		free(held[i]);
	nheld = 0;
}

static void case_node_cache(void)
{
	/* the node cache's bound on a 32 MiB node is 2 MiB: two 1 MiB runs */
	full_but("node cache", 1 * MiB, 2, 2 * MiB);
}

static void case_thread_cache(void)
{
	/* 24 runs of 10 pages (40 KiB blocks) */
	full_but("thread cache", 40 * KiB, 24, 600 * KiB);
}

/* Spread runs of interleave:0,1 hold half their pages on node 1: node 1
 * filled by bind:1 but for 3 MiB, spread blocks take its rest, freed into
 * the spread cache; then bind:1 wants 2 MiB of node 1. */
static void case_spread_cache(void)
{
	set("bind:1");
	int big = fill(1 * MiB, MAXB);
	fill(64 * KiB, MAXB);
	fill(8 * KiB, MAXB);
	CHECK(big >= 8);
	for (int i = 0; i < 6; i += 2) { /* 3 MiB free on node 1, not adjacent */
		free(held[i]);
		held[i] = NULL;
	}
	_nd_large_flush(-1);
	uint64_t room = free1(); /* 3 MiB, in three holes */
	set("interleave:0,1");
	char *sp[6]; /* half of each on node 1: its 3 MiB */
	for (int i = 0; i < 6; i++)
		CHECK((sp[i] = malloc(1 * MiB)) != NULL);
	for (int i = 0; i < 6; i++) /* into the spread cache (its newest) */
		free(sp[i]);
	uint64_t in_use, cached, runs;
	_nd_large_usage(&in_use, &cached, &runs);
	uint64_t kept1 = room - free1(); /* node 1's pages in the cached runs */
	printf("spread_cache: %llu B in %llu cached runs, node 1: %llu of its %llu free pages in them\n",
	       (unsigned long long)cached, (unsigned long long)runs, (unsigned long long)kept1, (unsigned long long)room);
	CHECK(kept1 >= 128, "the spread cache holds %llu pages of node 1", (unsigned long long)kept1);
	set("bind:1");
	size_t need = room << ND_PAGE_SHIFT; /* all of it: the cached runs' node 1 pages too */
	errno = 0;
	char *p = malloc(need);
	CHECK(p != NULL, "spread cache: bind:1 block of %zu B failed (errno %d), %llu B cached", need, errno,
	      (unsigned long long)cached);
	free(p);
	for (int i = 0; i < nheld; i++)
		free(held[i]);
	nheld = 0;
}

/* Another live thread's thread cache holds the pages a bind:1 block
 * needs: _nd_large_flush of the full node takes them (task tcsteal28;
 * before, ENOMEM while it lived: up to 4 MiB a thread). Then the thread
 * keeps and takes runs again (its cache was emptied under it). */
static pthread_barrier_t obar;
static char *theirs[24];
static int their_bad;

static void *other(void *arg)
{
	set("bind:1");
	for (int i = 0; i < 24; i++)
		theirs[i] = malloc(40 * KiB);
	pthread_barrier_wait(&obar); /* the main thread fills node 1 (or holds blocks on it) */
	pthread_barrier_wait(&obar);
	for (int i = 0; i < 24; i++) /* kept by this thread */
		free(theirs[i]);
	pthread_barrier_wait(&obar);
	pthread_barrier_wait(&obar); /* the main thread takes them */
	/* after the steal: a run of its own kept and taken back */
	for (int r = 0; r < 4; r++) {
		char *p = malloc(40 * KiB);
		their_bad += !p;
		if (p) {
			memset(p, 0x3c, 40 * KiB);
			free(p);
		}
	}
	pthread_barrier_wait(&obar);
	return arg;
}

static void case_other_thread(void)
{
	pthread_barrier_init(&obar, NULL, 2);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, other, NULL) == 0);
	pthread_barrier_wait(&obar);
	set("bind:1");
	fill(1 * MiB, MAXB);
	fill(64 * KiB, MAXB);
	fill(8 * KiB, MAXB);
	pthread_barrier_wait(&obar);
	pthread_barrier_wait(&obar);
	CHECK(free1() < 600 * KiB >> ND_PAGE_SHIFT);
	errno = 0;
	char *p = malloc(600 * KiB);
	CHECK(p != NULL, "bind:1 600 KiB while another thread keeps 24 x 40 KiB of node 1: errno %d", errno);
	CHECK(!p || nd_node_of(p) == 1);
	free(p);
	pthread_barrier_wait(&obar);
	pthread_barrier_wait(&obar);
	pthread_join(t, NULL);
	CHECK_EQ(their_bad, 0);
	errno = 0;
	p = malloc(600 * KiB);
	CHECK(p != NULL, "after the thread's exit: errno %d", errno);
	free(p);
	release_all();
}

static uint64_t used1(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	return in.used_pages;
}

/* malloc_trim: another live thread's kept runs (24 x 10 pages of node 1)
 * go back to the page level. Blocks held on node 1 keep the thread
 * cache's bound (twice the node's large pages in use) above them. */
static void case_trim(void)
{
	pthread_barrier_init(&obar, NULL, 2);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, other, NULL) == 0);
	pthread_barrier_wait(&obar);
	set("bind:1");
	fill(1 * MiB, 4);
	pthread_barrier_wait(&obar);
	pthread_barrier_wait(&obar);
	uint64_t before = used1();
	malloc_trim(0);
	uint64_t after = used1();
	printf("trim: node 1 pages in use %llu -> %llu\n", (unsigned long long)before, (unsigned long long)after);
	CHECK(before >= after + 24 * 10, "malloc_trim left another thread's 24 x 10 kept pages: %llu -> %llu",
	      (unsigned long long)before, (unsigned long long)after);
	pthread_barrier_wait(&obar);
	pthread_barrier_wait(&obar);
	pthread_join(t, NULL);
	CHECK_EQ(their_bad, 0);
	release_all();
}

/* preferred:1 with node 1 full and its caches holding runs: every block
 * served, those node 1 cannot take on node 0 (its fallback). */
static void case_fallback(void)
{
	set("bind:1");
	fill(1 * MiB, MAXB);
	fill(64 * KiB, MAXB);
	for (int i = 0; i < 8; i += 2) {
		free(held[i]);
		held[i] = NULL;
	}
	free(held[nheld - 1]); /* a 64 KiB run for the thread cache */
	held[--nheld] = NULL;
	set("preferred:1");
	int on0 = 0, on1 = 0;
	for (int i = 0; i < 48; i++) {
		errno = 0;
		size_t n = i % 2 ? 1 * MiB : 48 * KiB;
		char *p = malloc(n);
		CHECK(p != NULL, "preferred:1, block %d of %zu B: NULL (errno %d)", i, n, errno);
		if (!p)
			break;
		on0 += nd_node_of(p) == 0;
		on1 += nd_node_of(p) == 1;
		held[nheld++] = p;
	}
	CHECK(on0 > 0 && on0 + on1 == 48, "fallback: %d on node 0, %d on node 1", on0, on1);
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(3000);
		CHECK(p != NULL);
		held[nheld++] = p;
	}
	for (int i = 0; i < nheld; i++)
		free(held[i]);
	nheld = 0;
}

static void run(const char *name, void (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		check_fail = 0; /* the parent's count so far is not this case's */
		fn();
		char err[256] = "";
		_nd_large_flush(-1);
		CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s: %s", name, err);
		printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
		fflush(stdout);
		_exit(check_fail ? 1 : 0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x", name, st);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=96M; 1: mem=32M", err, sizeof err) == 0, "emulate: %s", err);
	run("fill", case_fill);
	run("node_cache", case_node_cache);
	run("thread_cache", case_thread_cache);
	run("spread_cache", case_spread_cache);
	run("fallback", case_fallback);
	run("other_thread", case_other_thread);
	run("trim", case_trim);
	return CHECK_DONE();
}
