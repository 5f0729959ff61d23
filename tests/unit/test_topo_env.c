// SPDX-License-Identifier: MIT
/* NODALLOC_TOPOLOGY and NODALLOC_SYSFS_ROOT at library init: the test
 * runs itself as a child with the variable set (the library reads the
 * environment in its constructor) and checks what the child reports and
 * the error the library printed. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static char out[8192];
static char self[PATH_MAX];

static int run_child(const char *env)
{
	char cmd[PATH_MAX + 2048];
	snprintf(cmd, sizeof cmd, "env %s ND_TOPO_CHILD=1 '%s' 2>&1", env, self);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The child: print the live topology in one line. */
static int child(void)
{
	const _nd_topo_t *t = _nd_topo();
	printf("emulated=%d nodes=%d cpus=%d", t->emulated, t->node_limit, t->cpu_limit);
	for (int n = 0; n < t->node_limit; n++)
		if (t->online[n])
			printf(" n%d:mem=%d,first=%d", n, t->has_mem[n], t->fallback_len[n] ? t->fallback[n][0] : -1);
	printf("\n");
	return 0;
}

int main(void)
{
	if (getenv("ND_TOPO_CHILD"))
		return child();
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';

	/* The seed's case through the environment. */
	CHECK_EQ(run_child("NODALLOC_TOPOLOGY='0: cpus=0-1 mem=0; 1: cpus=2-3 mem=1G; 2: mem=2G; distance: 0-2=15'"), 0);
	CHECK(strstr(out, "emulated=1 nodes=3 cpus=4 n0:mem=0,first=2 n1:mem=1,first=1 n2:mem=1,first=2\n") != NULL, "got: %s", out);
	CHECK(strstr(out, "nodalloc:") == NULL, "unexpected message: %s", out);

	/* A bad spec: an error naming the variable, field and column; the
	 * real topology is used instead. */
	CHECK_EQ(run_child("NODALLOC_TOPOLOGY='0: cpus=0 mem=1G; 1: cpus=0 mem=1G'"), 0);
	CHECK(strstr(out, "nodalloc: error: NODALLOC_TOPOLOGY: topology spec: node 1: cpus: CPU 0 is already on another node at column 27; using the real topology") != NULL, "got: %s", out);
	CHECK(strstr(out, "emulated=0") != NULL, "got: %s", out);

	/* A fixture tree through the environment. */
	CHECK_EQ(run_child("NODALLOC_SYSFS_ROOT='" ND_SOURCE_DIR "/tests/fixtures/sysfs-gap'"), 0);
	CHECK(strstr(out, "emulated=0 nodes=4 cpus=16 n1:mem=1,first=1 n3:mem=1,first=3\n") != NULL, "got: %s", out);

	/* A missing tree: an error, then /sys. */
	CHECK_EQ(run_child("NODALLOC_SYSFS_ROOT=/nonexistent-tree"), 0);
	CHECK(strstr(out, "nodalloc: error: NODALLOC_SYSFS_ROOT: topology: /nonexistent-tree/devices/system/node: cannot read the node directory") != NULL, "got: %s", out);
	CHECK(strstr(out, "emulated=0") != NULL, "got: %s", out);

	/* The topology wins over the tree when both are set. */
	CHECK_EQ(run_child("NODALLOC_TOPOLOGY='4: ncpus=1 mem=1G' NODALLOC_SYSFS_ROOT=/nonexistent-tree"), 0);
	CHECK(strstr(out, "emulated=1 nodes=5 cpus=1 n4:mem=1,first=4\n") != NULL, "got: %s", out);
	return CHECK_DONE();
}
