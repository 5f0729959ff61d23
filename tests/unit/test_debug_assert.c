// SPDX-License-Identifier: MIT
/* ND_ASSERT is live exactly in ND_DEBUG builds (make test runs the unit
 * suite in one, build-debug): there a broken invariant aborts with its
 * name, file and line on the message path; in a release build the
 * condition is not even evaluated. Each case runs in a forked child. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static int evaluated;
/* not static: a release build never calls it (clang would warn) */
int side_effect(void);
int side_effect(void)
{
	evaluated = 1;
	return 0;
}

/* Runs ND_ASSERT(false) in a child with stderr on a pipe: *sig gets the
 * terminating signal (0 if it exited), out the message. */
static void run_child(int *sig, char *out, size_t len)
{
	int fd[2];
	*sig = -1;
	if (pipe(fd) != 0) {
		CHECK(0, "pipe");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		ND_ASSERT(side_effect() == 1, "the test's invariant");
		_exit(evaluated ? 3 : 0);
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < len && (r = read(fd[0], out + n, len - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	*sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	if (!WIFSIGNALED(st))
		CHECK_EQ(WEXITSTATUS(st), 0); /* release: not evaluated */
}

int main(void)
{
	free(malloc(1)); /* the library is initialised */
	int sig = -1;
	char out[512];
	run_child(&sig, out, sizeof out);
#ifdef ND_DEBUG
	CHECK_EQ(sig, SIGABRT);
	CHECK(strstr(out, "nodalloc: fatal: assertion failed at ") != NULL, "message: %s", out);
	CHECK(strstr(out, "test_debug_assert.c:") != NULL, "message: %s", out);
	CHECK(strstr(out, "the test's invariant") != NULL, "message: %s", out);
	CHECK(strstr(out, "side_effect() == 1") != NULL, "message: %s", out);
	printf("ND_DEBUG build: ND_ASSERT aborts with the invariant's name\n");
#else
	CHECK_EQ(sig, 0);
	CHECK(out[0] == 0, "release build printed: %s", out);
	printf("release build: ND_ASSERT compiled out\n");
#endif
	return CHECK_DONE();
}
