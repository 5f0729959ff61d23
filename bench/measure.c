// SPDX-License-Identifier: MIT
/*
 * measure: runs one program with an optional LD_PRELOAD and reports its
 * wall time and peak resident set size (from wait4's rusage), so run.sh
 * needs neither /usr/bin/time nor a preload of its own.
 *
 *   measure [-p preload.so] [-t seconds] [-e NAME=VALUE]... -- program args...
 *
 * -e: set an environment variable for the program only (repeatable).
 * -t: kill the program (SIGKILL) if it runs longer, so a hanging allocator
 * cannot stall the whole benchmark run; it then reports status=137.
 * The program's own output passes through; after it exits one line goes
 * to stdout:
 *   MEASURE status=<exit code or 128+signal> wall_s=<s> maxrss_kb=<KiB> user_s=<s> sys_s=<s> minflt=<n>
 * Exit status: the program's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile sig_atomic_t timed_out;
static pid_t child;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
	kill(child, SIGKILL);
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	const char *preload = NULL;
	const char *envs[16];
	int nenv = 0;
	long limit = 0;
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "-p") == 0 && i + 1 < argc) {
			preload = argv[++i];
		} else if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
			if (!strchr(argv[++i], '=') || argv[i][0] == '=' || nenv == 16) {
				fprintf(stderr, "measure: bad -e '%s': expected NAME=VALUE (at most 16)\n", argv[i]);
				return 2;
			}
			envs[nenv++] = argv[i];
		} else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
			char *end;
			limit = strtol(argv[++i], &end, 10);
			if (*end || limit <= 0) {
				fprintf(stderr, "measure: bad time limit '%s': expected seconds > 0\n", argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "measure: bad argument '%s': expected -p LIB, -t SECONDS, -e NAME=VALUE or --\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: measure [-p preload.so] [-t seconds] [-e NAME=VALUE]... -- program args...\n");
		return 2;
	}
	if (preload && access(preload, R_OK) != 0) {
		fprintf(stderr, "measure: preload '%s': %s\n", preload, strerror(errno));
		return 2;
	}
	fflush(stdout);
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("measure: fork");
		return 2;
	}
	if (pid == 0) {
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		for (int k = 0; k < nenv; k++)
			putenv((char *)envs[k]);
		execvp(argv[i], &argv[i]);
		fprintf(stderr, "measure: cannot run '%s': %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	child = pid;
	if (limit) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		alarm((unsigned)limit);
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("measure: wait4");
			return 2;
		}
	}
	double wall = now() - t0;
	alarm(0);
	if (timed_out)
		fprintf(stderr, "measure: '%s' killed after the %ld s limit\n", argv[i], limit);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("MEASURE status=%d wall_s=%.6f maxrss_kb=%ld user_s=%.3f sys_s=%.3f minflt=%ld\n", code, wall,
	       ru.ru_maxrss, tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_minflt);
	return code;
}
