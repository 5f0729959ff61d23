/*
 * `nodactl stat PID|FILE [--json] [--interval=SECONDS [--count=N]]`: reads
 * the live statistics a process publishes when run with --export (or
 * NODALLOC_STATS_EXPORT=1): /dev/shm/nodalloc-PID.stats.
 */
#define _GNU_SOURCE
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

static nd_stats_t snap; /* 72 KiB: not on the stack */

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
	for (long round = 0; count < 0 ? round == 0 || interval > 0 : round < count; round++) {
		int owner;
		if (_nd_stats_from_export(map, (size_t)st.st_size, &snap, &owner) != 0) {
			fprintf(stderr, "nodactl: stat: %s: not a nodalloc statistics export (or another version)\n", path);
			return 1;
		}
		if (!json)
			printf("pid %d, %s\n", owner, path);
		fflush(stdout);
		_nd_stats_print_snapshot(1, &snap, json);
		if (interval > 0 && (count < 0 || round + 1 < count))
			usleep((useconds_t)(interval * 1e6));
		else
			break;
	}
	munmap(map, (size_t)st.st_size);
	return 0;
}
