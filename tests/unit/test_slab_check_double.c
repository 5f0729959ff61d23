// SPDX-License-Identifier: MIT
/* Check mode (NODALLOC_CHECK=1) finds a double free by its slab's out
 * bits (nd_slab.h, _nd_slab_out_bits), whatever a write after free did to
 * the object's marker, in a slab of many free objects, by the owner or by
 * another thread, and whether the first free is still in another thread's
 * remote-free buffer or on the slab's lists. Before the bits the owner
 * walked the slab's free lists (linear in its free objects: emptying a
 * slab was quadratic) and missed an object another thread held in its
 * buffer, and another thread's free checked the marker alone. A program
 * without misuse runs clean (no false report: every malloc path of check
 * mode sets the bit that its free clears). Each case runs in a child
 * (this binary re-executed with NODALLOC_CHECK=1). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* the misuse is the point of this test */
#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "check.h"
#include "child_fixture.h"
#include "nodalloc.h"

#define N 3000 /* 16 B objects: three slabs of 1024, all free but x */

static char *v[N];
static pthread_barrier_t bar;

static void *free_one(void *p)
{
	free(p);
	return NULL;
}

/* frees p, then waits (its remote-free buffer keeps p) until released */
static void *free_hold(void *p)
{
	free(p);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	return NULL;
}

/* x = v[N / 2], freed, its marker (word 0) wiped by a write after free,
 * every other object free too (in allocation order: the old walk's worst)
 * but the one after x, so that x's slab is not emptied and reused for
 * another class (pthread_create's allocations) */
static char *setup(bool free_x)
{
	for (int i = 0; i < N; i++)
		v[i] = malloc(16);
	char *x = v[N / 2];
	for (int i = 0; i < N; i++)
		if (i != N / 2 && i != N / 2 + 1)
			free(v[i]);
	if (free_x) {
		free(x);
		((uintptr_t *)L(x))[0] = 0;
	}
	return x;
}

/* a program without misuse: owner and remote frees, reallocs, aligned,
 * placement and public-heap objects; exit 0 and nothing said */
static void *churn(void *arg)
{
	char **mine = arg;
	for (int r = 0; r < 4; r++)
		for (int i = 0; i < 256; i++) {
			free(mine[i]); /* another thread's objects */
			mine[i] = malloc((size_t)(i % 40) * 16 + 1);
		}
	return NULL;
}

static int clean(void)
{
	static char *mine[256];
	for (int i = 0; i < 256; i++)
		mine[i] = malloc((size_t)(i % 40) * 16 + 1);
	pthread_t t;
	if (pthread_create(&t, NULL, churn, mine) != 0)
		return 3;
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < N; i++)
			v[i] = (i & 3) == 0 ? calloc(1, 24) : (i & 3) == 1 ? aligned_alloc(64, 128) : malloc(16 + i % 500);
		for (int i = 0; i < N; i += 2)
			v[i] = realloc(v[i], 16 + (i + r) % 900);
		for (int i = 0; i < N; i++)
			free(v[(i * 7) % N]);
	}
	pthread_join(t, NULL);
	for (int i = 0; i < 256; i++)
		free(mine[i]); /* the other thread's, freed by this one */
	nd_heap_t *h = nd_heap_new(0);
	if (!h)
		return 4;
	for (int i = 0; i < N; i++)
		v[i] = nd_heap_malloc(h, 16 + i % 64);
	for (int i = 0; i < N; i++)
		free(v[i]);
	nd_heap_destroy(h);
	for (int i = 0; i < 100; i++)
		free(nd_malloc_onnode(48, 0));
	return 0;
}

/* Each misuse case does one double free; returning is a failure (0). */
static int run_case(const char *name)
{
	pthread_t t;
	if (!strcmp(name, "clean"))
		return clean() ? 2 : 99; /* 99: ran through */
	if (!strcmp(name, "owner")) {
		char *x = setup(true);
		free(L(x));
	} else if (!strcmp(name, "remote")) {
		char *x = setup(true);
		pthread_create(&t, NULL, free_one, L(x));
		pthread_join(t, NULL);
	} else if (!strcmp(name, "remote_buffered")) {
		/* the first free is another thread's, still in its buffer or
		 * on the slab's remote list when the owner frees again */
		char *x = setup(false);
		pthread_barrier_init(&bar, NULL, 2);
		pthread_create(&t, NULL, free_hold, x);
		pthread_barrier_wait(&bar);
		((uintptr_t *)L(x))[0] = 0;
		free(L(x));
		pthread_barrier_wait(&bar);
		pthread_join(t, NULL);
	} else {
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return run_case(argv[1]);
	const char *cases[] = { "owner", "remote", "remote_buffered" };
	char msg[2048];
	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int st = run_child("/proc/self/exe", (char *const[]){ argv[0], (char *)cases[c], NULL }, "NODALLOC_CHECK", "1",
				   false, msg, sizeof msg);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: status %d, stderr: %s", cases[c], st, msg);
		CHECK(strstr(msg, "free(): double free of 0x") && strstr(msg, "16-byte object"), "%s: message: %s", cases[c],
		      msg);
	}
	int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "clean", NULL }, "NODALLOC_CHECK", "1", false, msg,
			   sizeof msg);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 99, "clean: status %d, stderr: %s", st, msg);
	CHECK(!strstr(msg, "nodalloc"), "clean: stderr: %s", msg);
	return CHECK_DONE();
}
