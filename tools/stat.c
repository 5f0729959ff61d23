/*
 * `nodactl stat PID|FILE [--json] [--interval=SECONDS [--count=N]]`: reads
 * the live statistics a process publishes when run with --export (or
 * NODALLOC_STATS_EXPORT=1): /dev/shm/nodalloc-PID.stats. Each table names
 * its process; with --interval it stops, saying so, when the process
 * exits (the file may outlive it while a reader has it mapped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

static nd_stats_t snap; /* 72 KiB: not on the stack */

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
	snprintf(lb->program, sizeof lb->program, "%s", slash && slash[1] ? slash + 1 : cmd);
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
			interval = strtod(a + 11, &end);
			if (*end || interval <= 0) {
				fprintf(stderr, "nodactl: stat: --interval expects a number of seconds > 0, got '%s'\n", a + 11);
				return 1;
			}
		} else if (strncmp(a, "--count=", 8) == 0) {
			count = strtol(a + 8, &end, 10);
			if (*end || count <= 0) {
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
	char path[512];
	char *end;
	long pid = strtol(target, &end, 10);
	if (*end == '\0' && pid > 0)
		snprintf(path, sizeof path, "/dev/shm/nodalloc-%ld.stats", pid);
	else
		snprintf(path, sizeof path, "%s", target);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "nodactl: stat: %s: %s (was the process started with nodactl --export or NODALLOC_STATS_EXPORT=1?)\n",
			path, strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0) {
		fprintf(stderr, "nodactl: stat: %s: empty or unreadable\n", path);
		close(fd);
		return 1;
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, "nodactl: stat: %s: mmap: %s\n", path, strerror(errno));
		return 1;
	}
	int rc = 0;
	for (long round = 0; count < 0 ? round == 0 || interval > 0 : round < count; round++) {
		int owner;
		uint64_t peak = 0;
		if (_nd_stats_from_export(map, (size_t)st.st_size, &snap, &owner, &peak) != 0) {
			fprintf(stderr, "nodactl: stat: %s: not a nodalloc statistics export (or another version)\n", path);
			rc = 1;
			break;
		}
		if (!nodactl_alive(owner)) {
			if (round == 0) {
				fprintf(stderr, "nodactl: stat: %s: process %d has exited: a stale export, not shown\n", path, owner);
				rc = 1;
			} else {
				printf("nodactl: stat: process %d has exited\n", owner);
			}
			break;
		}
		_nd_stats_label_t lb;
		nodactl_label_of(owner, &lb);
		lb.peak_in_use = peak;
		fflush(stdout);
		_nd_stats_print_snapshot(1, &snap, &lb, json);
		if (interval > 0 && (count < 0 || round + 1 < count))
			usleep((useconds_t)(interval * 1e6));
		else
			break;
	}
	fflush(stdout);
	munmap(map, (size_t)st.st_size);
	return rc;
}
