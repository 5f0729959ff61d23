// SPDX-License-Identifier: MIT
/*
 * measure: runs one program with an optional LD_PRELOAD and reports its
 * wall time and peak resident set size (from wait4's rusage), so run.sh
 * needs neither /usr/bin/time nor a preload of its own.
 *
 *   measure [-p preload.so] [-t seconds] [-e NAME=VALUE]... [-x] -- program args...
 *
 * -e: set an environment variable for the program only (repeatable).
 * -t: kill the program (SIGKILL) if it runs longer, so a hanging allocator
 * cannot stall the whole benchmark run; it then reports status=137.
 * The program's own output passes through; after it exits one line goes
 * to stdout:
 *   MEASURE status=<exit code or 128+signal> wall_s=<s> maxrss_kb=<KiB> user_s=<s> sys_s=<s> minflt=<n>
 * -x: also the exact resident set at the program's exit (traced: stopped
 * at its main thread's exit, before its memory goes, /proc/<pid>/status),
 * appended as exit_rss_kb=<KiB> exit_anon_kb=<KiB> exit_file_kb=<KiB>
 * (-1 if the trace or the read failed). Why: maxrss_kb (ru_maxrss) is
 * the kernel's high-water mark of its per-CPU approximate RSS counters
 * (Linux >= 6.2: percpu_counter, a CPU's delta folded in steps of 32
 * pages): for a process of ~2 MiB that runs on one CPU it moves in steps
 * of 128 KiB per counter (anonymous, file) and reads up to ~62 pages
 * below the truth (docs/benchmarks.md). /proc's figures sum the CPUs'
 * deltas (exact, Linux >= 6.16). The exit's figure is the peak only for
 * a program whose memory peaks at its end (the small rows).
 * Exit status: the program's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
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

/* VmRSS, RssAnon and RssFile (KiB) of pid; -1 where unread */
static void read_rss(pid_t pid, long out[3])
{
	static const char *const key[3] = { "VmRSS:", "RssAnon:", "RssFile:" };
	char path[64], line[256];
	out[0] = out[1] = out[2] = -1;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		for (int k = 0; k < 3; k++)
			if (strncmp(line, key[k], strlen(key[k])) == 0)
				out[k] = strtol(line + strlen(key[k]), NULL, 10);
	fclose(f);
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
	int i = 1, at_exit = 0;
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
		} else if (strcmp(argv[i], "-x") == 0) {
			at_exit = 1;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "measure: bad argument '%s': expected -p LIB, -t SECONDS, -e NAME=VALUE, -x or --\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: measure [-p preload.so] [-t seconds] [-e NAME=VALUE]... [-x] -- program args...\n");
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
		/* traced: the exec stops it (SIGTRAP) until the parent set
		 * the options; if tracing is refused it runs untraced */
		if (at_exit)
			ptrace(PTRACE_TRACEME, 0, NULL, NULL);
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
	long ex[3] = { -1, -1, -1 };
	int first = 1;
	for (;;) {
		if (wait4(pid, &st, 0, &ru) < 0) {
			if (errno == EINTR)
				continue;
			perror("measure: wait4");
			return 2;
		}
		if (!WIFSTOPPED(st))
			break;
		/* only a traced child stops (-x): the exec's SIGTRAP, then
		 * its main thread's exit event, and any signal it gets,
		 * passed on */
		int sig = WSTOPSIG(st);
		if (first && sig == SIGTRAP) {
			first = 0;
			ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL));
			sig = 0;
		} else if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
			read_rss(pid, ex);
			sig = 0;
		}
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
	double wall = now() - t0;
	alarm(0);
	if (timed_out)
		fprintf(stderr, "measure: '%s' killed after the %ld s limit\n", argv[i], limit);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("MEASURE status=%d wall_s=%.6f maxrss_kb=%ld user_s=%.3f sys_s=%.3f minflt=%ld", code, wall, ru.ru_maxrss,
	       tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_minflt);
	if (at_exit)
		printf(" exit_rss_kb=%ld exit_anon_kb=%ld exit_file_kb=%ld", ex[0], ex[1], ex[2]);
	printf("\n");
	return code;
}
