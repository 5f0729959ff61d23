// SPDX-License-Identifier: MIT
/* Shared by tests that run a case in a child: exec path with argv (env
 * name=value set first when name is not NULL; LD_PRELOAD removed), its
 * stderr (and stdout if both) captured into out. Returns the wait status. */
#ifndef ND_CHILD_FIXTURE_H
#define ND_CHILD_FIXTURE_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The same with before(arg) run in the child just before exec (e.g. a
 * set_mempolicy the program must inherit); before may be NULL. */
static inline int run_child_then(const char *path, char *const argv[], const char *name, const char *value,
				 bool both, char *out, size_t len, void (*before)(void *), void *arg)
{
	int fd[2];
	out[0] = '\0';
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		if (both)
			dup2(fd[1], 1);
		dup2(fd[1], 2);
		unsetenv("LD_PRELOAD");
		if (name)
			setenv(name, value, 1);
		if (before)
			before(arg);
		execv(path, argv);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < len && (r = read(fd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

static inline int run_child(const char *path, char *const argv[], const char *name, const char *value, bool both,
			    char *out, size_t len)
{
	return run_child_then(path, argv, name, value, both, out, len, NULL, NULL);
}

#ifdef ND_BINARY_DIR
/* The built shared library's path into lib, and whether /usr/bin/python3
 * (the tests that load the library into a python3 child) is there: if
 * not, a line saying test's what is skipped. */
static inline bool python3_with_lib(const char *test, const char *what, char *lib, size_t len)
{
	snprintf(lib, len, "%s/libnodalloc.so", ND_BINARY_DIR);
	if (access("/usr/bin/python3", X_OK) == 0)
		return true;
	printf("%s: python3 missing, %sskipped\n", test, what);
	return false;
}
#endif
#endif
