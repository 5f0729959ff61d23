// SPDX-License-Identifier: MIT
/*
 * Helpers of the nodactl tests (tests/unit/test_nodactl_*.c): run() from
 * run_cmd.h, and the program a background nodactl started.
 */
#ifndef ND_NODACTL_TEST_H
#define ND_NODACTL_TEST_H
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "run_cmd.h"

/* The first child of pid (the program nodactl started), waiting up to
 * 10 s; -1 if none appeared. */
static int child_of(pid_t pid) __attribute__((unused));
static int child_of(pid_t pid)
{
	char path[128], buf[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int i = 0; i < 100; i++) {
		FILE *f = fopen(path, "r");
		int c = 0;
		if (f) {
			if (fgets(buf, sizeof buf, f))
				c = atoi(buf);
			fclose(f);
		}
		if (c > 0)
			return c;
		usleep(100000);
	}
	return -1;
}

#endif
