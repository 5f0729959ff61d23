/* Unknown NODALLOC_* variables and bad values in the environment are
 * reported by name at start-up: re-exec ourselves with a crafted
 * environment and read stderr. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

int main(int argc, char **argv)
{
	if (argc > 1) { /* child: the library's constructor has parsed env */
		printf("check=%lld threshold=%lld\n", (long long)_nd_opt_int(ND_OPT_CHECK),
		       (long long)_nd_opt_int(ND_OPT_PURGE_THRESHOLD));
		return 0;
	}
	int out[2];
	CHECK(pipe(out) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		char *env[] = { "NODALLOC_BOGUS=1", "nodalloc_check=yes", "NODALLOC_PURGE_THRESHOLD=12Q", NULL };
		execle(argv[0], argv[0], "child", (char *)NULL, env);
		_exit(127);
	}
	close(out[1]);
	char buf[4096];
	size_t n = 0;
	ssize_t r;
	while ((r = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(buf, "nodalloc: warning: unknown option NODALLOC_BOGUS") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "NODALLOC_purge_threshold: bad size '12Q'") != NULL, "got: %s", buf);
	CHECK(strstr(buf, "check=1 threshold=1048576") != NULL, "got: %s", buf);
	return CHECK_DONE();
}
