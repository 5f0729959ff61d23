// SPDX-License-Identifier: MIT
/* Invalid and double frees are reported with the pointer and abort (each
 * case runs in a child: this binary re-executed with the case's name). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* the misuse is the point of this test */
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "check.h"
#include "internal.h"

static void *volatile sink;

static void *free_in_thread(void *p)
{
	free(p);
	return NULL;
}

/* Each case does one bad thing; returning from it is a failure (exit 0). */
static int run_case(const char *name)
{
	char *p = malloc(64);
	sink = malloc(64); /* keeps the slab in use */
	if (!strcmp(name, "stack")) {
		char buf[32];
		sink = buf;
		free(sink);
	} else if (!strcmp(name, "interior")) {
		free(L(p) + 16);
	} else if (!strcmp(name, "interior_odd")) {
		char *q = malloc(100); /* class 112: a multiple of 16 inside */
		free(L(q) + 48);
	} else if (!strcmp(name, "never_allocated")) {
		char *q = malloc(3000); /* class 3072: objects past the first page are not carved yet */
		free(L(q) + 3072 * 6);
	} else if (!strcmp(name, "interior_large")) {
		char *l = malloc(100000);
		free(L(l) + 8);
	} else if (!strcmp(name, "double")) {
		free(p);
		free(L(p));
	} else if (!strcmp(name, "double_coloured")) {
		char *q = malloc(6000); /* class 6144: a coloured slab (slab.c) */
		free(q);
		free(L(q));
	} else if (!strcmp(name, "interior_coloured")) {
		char *q = malloc(6000);
		free(L(q) + 64);
	} else if (!strcmp(name, "double_large")) {
		char *l = malloc(100000);
		free(l);
		free(L(l));
	} else if (!strcmp(name, "double_remote")) {
		pthread_t t;
		pthread_create(&t, NULL, free_in_thread, p);
		pthread_join(t, NULL);
		free(L(p));
	} else if (!strcmp(name, "realloc_bad")) {
		sink = realloc(L(p) + 32, 200);
	} else if (!strcmp(name, "usable_bad")) {
		int x;
		sink = (void *)(uintptr_t)malloc_usable_size(L(&x));
	} else if (!strcmp(name, "overwritten_double")) {
		/* a use-after-free write wiped the marker (word 0 of a free
		 * object, the link in word 1 intact): only check mode sees it */
		free(p);
		((uintptr_t *)L(p))[0] = 0;
		free(L(p));
	} else {
		return 2;
	}
	return 0;
}

/* Runs the case in a child; returns its stderr and termination signal. */
static int run_child(const char *self, const char *name, int check, char *out, size_t outlen)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		if (check)
			setenv("NODALLOC_CHECK", "1", 1);
		else
			unsetenv("NODALLOC_CHECK");
		execl(self, self, name, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while (n < outlen - 1 && (r = read(fds[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fds[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) ? WTERMSIG(st) : -WEXITSTATUS(st);
}

static void expect(const char *self, const char *name, int check, const char *msg)
{
	char out[2048];
	int sig = run_child(self, name, check, out, sizeof out);
	CHECK(sig == SIGABRT, "case %s (check=%d): ended with %d, stderr: %s", name, check, sig, out);
	CHECK(strstr(out, "nodalloc: fatal: ") && strstr(out, msg), "case %s: stderr lacks \"%s\": %s", name, msg, out);
	/* the message names the pointer (0x...) */
	CHECK(strstr(out, "0x") != NULL, "case %s: no pointer in: %s", name, out);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return run_case(argv[1]);
	const char *self = "/proc/self/exe";
	char exe[4096];
	ssize_t n = readlink(self, exe, sizeof exe - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';

	expect(exe, "stack", 0, "free(): invalid pointer");
	expect(exe, "interior", 0, "free(): invalid pointer");
	expect(exe, "interior", 0, "not the start of an object");
	expect(exe, "interior_odd", 0, "not the start of an object");
	expect(exe, "never_allocated", 0, "never allocated");
	expect(exe, "interior_large", 0, "free(): invalid pointer");
	expect(exe, "double", 0, "free(): double free of");
	expect(exe, "double_coloured", 0, "free(): double free of");
	expect(exe, "interior_coloured", 0, "not the start of an object");
	expect(exe, "double_large", 0, "free(): invalid pointer");
	expect(exe, "double_remote", 0, "free(): double free of");
	expect(exe, "realloc_bad", 0, "realloc(): invalid pointer");
	expect(exe, "usable_bad", 0, "malloc_usable_size(): invalid pointer");
	expect(exe, "double", 1, "free(): double free of");
	expect(exe, "overwritten_double", 1, "free(): double free of");

	/* without check mode the wiped marker goes unseen: the child survives */
	char out[2048];
	CHECK_EQ(run_child(exe, "overwritten_double", 0, out, sizeof out), 0);
	return CHECK_DONE();
}
