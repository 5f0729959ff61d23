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
 * process exits. After an exec (same pid) the export read by PID is the
 * new image's (it replaces the file); one its process no longer maps (it
 * executed a program without nodalloc) is refused, or ends the watch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

static _nd_stats_all_t snap; /* every node, 72 KiB: not on the stack */

/* Longest --interval: a day (longer watches are a cron job). */
#define INTERVAL_MAX 86400.0

void nodactl_sleep(double seconds)
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

int nodactl_maps_file(int pid, int fd)
{
	struct stat st;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fstat(fd, &st) == 0 ? fopen(path, "r") : NULL;
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	int found = 0, lines = 0;
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		unsigned long long ino;
		lines++;
		/* "start-end perms offset major:minor inode path" */
		if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu", &maj, &min, &ino) == 3 && ino == st.st_ino &&
		    maj == major(st.st_dev) && min == minor(st.st_dev))
			found = 1;
	}
	free(line);
	fclose(f);
	return found ? 1 : lines ? 0 : -1; /* no line: not readable (another user's) */
}

/* The label of a live process from /proc (pid, program, parent). */
void nodactl_label_of(int pid, _nd_stats_label_t *lb)
{
	memset(lb, 0, sizeof *lb);
	lb->pid = pid;
	/* argv[0]'s last component, read whole (a cut argv[0] would show a
	 * directory's name); a zombie has none: its comm */
	char path[64], *cmd = NULL;
	size_t cap = 0;
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (getdelim(&cmd, &cap, '\0', f) < 0 && cmd)
			cmd[0] = '\0';
		fclose(f);
	}
	if (!cmd || !cmd[0]) {
		snprintf(path, sizeof path, "/proc/%d/comm", pid);
		f = fopen(path, "r");
		if (f) {
			if (getline(&cmd, &cap, f) < 0 && cmd)
				cmd[0] = '\0';
			fclose(f);
		}
	}
	const char *name = cmd ? cmd : "";
	const char *slash = strrchr(name, '/');
	if (slash && slash[1])
		name = slash + 1;
	/* a display label: a longer name is shown cut to the field, with a '~' */
	if (snprintf(lb->program, sizeof lb->program, "%.*s", (int)strcspn(name, "\n"), name) >= (int)sizeof lb->program)
		lb->program[sizeof lb->program - 2] = '~';
	free(cmd);
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	f = fopen(path, "r");
	/* whole lines: a long one (Groups:, Cpus_allowed_list: of a big
	 * machine) must not be read as several */
	char *line = NULL;
	cap = 0;
	while (f && getline(&line, &cap, f) > 0) {
		unsigned long long v;
		if (sscanf(line, "PPid: %d", &lb->ppid) == 1)
			continue;
		if (sscanf(line, "VmRSS: %llu kB", &v) == 1)
			lb->rss = v << 10;
		else if (sscanf(line, "VmHWM: %llu kB", &v) == 1)
			lb->rss_peak = v << 10;
	}
	free(line);
	if (f)
		fclose(f);
}

/* --interval=SECONDS of stat and top: finite, > 0, at most a day. */
int nodactl_interval(const char *cmd, const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (end == v || *end || errno || !isfinite(d) || d <= 0 || d > INTERVAL_MAX) {
		fprintf(stderr, "nodactl: %s: --interval expects a number of seconds > 0 and <= %g, got '%s'\n", cmd,
			INTERVAL_MAX, v);
		return 1;
	}
	*out = d;
	return 0;
}

/* --count=N of stat and top: > 0, no overflow. */
int nodactl_count(const char *cmd, const char *v, long *out)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (end == v || *end || errno || n <= 0) {
		fprintf(stderr, "nodactl: %s: --count expects a number > 0, got '%s'\n", cmd, v);
		return 1;
	}
	*out = n;
	return 0;
}

/* The export's first word (its magic) is still 0: created, not yet
 * written by the process (stats.c writes the magic last). */
static bool header_unwritten(int fd)
{
	uint64_t magic = 1;
	return pread(fd, &magic, sizeof magic, 0) == (ssize_t)sizeof magic && magic == 0;
}

int nodactl_stat(int argc, char **argv)
{
	const char *target = NULL;
	bool json = false;
	double interval = 0;
	long count = -1;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strncmp(a, "--interval=", 11) == 0) {
			if (nodactl_interval("stat", a + 11, &interval))
				return 1;
		} else if (strncmp(a, "--count=", 8) == 0) {
			if (nodactl_count("stat", a + 8, &count))
				return 1;
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
	bool fresh = true; /* fd just opened: its writer may not have written the header yet */
	for (long round = 0;; round++) {
		int owner;
		uint64_t peak = 0;
		char err[256];
		int r = _nd_stats_read_export(fd, &snap, &owner, &peak, err, sizeof err);
		/* A process just started: nodactl created the file, the program
		 * has not written its header yet (the magic word, written last,
		 * is still 0). Wait for it, up to 2 s, rather than refuse it. */
		for (int w = 0; r == -1 && fresh && w < 40 && header_unwritten(fd); w++) {
			usleep(50000);
			r = _nd_stats_read_export(fd, &snap, &owner, &peak, err, sizeof err);
		}
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
		/* The process's export, still counted into? After an exec the
		 * file is the earlier program's (same pid and start time), and
		 * /proc names the new one: those figures under that name would
		 * describe another program. A new image with nodalloc replaces
		 * the file (soon after its exec): read that one. (PID form only:
		 * a file named by the user may be a copy.) */
		if (want_pid && nodactl_maps_file(owner, fd) == 0) {
			struct stat held, now;
			bool replaced = false;
			for (int w = 0; w < 10 && !replaced && nodactl_alive(owner); w++) {
				replaced = fstat(fd, &held) == 0 && lstat(path, &now) == 0 &&
					   (now.st_ino != held.st_ino || now.st_dev != held.st_dev);
				if (!replaced)
					usleep(50000);
			}
			int nfd = replaced ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) : -1;
			if (nfd >= 0) {
				close(fd);
				fd = nfd;
				fresh = true;
				round--; /* this round again, from the new file */
				continue;
			}
			if (!nodactl_alive(owner)) {
				if (round > 0)
					printf("nodactl: stat: process %d has exited\n", owner);
				else
					fprintf(stderr, "nodactl: stat: %s: process %d has exited\n", path, owner);
				rc = round > 0 ? 0 : 1;
				break;
			}
			_nd_stats_label_t lb;
			nodactl_label_of(owner, &lb);
			if (round > 0) {
				printf("nodactl: stat: process %d now runs %s, which does not publish statistics: they end here\n",
				       owner, lb.program);
			} else {
				fprintf(stderr, "nodactl: stat: %s: process %d (now %s) no longer counts into it: it executed a "
					"program that does not load nodalloc (the figures are an earlier program's; not shown)\n",
					path, owner, lb.program);
				rc = 1;
			}
			break;
		}
		fresh = false;
		last_owner = owner;
		_nd_stats_label_t lb;
		nodactl_label_of(owner, &lb);
		lb.peak_in_use = peak;
		fflush(stdout);
		_nd_stats_print_snapshot(1, &snap, &lb, json);
		if (interval <= 0 || (count > 0 && round + 1 >= count))
			break;
		nodactl_sleep(interval);
	}
	fflush(stdout);
	close(fd);
	return rc;
}
