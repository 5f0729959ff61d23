// SPDX-License-Identifier: MIT
/*
 * `nodactl stat PID|FILE [--json] [--interval=SECONDS [--count=N]]`: reads
 * the live statistics a process publishes when run with --export (or
 * NODALLOC_STATS_EXPORT=1): /dev/shm/nodalloc-PID.stats.
 *
 * The file is opened without following a link and without blocking (a
 * FIFO at the path is refused, not waited on), and read with pread each
 * round (a file cut meanwhile is reported, never a SIGBUS). The library's
 * reader refuses a file whose process is gone, whose owner is not that
 * process's user, or whose contents are not a whole export. Each table
 * names its process; with --interval it stops, saying so, when the
 * process exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

static _nd_stats_all_t snap; /* every node, 72 KiB: not on the stack */

/* Longest --interval: a day (longer watches are a cron job). */
#define INTERVAL_MAX 86400.0

static void sleep_for(double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Is process pid still there (not a zombie)? */
bool nodactl_alive(int pid)
{
	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
		return false;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* The label of a live process from /proc (pid, program, parent). */
void nodactl_label_of(int pid, _nd_stats_label_t *lb)
{
	memset(lb, 0, sizeof *lb);
	lb->pid = pid;
	/* argv[0]'s last component; a zombie has none: its comm */
	char path[64], cmd[256] = "";
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(cmd, 1, sizeof cmd - 1, f);
		cmd[n] = '\0';
		fclose(f);
	}
	if (!cmd[0]) {
		snprintf(path, sizeof path, "/proc/%d/comm", pid);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(cmd, sizeof cmd, f))
				cmd[0] = '\0';
			cmd[strcspn(cmd, "\n")] = '\0';
			fclose(f);
		}
	}
	const char *slash = strrchr(cmd, '/');
	/* a display label: a longer name is shown cut to the field */
	if (snprintf(lb->program, sizeof lb->program, "%s", slash && slash[1] ? slash + 1 : cmd) >= (int)sizeof lb->program)
		lb->program[sizeof lb->program - 2] = '~';
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	f = fopen(path, "r");
	char line[256];
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long v;
		if (sscanf(line, "PPid: %d", &lb->ppid) == 1)
			continue;
		if (sscanf(line, "VmRSS: %llu kB", &v) == 1)
			lb->rss = v << 10;
		else if (sscanf(line, "VmHWM: %llu kB", &v) == 1)
			lb->rss_peak = v << 10;
	}
	if (f)
		fclose(f);
}

int nodactl_stat(int argc, char **argv)
{
	const char *target = NULL;
	bool json = false;
	double interval = 0;
	long count = -1;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strncmp(a, "--interval=", 11) == 0) {
			errno = 0;
			interval = strtod(a + 11, &end);
			if (end == a + 11 || *end || errno || !isfinite(interval) || interval <= 0 || interval > INTERVAL_MAX) {
				fprintf(stderr, "nodactl: stat: --interval expects a number of seconds > 0 and <= %g, got '%s'\n",
					INTERVAL_MAX, a + 11);
				return 1;
			}
		} else if (strncmp(a, "--count=", 8) == 0) {
			errno = 0;
			count = strtol(a + 8, &end, 10);
			if (end == a + 8 || *end || errno || count <= 0) {
				fprintf(stderr, "nodactl: stat: --count expects a number > 0, got '%s'\n", a + 8);
				return 1;
			}
		} else if (a[0] == '-') {
			fprintf(stderr, "nodactl: stat: unknown option '%s'\n", a);
			return 1;
		} else if (!target) {
			target = a;
		} else {
			fprintf(stderr, "nodactl: stat: unexpected argument '%s'\n", a);
			return 1;
		}
	}
	if (!target) {
		fprintf(stderr, "nodactl: stat: expects a PID or an export file\n");
		return 1;
	}
	char path[4096];
	char *end;
	errno = 0;
	long want_pid = strtol(target, &end, 10);
	if (*end == '\0' && want_pid > 0 && want_pid <= 0x7fffffff && errno == 0) {
		snprintf(path, sizeof path, "/dev/shm/nodalloc-%ld.stats", want_pid);
	} else {
		want_pid = 0;
		if (strlen(target) >= sizeof path) {
			fprintf(stderr, "nodactl: stat: file name longer than %zu characters\n", sizeof path - 1);
			return 1;
		}
		snprintf(path, sizeof path, "%s", target);
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		fprintf(stderr, "nodactl: stat: %s: %s%s\n", path, errno == ELOOP ? "a symbolic link (refused)" : strerror(errno),
			errno == ENOENT ? " (was the process started with nodactl --export or NODALLOC_STATS_EXPORT=1?)" : "");
		return 1;
	}
	int rc = 0, last_owner = 0;
	for (long round = 0;; round++) {
		int owner;
		uint64_t peak = 0;
		char err[256];
		int r = _nd_stats_read_export(fd, &snap, &owner, &peak, err, sizeof err);
		if (r == -2 && round > 0) {
			printf("nodactl: stat: process %d has exited\n", last_owner);
			break;
		}
		if (r != 0) {
			fprintf(stderr, "nodactl: stat: %s: %s%s\n", path, err, round ? " (while watching)" : "");
			rc = 1;
			break;
		}
		if (want_pid && owner != want_pid) {
			fprintf(stderr, "nodactl: stat: %s: written by process %d, not %ld\n", path, owner, want_pid);
			rc = 1;
			break;
		}
		last_owner = owner;
		_nd_stats_label_t lb;
		nodactl_label_of(owner, &lb);
		lb.peak_in_use = peak;
		fflush(stdout);
		_nd_stats_print_snapshot(1, &snap, &lb, json);
		if (interval <= 0 || (count > 0 && round + 1 >= count))
			break;
		sleep_for(interval);
	}
	fflush(stdout);
	close(fd);
	return rc;
}
