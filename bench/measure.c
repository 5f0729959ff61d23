// SPDX-License-Identifier: MIT
/*
 * measure: runs one program with an optional LD_PRELOAD and reports its
 * wall time and peak resident set size (from wait4's rusage), so run.sh
 * needs neither /usr/bin/time nor a preload of its own.
 *
 *   measure [-p preload.so] [-t seconds] [-e NAME=VALUE]... [-x | -z] -- program args...
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
 * peak_kb=<KiB> (the exit figures -1 if the trace or the read failed,
 * peak_kb then maxrss_kb). Why: maxrss_kb (ru_maxrss) is the kernel's
 * high-water mark of its per-CPU approximate RSS counters (Linux >= 6.2:
 * percpu_counter, a CPU's delta folded in steps of 32 pages), read at
 * each munmap/MADV_DONTNEED and at the exit: for a process of ~2 MiB it
 * reads up to ~62 pages per counter below the truth (or above, after
 * frees), by an amount that depends on where the last fold fell
 * (docs/benchmarks.md, "smallrss"). /proc's figures sum the CPUs' deltas
 * (exact, Linux >= 6.16). peak_kb = max(maxrss_kb, exit_rss_kb): exact
 * when the program peaks at its exit (the small rows), the kernel's mark
 * otherwise; one stop per run, the same for every allocator.
 * -z: the exact peak (implies -x): a seccomp filter stops every thread
 * before each call that can lower the RSS (munmap, madvise, mremap, brk,
 * mmap, shmdt) and the exact RSS is read there, where it is a local
 * maximum (it only grows between such calls, reclaim and the kernel's
 * huge page work aside); peak_kb is the largest of those and the exit's,
 * zaps=<n> the stops. Threads and child processes are traced too (they
 * inherit the filter); as ru_maxrss, the peak is the largest process's.
 * A stop costs tens of microseconds, so the time of an allocator that
 * returns memory often grows: not for timed runs.
 * Exit status: the program's.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

/* -z, in the child before its exec: stop (SECCOMP_RET_TRACE) before every
 * call that can lower the RSS; the tracer reads the exact RSS there. Until
 * the tracer sets PTRACE_O_TRACESECCOMP (at the exec's stop) these calls
 * would fail with ENOSYS: none runs between here and the exec. */
static int zap_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_munmap, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mremap, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_brk, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_shmdt, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof f / sizeof f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv)
{
	const char *preload = NULL;
	const char *envs[16];
	int nenv = 0;
	long limit = 0;
	int i = 1, at_exit = 0, zap = 0;
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
		} else if (strcmp(argv[i], "-z") == 0) {
			at_exit = zap = 1;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "measure: bad argument '%s': expected -p LIB, -t SECONDS, -e NAME=VALUE, -x, -z or --\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: measure [-p preload.so] [-t seconds] [-e NAME=VALUE]... [-x | -z] -- program args...\n");
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
		if (at_exit && ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 && zap && zap_filter() != 0) {
			fprintf(stderr, "measure: -z: seccomp filter refused: %s\n", strerror(errno));
			_exit(127);
		}
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
	long ex[3] = { -1, -1, -1 }, peak = -1, zaps = 0;
	int first = 1;
	for (;;) {
		/* -z traces every thread and child process: wait for any */
		pid_t t = wait4(zap ? -1 : pid, &st, zap ? __WALL : 0, &ru);
		if (t < 0) {
			if (errno == EINTR)
				continue;
			perror("measure: wait4");
			return 2;
		}
		if (!WIFSTOPPED(st)) {
			if (t == pid)
				break; /* ru: the whole process's */
			continue; /* another thread or process under -z */
		}
		/* only a traced child stops (-x, -z): the exec's SIGTRAP, then
		 * its threads' exit events, -z's seccomp stops (and the
		 * clone, fork and exec events, new tasks' first SIGSTOP),
		 * and any signal it gets, passed on */
		int sig = WSTOPSIG(st), ev = st >> 16;
		if (first && t == pid && sig == SIGTRAP) {
			first = 0;
			/* TRACEEXEC: a later exec stops as an event, not as
			 * a SIGTRAP that, passed on, would kill it; -z traces
			 * every thread and child process, which inherit the
			 * filter: untraced, their calls would fail (ENOSYS) */
			long o = PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC;
			if (zap)
				o |= PTRACE_O_TRACESECCOMP | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
				     PTRACE_O_TRACEVFORK;
			ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)o);
			sig = 0;
		} else if (sig == SIGTRAP && ev) {
			if (ev == PTRACE_EVENT_SECCOMP || ev == PTRACE_EVENT_EXIT) {
				long v[3];
				read_rss(t, v);
				if (v[0] > peak)
					peak = v[0];
				zaps += ev == PTRACE_EVENT_SECCOMP;
				if (ev == PTRACE_EVENT_EXIT && t == pid)
					memcpy(ex, v, sizeof ex);
			}
			sig = 0;
		} else if (zap && sig == SIGSTOP && t != pid) {
			sig = 0; /* a new thread's or child's first stop */
		}
		ptrace(PTRACE_CONT, t, NULL, (void *)(long)sig);
	}
	double wall = now() - t0;
	alarm(0);
	if (timed_out)
		fprintf(stderr, "measure: '%s' killed after the %ld s limit\n", argv[i], limit);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("MEASURE status=%d wall_s=%.6f maxrss_kb=%ld user_s=%.3f sys_s=%.3f minflt=%ld", code, wall, ru.ru_maxrss,
	       tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_minflt);
	/* -x: the kernel's mark raised to the exact exit figure; -z: the
	 * exact figures' largest (the kernel's mark can read high too) */
	if (!zap || peak < 0)
		peak = ex[0] > ru.ru_maxrss ? ex[0] : ru.ru_maxrss;
	if (at_exit)
		printf(" exit_rss_kb=%ld exit_anon_kb=%ld exit_file_kb=%ld peak_kb=%ld", ex[0], ex[1], ex[2], peak);
	if (zap)
		printf(" zaps=%ld", zaps);
	printf("\n");
	return code;
}
