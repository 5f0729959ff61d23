// SPDX-License-Identifier: MIT
/* Option values are not cut or wrapped silently (issue 12, items 12, 13):
 * a 16-node spec with its full distance matrix (~1000 characters, over the
 * old 511 cap) works in NODALLOC_TOPOLOGY and through nodactl --topology;
 * NODALLOC_MSG_FD beyond int range is refused by name (it wrapped). */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"
#include "run_cmd.h"

static char spec[4096];

int main(int argc, char **argv)
{
	if (argc > 1) { /* re-executed with the environment under test */
		printf("nodes %d distance 0-5 %d\n", nd_node_limit(), nd_node_distance(0, 5));
		return 0;
	}
	/* 16 nodes, four sockets of four: 10 local, 12 same socket, 32 other */
	size_t k = (size_t)snprintf(spec, sizeof spec, "0-15: ncpus=1 mem=64M; distance: ");
	for (int a = 0; a < 16; a++)
		for (int b = 0; b < 16; b++)
			k += (size_t)snprintf(spec + k, sizeof spec - k, "%d%s", a == b ? 10 : a / 4 == b / 4 ? 12 : 32,
					      b < 15 ? " " : a < 15 ? " / " : "");
	CHECK(k > 829, "spec of %zu characters", k);
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	self[sl > 0 ? sl : 0] = '\0';
	CHECK_EQ(run("NODALLOC_TOPOLOGY='%s' %s child", spec, self), 0);
	CHECK(strcmp(run_out, "nodes 16 distance 0-5 32\n") == 0, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --topology='%s' -- %s child", spec, self), 0);
	CHECK(strstr(run_out, "nodes 16 distance 0-5 32\n") && !strstr(run_out, "longer than"), "got: %s", run_out);

	/* a descriptor that does not fit an int: refused, messages stay on 2 */
	CHECK_EQ(run("NODALLOC_MSG_FD=4294967298 %s child", self), 0);
	CHECK(strstr(run_out, "NODALLOC_MSG_FD: descriptor 4294967298 out of range"), "got: %s", run_out);
	CHECK_EQ(run("NODALLOC_MSG_FD=-5 %s child", self), 0);
	CHECK(strstr(run_out, "out of range"), "got: %s", run_out);
	printf("spec of %zu characters\n", k);
	return CHECK_DONE();
}
