// SPDX-License-Identifier: MIT
/* Issue 12 item 10, the remote path: an 8-byte overflow of a 24-byte
 * block into its free neighbour whose free came from another thread (so
 * the neighbour's link is in a chain that went home through the batched
 * remote-free splice, not the owner's private list). Under
 * NODALLOC_CHECK=1 the owner's collect checks every link of the chain
 * before the allocation path follows it: the corruption is reported by
 * name ("corrupted free list ... heap overflow"), not a SIGSEGV. Runs in
 * a child (this binary re-executed with NODALLOC_CHECK=1). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

static void *volatile sink;

enum { N = 64 };
static char *v[N];

/* Frees every other object (the odd ones) from another thread, then
 * sends its buffer home (as its exit would). */
static void *freer(void *arg)
{
	(void)arg;
	sink = malloc(1000); /* a record: its remote frees are batched */
	free(sink);
	for (int i = 1; i < N; i += 2)
		free(v[i]);
	_nd_slab_flush_remote();
	return NULL;
}

static int run_case(void)
{
	for (int i = 0; i < N; i++)
		v[i] = L(malloc(24));
	int k = -1;
	for (int i = 0; i + 1 < N && k < 0; i += 2)
		if (v[i + 1] == v[i] + 32)
			k = i;
	if (k < 0)
		return 3;
	pthread_t t;
	pthread_create(&t, NULL, freer, NULL);
	pthread_join(t, NULL);
	uint64_t evil = 0x4141414141414141ull;
	memcpy(L(v[k]) + 32, &evil, 8); /* overflow into the remotely freed neighbour's link */
	for (int i = 0; i < 4 * N; i++)
		sink = malloc(24);
	return 0; /* not reported: failure */
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return run_case();
	char msg[1024];
	int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "child", NULL }, "NODALLOC_CHECK", "1", false, msg,
			   sizeof msg);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d (signal %d): %s", st,
	      WIFSIGNALED(st) ? WTERMSIG(st) : 0, msg);
	CHECK(strstr(msg, "corrupted free list") && strstr(msg, "heap overflow") && strstr(msg, "malloc()"),
	      "message: %s", msg);
	return CHECK_DONE();
}
