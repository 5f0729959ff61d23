// SPDX-License-Identifier: MIT
/* Atfork handlers that allocate, registered before the library's own
 * (here: by a constructor that runs before the library's init, as a
 * library loaded before nodalloc does): their prepare handlers run after
 * ours, when every lock of the library is held, and their parent and
 * child handlers before ours. glibc's malloc allows allocation there; the
 * library deadlocked on its own locks (a large malloc in prepare waited
 * on the page level's lock forever). While a thread allocates and frees,
 * 20 forks: every handler allocates small, large and placed blocks and
 * frees them; the child allocates and exits; nothing hangs (alarm). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static int init_before; /* the library's init state when the handlers were registered */
static void *held;
static int handler_fail;

static void churn(size_t big)
{
	void *a = malloc(24), *b = malloc(3000), *c = malloc(big), *d = nd_malloc_onnode(5000, 0);
	void *e = calloc(1, 2 * big);
	if (!a || !b || !c || !d || !e)
		handler_fail++;
	else
		memset(c, 0x5a, big);
	b = realloc(b, 70000);
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
}

static void prepare(void)
{
	held = malloc(100000);
	churn(200000);
}

static void parent(void)
{
	churn(300000);
	free(held);
}

static void child(void)
{
	churn(400000);
	free(held);
}

__attribute__((constructor(101))) static void early(void)
{
	init_before = _nd_initialized;
	pthread_atfork(prepare, parent, child);
}

static volatile int stop;

static void *hammer(void *arg)
{
	(void)arg;
	while (!stop)
		churn(100000);
	return NULL;
}

int main(void)
{
	CHECK(init_before == 0, "the handlers were registered after the library's init (%d): the test shows nothing",
	      init_before);
	alarm(120); /* a deadlock in fork ends the test */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, hammer, NULL) == 0);
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			churn(500000);
			_exit(handler_fail ? 3 : 0);
		}
		int st = 0;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "fork %d: child status %#x", i, st);
	}
	stop = 1;
	pthread_join(t, NULL);
	CHECK(handler_fail == 0, "%d handler allocations failed", handler_fail);
	return CHECK_DONE();
}
