// SPDX-License-Identifier: MIT
/*
 * Trust (task trust27): a forked child never hangs or corrupts, whatever
 * the caches hold at the fork. Three threads churn while the main thread
 * forks in a loop:
 * - "tcache": runs of 9..64 pages through its thread cache (large.c);
 * - "spread": interleaved 40 KiB..1 MiB runs through the spread cache;
 * - "node": 512 KiB..3 MiB runs through the node cache, and small objects.
 * Each keeps a few live blocks with a pattern of its own, checked after
 * every reuse. Before each fork the main thread frees a dirty 40 KiB
 * block into its own thread cache, which the child inherits: the child's
 * first calloc of that size takes it and must read zero. Each child
 * (alarm() as watchdog) then allocates from every regime, writes and
 * checks, frees, runs malloc_trim and a thread, and exits 0. After the loop the parent's threads check their live blocks,
 * that their caches still serve them (a freed run taken again), and the
 * page level's invariants.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "trust_fixture.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define FORKS 16
#define LIVE 6

static volatile int stop;
static int child_bad; /* a child's own count of bad bytes */

struct churner {
	const char *name;
	const char *pol; /* NULL: the default */
	size_t lo, hi;   /* sizes */
	size_t probe;    /* a size its cache serves again as is */
	bool probe_missed;
	unsigned seed;
	long ops, bad, reused;
	char *live[LIVE];
	size_t len[LIVE];
	unsigned char pat[LIVE];
};

static size_t pick(struct churner *c)
{
	c->seed = c->seed * 1103515245u + 12345u;
	return c->lo + (c->seed >> 8) % (c->hi - c->lo + 1);
}

static long badbytes(const char *p, size_t n, unsigned char v)
{
	long bad = 0;
	for (size_t i = 0; i < n; i += 512)
		bad += (unsigned char)p[i] != v;
	return bad + ((unsigned char)p[n - 1] != v);
}

static void *churn(void *arg)
{
	struct churner *c = arg;
	if (c->pol) {
		nd_policy_t p;
		char err[128];
		if (nd_policy_parse(c->pol, &p, err, sizeof err) != 0)
			c->bad++; /* CHECK's counters are the main thread's */
		nd_set_policy(&p);
	}
	for (int i = 0; i < LIVE; i++) {
		c->len[i] = pick(c);
		c->live[i] = malloc(c->len[i]);
		c->pat[i] = (unsigned char)(i + 1);
		memset(c->live[i], c->pat[i], c->len[i]);
	}
	void *small[64] = { 0 };
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int i = (int)(c->ops % LIVE);
		c->bad += badbytes(c->live[i], c->len[i], c->pat[i]);
		char *old = c->live[i];
		free(old);
		c->len[i] = pick(c);
		c->live[i] = malloc(c->len[i]);
		c->reused += c->live[i] == old;
		c->pat[i] = (unsigned char)(c->pat[i] + LIVE);
		memset(c->live[i], c->pat[i], c->len[i]);
		int k = (int)(c->ops % 64);
		free(small[k]);
		small[k] = malloc(16 + (c->ops % 40) * 24);
		c->ops++;
	}
	for (int k = 0; k < 64; k++)
		free(small[k]);
	/* the caches still work: a freed block's run taken again */
	for (int i = 0; i < LIVE; i++)
		c->bad += badbytes(c->live[i], c->len[i], c->pat[i]);
	char *p = malloc(c->probe);
	memset(p, 0x5e, c->probe);
	free(p);
	char *q = malloc(c->probe);
	c->probe_missed = q != p;
	free(q);
	for (int i = 0; i < LIVE; i++)
		free(c->live[i]);
	return NULL;
}

static void *child_thread(void *arg) __attribute__((unused));
static void *child_thread(void *arg)
{
	char *p = malloc(40 * KiB);
	memset(p, 7, 40 * KiB);
	free(p);
	return arg;
}

/* The child: the forking thread's kept run, every regime, a thread,
 * malloc_trim; exit 0, 1 (old data, corruption), 3 (fine, but the kept
 * run did not serve the first calloc). */
static char *kept; /* a dirty 40 KiB run the forking thread keeps */
static int kept_reused;

static void child(void)
{
	alarm(20); /* a hang dies by SIGALRM: the parent sees it */
	/* the forking thread's thread cache is the child's: its kept run
	 * serves this calloc, cleared */
	char *z = calloc(1, 40 * KiB);
	if (!z)
		_exit(2);
	for (size_t i = 0; i < 40 * KiB; i++)
		child_bad += z[i] != 0;
	free(z);
	int elsewhere = z != kept;
	static const size_t sizes[] = { 24, 1000, 20000, 40 * KiB, 200 * KiB, 600 * KiB, 3 * MiB };
	for (int r = 0; r < 2; r++)
		for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			char *p = malloc(sizes[s]);
			if (!p)
				_exit(2);
			memset(p, 0x3c, sizes[s]);
			child_bad += badbytes(p, sizes[s], 0x3c);
			char *q = calloc(1, sizes[s]);
			if (!q)
				_exit(2);
			for (size_t i = 0; i < sizes[s]; i++)
				child_bad += q[i] != 0;
			free(p);
			free(q);
		}
	nd_policy_t il;
	char err[64];
	if (nd_policy_parse("interleave:0,1", &il, err, sizeof err) == 0) {
		void *p = nd_malloc_policy(300 * KiB, &il);
		free(p);
	}
#ifndef ND_NO_OVERRIDE /* ThreadSanitizer dies on a thread started after a fork of threads */
	pthread_t t;
	if (pthread_create(&t, NULL, child_thread, NULL) == 0)
		pthread_join(t, NULL);
#endif
	trust_trim();
	_exit(child_bad ? 1 : elsewhere ? 3 : 0);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=512M", err, sizeof err) == 0, "emulate: %s", err);
	struct churner cs[3] = {
		{ .name = "tcache", .lo = 33 * KiB, .hi = 256 * KiB, .probe = 40 * KiB, .seed = 1 },
		{ .name = "spread", .pol = "interleave:0,1", .lo = 40 * KiB, .hi = 1 * MiB, .probe = 64 * KiB, .seed = 2 },
		{ .name = "node", .lo = 512 * KiB, .hi = 3 * MiB, .probe = 1 * MiB, .seed = 3 },
	};
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		CHECK(pthread_create(&th[i], NULL, churn, &cs[i]) == 0);
	alarm(120); /* the parent's own watchdog */
	int hung = 0, failed = 0;
	for (int f = 0; f < FORKS; f++) {
		/* let the churners get going (and mid-allocation) */
		for (volatile int spin = 0; spin < 200000; spin++)
			;
		kept = malloc(40 * KiB);
		memset(kept, 0x77, 40 * KiB);
		free(kept);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			child();
		int st = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			hung++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			kept_reused--; /* served from elsewhere: not a failure */
		else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			failed++;
			fprintf(stderr, "fork %d: child status %#x\n", f, st);
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	alarm(0);
	kept_reused += FORKS;
	printf("the forking thread's kept run served the child's calloc %d times of %d\n", kept_reused, FORKS);
	CHECK(kept_reused > 0);
	CHECK_EQ(hung, 0);
	CHECK_EQ(failed, 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(cs[i].bad, 0);
		CHECK(cs[i].ops > 0, "%s made no progress", cs[i].name);
		CHECK(!cs[i].probe_missed, "%s: a freed %zu B run not taken again after the forks", cs[i].name, cs[i].probe);
		printf("%s: %ld ops, %ld reused\n", cs[i].name, cs[i].ops, cs[i].reused);
	}
	_nd_large_flush(-1);
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
