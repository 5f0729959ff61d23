// SPDX-License-Identifier: MIT
/* Unknown NODALLOC_* variables (with the nearest known name) and bad
 * values in the environment are reported by name at start-up, spelled as
 * users type them; NODALLOC_VERBOSE=1 lists every option with its value
 * and source; NODALLOC_ABORT_ON_CONFIG_ERROR=1 makes a bad one fatal
 * (wherever it stands in the environment). Re-exec ourselves with a
 * crafted environment and read stderr. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

/* Runs this binary as "child" with env; output into buf; wait status. */
static int child(const char *self, char **env, char *buf, size_t len)
{
	int out[2];
	if (pipe(out) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		execle(self, self, "child", (char *)NULL, env);
		_exit(127);
	}
	close(out[1]);
	size_t n = 0;
	ssize_t r;
	while (n < len - 1 && (r = read(out[0], buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(out[0]);
	int st;
	waitpid(pid, &st, 0);
	return st;
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* child: the library's constructor has parsed env */
		printf("check=%lld threshold=%lld\n", (long long)_nd_opt_int(ND_OPT_CHECK),
		       (long long)_nd_opt_int(ND_OPT_PURGE_THRESHOLD));
		return 0;
	}
	static char buf[16384];
	int st = child(argv[0], (char *[]){ "NODALLOC_BOGUS=1", "nodalloc_check=yes", "NODALLOC_PURGE_THRESHOLD=12Q",
					    "NODALLOC_PURGE_TRESHOLD=2M", "NODALLOC_STAT=1", NULL },
		       buf, sizeof buf);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(buf, "nodalloc: warning: unknown option NODALLOC_BOGUS (ignored)\n") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "nodalloc: warning: NODALLOC_PURGE_THRESHOLD: bad size '12Q'") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "unknown option NODALLOC_PURGE_TRESHOLD (ignored; did you mean NODALLOC_PURGE_THRESHOLD?)") != NULL,
	      "got: %s", buf);
	CHECK(strstr(buf, "unknown option NODALLOC_STAT (ignored; did you mean NODALLOC_STATS?)") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "check=1 threshold=524288") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "nodalloc: option NODALLOC_") == NULL, "listed without NODALLOC_VERBOSE: %s", buf);

	/* verbose: every option, value, source (one line each, before main) */
	st = child(argv[0], (char *[]){ "NODALLOC_VERBOSE=1", "NODALLOC_PURGE_THRESHOLD=2M", NULL }, buf, sizeof buf);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(buf, "nodalloc: option NODALLOC_PURGE_THRESHOLD=2M (environment): free runs this large") != NULL,
	      "got: %s", buf);
	CHECK(strstr(buf, "nodalloc: option NODALLOC_VERBOSE=1 (environment): ") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "nodalloc: option NODALLOC_PURGE=dontneed (default): ") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "nodalloc: option NODALLOC_PERCPU_AREA=2M (default): ") != NULL, "got: %s", buf);
	int lines = 0;
	for (const char *p = buf; (p = strstr(p, "nodalloc: option NODALLOC_")); p++)
		lines++;
	CHECK_EQ(lines, ND_OPT__COUNT);

	/* abort on a bad value, even when the switch comes after it */
	st = child(argv[0], (char *[]){ "NODALLOC_PURGE_THRESHOLD=12Q", "NODALLOC_ABORT_ON_CONFIG_ERROR=1", NULL }, buf,
		   sizeof buf);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status 0x%x: %s", st, buf);
	CHECK(strstr(buf, "nodalloc: fatal: NODALLOC_PURGE_THRESHOLD: bad size '12Q' (expected a number with optional K, M, "
			  "G or T) (NODALLOC_ABORT_ON_CONFIG_ERROR=1)") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "check=") == NULL, "ran on: %s", buf);
	/* and on an unknown name */
	st = child(argv[0], (char *[]){ "NODALLOC_ABORT_ON_CONFIG_ERROR=yes", "NODALLOC_CHEK=1", NULL }, buf, sizeof buf);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status 0x%x: %s", st, buf);
	CHECK(strstr(buf, "did you mean NODALLOC_CHECK?) (NODALLOC_ABORT_ON_CONFIG_ERROR=1)") != NULL, "got: %s", buf);
	/* good values with the switch on: runs */
	st = child(argv[0], (char *[]){ "NODALLOC_ABORT_ON_CONFIG_ERROR=1", "NODALLOC_CHECK=1", NULL }, buf, sizeof buf);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(buf, "check=1 "), "status 0x%x: %s", st, buf);
	return CHECK_DONE();
}
