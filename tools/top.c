// SPDX-License-Identifier: MIT
/*
 * `nodactl top [--interval=S] [--count=N]`: every process that exports
 * nodalloc statistics, one line each, refreshed (the screen is cleared
 * between rounds on a terminal). Found two ways:
 *   /dev/shm/nodalloc-*.stats   --export, NODALLOC_STATS_EXPORT=1;
 *   a descriptor "memfd:nodalloc-stats" in /proc/PID/fd
 *                               programs run by `nodactl --stats`.
 * A file whose exporting process is gone (stale), or no longer maps it
 * (it executed a program without nodalloc), is skipped; a descriptor
 * counts only in the process the export names (descendants inherit it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

static _nd_stats_all_t snap; /* every node, 72 KiB: not on the stack */

/* The processes shown this round (grown as needed: any number). */
typedef struct seen {
	int *pid;
	int n, cap;
} seen_t;

static bool was_seen(seen_t *s, int pid)
{
	for (int i = 0; i < s->n; i++)
		if (s->pid[i] == pid)
			return true;
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 256;
		int *p = realloc(s->pid, (size_t)cap * sizeof *p);
		if (!p)
			return false; /* shown again rather than not at all */
		s->pid = p;
		s->cap = cap;
	}
	s->pid[s->n++] = pid;
	return false;
}

static double mib(uint64_t b) { return (double)b / (1 << 20); }

/* One line for the export at path, if it is live and not shown yet. */
static int show(const char *path, int holder, seen_t *seen)
{
	int owner = 0;
	uint64_t peak = 0;
	int shown = 0;
	bool ok;
	void *map = MAP_FAILED;
	size_t size = _nd_stats_export_size();
	if (holder <= 0) {
		/* a file anyone may have put in /dev/shm: the checking reader
		 * (no link, no FIFO, its process running, its owner, whole) */
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return 0;
		char err[256];
		ok = _nd_stats_read_export(fd, &snap, &owner, &peak, err, sizeof err) == 0 &&
		     nodactl_maps_file(owner, fd) != 0; /* not an earlier image's (exec) */
		close(fd);
	} else {
		/* the memfd nodactl --stats handed to its program holder */
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		struct stat st;
		if (fstat(fd, &st) == 0 && (size_t)st.st_size >= size)
			map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		/* held, and counted into (not after an exec of a program
		 * without nodalloc) */
		int counted = map == MAP_FAILED ? 0 : nodactl_maps_file(holder, fd);
		close(fd);
		if (map == MAP_FAILED)
			return 0;
		ok = _nd_stats_from_export(map, size, &snap, &owner, &peak) == 0 && holder == owner && nodactl_alive(owner) &&
		     counted != 0;
	}
	if (ok && !was_seen(seen, owner)) {
		_nd_stats_label_t lb;
		nodactl_label_of(owner, &lb);
		nd_node_stats_t t = { 0 };
		/* every node in use, however many */
		char *nodes = NULL;
		size_t nodes_len = 0;
		FILE *nf = open_memstream(&nodes, &nodes_len);
		for (int n = 0; n < snap.node_limit; n++) {
			const nd_node_stats_t *s = &snap.nodes[n];
			t.numa_hit += s->numa_hit;
			t.numa_miss += s->numa_miss;
			t.bytes_in_use += s->bytes_in_use;
			t.bytes_committed += s->bytes_committed;
			if (s->bytes_in_use && nf)
				fprintf(nf, "%s%d:%.1f", ftell(nf) ? " " : "", n, mib(s->bytes_in_use));
		}
		if (nf)
			fclose(nf);
		uint64_t frag = t.bytes_committed > t.bytes_in_use ? t.bytes_committed - t.bytes_in_use : 0;
		printf("%7d %7d %-16.16s %10.2f %10.2f %10.2f %10.2f %10.2f %10llu %8llu  %s\n", owner, lb.ppid, lb.program,
		       mib(t.bytes_in_use), mib(peak), mib(t.bytes_committed), mib(frag), mib(lb.rss),
		       (unsigned long long)t.numa_hit, (unsigned long long)t.numa_miss, nodes && nodes[0] ? nodes : "-");
		free(nodes);
		shown = 1;
	}
	if (map != MAP_FAILED)
		munmap(map, size);
	return shown;
}

/* nodactl --stats's memfds, held by the programs it runs. */
static int scan_memfds(seen_t *seen)
{
	int shown = 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	for (struct dirent *p; (p = readdir(proc));) {
		int pid = atoi(p->d_name);
		if (pid <= 0)
			continue;
		char dir[64];
		snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		for (struct dirent *f; (f = readdir(fds));) {
			if (f->d_name[0] == '.')
				continue;
			char link[400], target[256];
			snprintf(link, sizeof link, "%s/%s", dir, f->d_name);
			ssize_t n = readlink(link, target, sizeof target - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			if (strncmp(target, "/memfd:nodalloc-stats", 21) == 0)
				shown += show(link, pid, seen);
		}
		closedir(fds);
	}
	closedir(proc);
	return shown;
}

static int scan_files(seen_t *seen)
{
	int shown = 0;
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		int pid;
		char tail[16];
		if (sscanf(e->d_name, "nodalloc-%d.%15s", &pid, tail) != 2 || strcmp(tail, "stats") != 0)
			continue;
		char path[300];
		snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
		shown += show(path, 0, seen);
	}
	closedir(d);
	return shown;
}

int nodactl_top(int argc, char **argv)
{
	double interval = 2;
	long count = -1;
	for (int i = 2; i < argc; i++) {
		if (strncmp(argv[i], "--interval=", 11) == 0) {
			if (nodactl_interval("top", argv[i] + 11, &interval))
				return 1;
		} else if (strncmp(argv[i], "--count=", 8) == 0) {
			if (nodactl_count("top", argv[i] + 8, &count))
				return 1;
		} else {
			fprintf(stderr, "nodactl: top: unknown argument '%s' (nodactl top [--interval=S] [--count=N])\n",
				argv[i]);
			return 1;
		}
	}
	bool tty = isatty(1);
	static seen_t seen;
	for (long round = 0; count < 0 || round < count; round++) {
		if (tty)
			printf("\033[H\033[J");
		printf("nodactl top: processes exporting nodalloc statistics (MiB), every %gs\n", interval);
		printf("%7s %7s %-16s %10s %10s %10s %10s %10s %10s %8s  %s\n", "PID", "PPID", "PROGRAM", "IN_USE", "PEAK",
		       "COMMITTED", "FRAGMENTED", "RSS", "HIT_RUNS", "MISS", "IN_USE_BY_NODE");
		seen.n = 0;
		int n = scan_files(&seen) + scan_memfds(&seen);
		if (n == 0)
			printf("(none: start programs with nodactl --export or --stats, or NODALLOC_STATS_EXPORT=1)\n");
		fflush(stdout);
		if (count > 0 && round + 1 >= count)
			break;
		nodactl_sleep(interval);
	}
	return 0;
}
