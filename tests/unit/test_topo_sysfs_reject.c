// SPDX-License-Identifier: MIT
/* Bad sysfs trees are rejected by name and the program runs on a one-node
 * view (issue 12, items 3 and 5):
 * - sysfs-nocpu: CPUs in cpu/possible, none in any node's cpulist (was a
 *   SIGFPE in every program: folding a CPU divided by zero CPUs);
 * - sysfs-secret: a cpulist holding a secret's bytes (as a link to
 *   /etc/shadow would): the message names the file, never echoes it. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "run_cmd.h"

int main(void)
{
	char err[256] = "";
	CHECK(_nd_topo_build_sysfs(FIXTURES "sysfs-nocpu", err, sizeof err) == NULL);
	CHECK(strstr(err, "sysfs-nocpu: no node has CPUs (no node's cpulist names one, though cpu/possible does)"),
	      "got: %s", err);

	/* A whole program on the tree: runs, says why the tree was refused. */
	int rc = run("NODALLOC_SYSFS_ROOT=" FIXTURES "sysfs-nocpu LD_PRELOAD=" LIBND " ls /");
	CHECK_EQ(rc, 0);
	CHECK(strstr(run_out, "NODALLOC_SYSFS_ROOT: topology: ") && strstr(run_out, "sysfs-nocpu: no node has CPUs") &&
		      strstr(run_out, "; using /sys"),
	      "got: %s", run_out);
	CHECK(strstr(run_out, "proc") != NULL, "ls printed the root directory: %s", run_out);
	rc = run("NODALLOC_SYSFS_ROOT=" FIXTURES "sysfs-nocpu LD_PRELOAD=" LIBND
		 " python3 -c \"import ctypes; l = ctypes.CDLL(None); print('nodes', l.nd_node_limit())\"");
	CHECK_EQ(rc, 0);
	CHECK(strstr(run_out, "nodes 1") != NULL, "got: %s", run_out);

	/* The file is named, its content is not shown. */
	err[0] = '\0';
	CHECK(_nd_topo_build_sysfs(FIXTURES "sysfs-secret", err, sizeof err) == NULL);
	CHECK(strstr(err, "sysfs-secret/devices/system/node/node0/cpulist: bad list: expected a number at offset 0"),
	      "got: %s", err);
	CHECK(!strstr(err, "root:") && !strstr(err, "SECRET"), "echoed the file: %s", err);
	rc = run("NODALLOC_SYSFS_ROOT=" FIXTURES "sysfs-secret LD_PRELOAD=" LIBND " /bin/true");
	CHECK_EQ(rc, 0);
	CHECK(strstr(run_out, "node0/cpulist: bad list") && !strstr(run_out, "SECRET"), "got: %s", run_out);
	return CHECK_DONE();
}
