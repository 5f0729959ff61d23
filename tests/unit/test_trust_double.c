// SPDX-License-Identifier: MIT
/*
 * Trust (task trust27): a second free of a block that sits in a cache is
 * reported (SIGABRT and the message), plain and with NODALLOC_CHECK=1:
 * - tcache: a 40 KiB run kept by the thread cache (large.c), freed again
 *   by its thread, and by another thread after the first one's free;
 * - node: a 1 MiB run in the node cache;
 * - moved: a 4 MiB run of the node cache whose 2 MiB pages were moved
 *   into a larger block (large27), its old address freed again;
 * - spread: a 64 KiB interleaved run in the spread cache;
 * - page: a 100-page run the page level took back dirty;
 * - lent: a 1100 B object of a 2 KiB slab lent to its class (heap.c);
 * - realloc: a realloc'd (moved) block's old address freed;
 * - realloc_kept, usable_kept: realloc of a run the thread cache keeps,
 *   malloc_usable_size of one the spread cache keeps.
 * Each case runs in a child (this binary re-executed); "clean" makes the
 * same calls without the misuse and must exit 0 with nothing reported.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* the misuse is the point of this test */
#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static bool misuse;

static void again(void *p)
{
	if (misuse)
		free(p);
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void set(const char *s)
{
	nd_policy_t p;
	char err[128];
	if (nd_policy_parse(s, &p, err, sizeof err) == 0)
		nd_set_policy(&p);
}

static int run_case(const char *c)
{
	char err[256];
	if (nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=512M", err, sizeof err) != 0)
		return 3;
	if (!strcmp(c, "tcache")) {
		char *p = malloc(40 * KiB);
		memset(p, 1, 40 * KiB);
		free(p);
		again(p);
	} else if (!strcmp(c, "tcache_thread")) {
		char *p = malloc(40 * KiB);
		pthread_t t;
		pthread_create(&t, NULL, free_it, p); /* kept by that thread until its exit */
		pthread_join(t, NULL);
		again(p);
		char *q = malloc(40 * KiB);
		pthread_create(&t, NULL, free_it, q);
		pthread_join(t, NULL);
	} else if (!strcmp(c, "node")) {
		char *p = malloc(1 * MiB);
		memset(p, 1, 1 * MiB);
		free(p);
		if (_nd_large_cached(0) < 1 * MiB)
			return 4;
		again(p);
	} else if (!strcmp(c, "moved")) {
		char *m[3];
		for (int i = 0; i < 3; i++)
			memset(m[i] = malloc(4 * MiB), 1, 4 * MiB);
		char *sep = malloc(1 * MiB);
		for (int i = 0; i < 3; i++)
			free(m[i]);
		char *big = malloc(10 * MiB);
		memset(big, 2, 10 * MiB);
		again(m[0]);
		again(m[1]);
		free(big);
		free(sep);
	} else if (!strcmp(c, "spread")) {
		set("interleave:0,1");
		char *p = malloc(64 * KiB);
		memset(p, 1, 64 * KiB);
		free(p);
		uint64_t in_use, cached, runs;
		_nd_large_usage(&in_use, &cached, &runs);
		if (runs != 1)
			return 4;
		again(p);
	} else if (!strcmp(c, "page")) {
		char *a = malloc(100 * ND_PAGE_SIZE), *b = malloc(100 * ND_PAGE_SIZE);
		memset(a, 1, 100 * ND_PAGE_SIZE);
		free(a);
		again(a);
		free(b);
	} else if (!strcmp(c, "lent")) {
		enum { N = 256 };
		static void *big[N], *small[N];
		for (int i = 0; i < N; i++)
			big[i] = malloc(2048);
		for (int i = 0; i < N; i += 2)
			free(big[i]);
		int k = -1;
		for (int i = 0; i < N; i++) {
			small[i] = malloc(1100);
			if (k < 0 && malloc_usable_size(small[i]) == 2048)
				k = i;
		}
		if (k < 0)
			k = N / 2; /* check mode lends nothing: a plain one */
		free(small[k]);
		again(small[k]);
		for (int i = 0; i < N; i++)
			if (i != k)
				free(small[i]);
	} else if (!strcmp(c, "realloc_kept") || !strcmp(c, "usable_kept")) {
		/* a kept run (thread cache, spread cache) handed to realloc or
		 * malloc_usable_size after its free */
		char *p = malloc(40 * KiB), *q;
		set("interleave:0,1");
		char *r = malloc(64 * KiB);
		free(r);
		free(p);
		if (misuse && c[0] == 'r')
			q = realloc(p, 80 * KiB), free(q);
		else if (misuse)
			return malloc_usable_size(r) == 0 ? 5 : 6;
	} else if (!strcmp(c, "realloc")) {
		char *p = malloc(40 * KiB), *hold = malloc(40 * KiB); /* hold: p cannot grow in place */
		char *q = realloc(p, 400 * KiB);
		if (q == p)
			return 4;
		again(p);
		free(q);
		free(hold);
	}
	return 99;
}

int main(int argc, char **argv)
{
	if (argc > 2) {
		misuse = !strcmp(argv[2], "misuse");
		return run_case(argv[1]);
	}
	static const struct {
		const char *name, *msg;
	} cases[] = {
		{ "tcache", "not allocated by malloc, or already freed" },
		{ "tcache_thread", "not allocated by malloc, or already freed" },
		{ "node", "not allocated by malloc, or already freed" },
		{ "moved", "free(): invalid pointer" },
		{ "spread", "not allocated by malloc, or already freed" },
		{ "page", "not allocated by malloc, or already freed" },
		{ "lent", "free(): double free of" },
		{ "realloc", "not allocated by malloc, or already freed" },
		{ "realloc_kept", "realloc(): invalid pointer" },
		{ "usable_kept", "invalid pointer" },
	};
	char msg[2048];
	for (int check = 0; check < 2; check++)
		for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
			const char *mode = check ? "1" : "0";
			int st = run_child("/proc/self/exe", (char *const[]){ argv[0], (char *)cases[c].name, "misuse", NULL },
					   "NODALLOC_CHECK", mode, false, msg, sizeof msg);
			CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s, check %s: status %#x, stderr: %s", cases[c].name,
			      mode, st, msg);
			CHECK(strstr(msg, cases[c].msg) != NULL, "%s, check %s: message: %s", cases[c].name, mode, msg);
			st = run_child("/proc/self/exe", (char *const[]){ argv[0], (char *)cases[c].name, "clean", NULL },
				       "NODALLOC_CHECK", mode, false, msg, sizeof msg);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 99, "%s clean, check %s: status %#x, stderr: %s",
			      cases[c].name, mode, st, msg);
			CHECK(!strstr(msg, "nodalloc"), "%s clean, check %s: stderr: %s", cases[c].name, mode, msg);
		}
	return CHECK_DONE();
}
