// SPDX-License-Identifier: MIT
/* `nodactl --hardware` on an emulated topology (whole output compared),
 * on a fixture tree, on this machine, and its bad-argument exits. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"

static char out[16384];

/* Runs nodactl with args (a shell fragment), stdout+stderr into out;
 * returns the exit status. */
static int run(const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "'%s/nodactl' %s 2>&1", ND_BINARY_DIR, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	/* The seed's case plus a CXL tier. By hand (rule in
	 * test_topo_fallback.c): node 0 has no memory; 1 = 20+0+1 = 21,
	 * 2 = 15+0+0 = 15 -> "2 1". node 1: "1 2". node 2: "2 1". Tiers:
	 * node 1 (CPUs) tier 0; node 2 (CPU-less, 15 from node 0) tier 1.
	 * Tier order: node 0 "1 2", node 1 "1 2", node 2 "2 1". */
	int rc = run("--hardware --topology='0: cpus=0-1 mem=0; 1: cpus=2-3 mem=1G; 2: mem=4G;"
		     " distance: 0-1=20, 0-2=15, 1-2=30'");
	CHECK_EQ(rc, 0);
	CHECK_STR(out,
		  "available: 3 nodes (0-2)\n"
		  "node 0 cpus: 0 1\n"
		  "node 0 size: 0 MB\n"
		  "node 0 free: 0 MB\n"
		  "node 1 cpus: 2 3\n"
		  "node 1 size: 1024 MB\n"
		  "node 1 free: 1024 MB\n"
		  "node 2 cpus:\n"
		  "node 2 size: 4096 MB\n"
		  "node 2 free: 4096 MB\n"
		  "node distances:\n"
		  "node   0   1   2 \n"
		  "  0:  10  20  15 \n"
		  "  1:  20  10  30 \n"
		  "  2:  15  30  10 \n"
		  "memory tiers: 0 = {1} 1 = {2}\n"
		  "fallback lists (node order):\n"
		  "node 0: 2 1\n"
		  "node 1: 1 2\n"
		  "node 2: 2 1\n"
		  "fallback lists (tier order):\n"
		  "node 0: 1 2\n"
		  "node 1: 1 2\n"
		  "node 2: 2 1\n"
		  "cpu memory nodes (cpu: node -> memory node):\n"
		  "cpu 0: 0 -> 2\n"
		  "cpu 1: 0 -> 2\n"
		  "cpu 2: 1 -> 1\n"
		  "cpu 3: 1 -> 1\n");

	/* The subcommand form and the environment give the same. */
	char first[16384];
	memcpy(first, out, sizeof out);
	rc = run("hardware --topology '0: cpus=0-1 mem=0; 1: cpus=2-3 mem=1G; 2: mem=4G; distance: 0-1=20, 0-2=15, 1-2=30'");
	CHECK_EQ(rc, 0);
	CHECK_STR(out, first);
	rc = run("-H </dev/null; NODALLOC_TOPOLOGY='0: cpus=0-1 mem=0; 1: cpus=2-3 mem=1G; 2: mem=4G; "
		 "distance: 0-1=20, 0-2=15, 1-2=30' '" ND_BINARY_DIR "/nodactl' -H");
	CHECK_EQ(rc, 0);
	/* Through the environment the topology is nodactl's own live one, and
	 * nodactl runs on nodalloc's malloc: its own heap is taken from the
	 * memory node of the CPU it runs on (here CPUs 0-1, node 0, memory
	 * node 2), and an emulated node's free memory is its size minus what
	 * the page layer took. So "node N free" may be less, by nodactl's own
	 * heap (an amount that is not the topology's): those lines are checked
	 * as a range (at most the --topology value, at least 64 MB below it);
	 * every other line must be the same, byte for byte. */
	const char *second = strstr(out, "available: 3 nodes (0-2)\n"); /* after this machine's */
	CHECK(second != NULL, "env topology output: %s", out);
	for (const char *a = first, *b = second; second && *a;) {
		const char *ae = strchr(a, '\n'), *be = strchr(b, '\n');
		if (!ae || !be) {
			CHECK(ae && be, "env topology output ends early: %s", out);
			break;
		}
		int node;
		long fa, fb;
		if (sscanf(a, "node %d free: %ld MB", &node, &fa) == 2) {
			CHECK(sscanf(b, "node %*d free: %ld MB", &fb) == 1 && strncmp(a, b, 13) == 0, "line '%.*s'", (int)(be - b), b);
			CHECK(fb <= fa && fb >= fa - 64, "node %d free: %ld MB, --topology said %ld", node, fb, fa);
		} else {
			CHECK(ae - a == be - b && strncmp(a, b, (size_t)(ae - a)) == 0, "line '%.*s', expected '%.*s'",
			      (int)(be - b), b, (int)(ae - a), a);
		}
		a = ae + 1;
		b = be + 1;
		if (!*a)
			CHECK(*b == '\0', "env topology output has more: %s", b);
	}

	/* A fixture tree with gaps. */
	rc = run("--hardware --sysfs=" ND_SOURCE_DIR "/tests/fixtures/sysfs-gap");
	CHECK_EQ(rc, 0);
	CHECK(strncmp(out, "available: 2 nodes (1,3)\nnode 1 cpus: 0 1 8 9\nnode 1 size: 4096 MB\nnode 1 free: 1024 MB\n", 87) == 0, "got: %s", out);
	CHECK(strstr(out, "node   1   3 \n  1:  10  32 \n  3:  32  10 \n") != NULL, "got: %s", out);

	/* This machine. */
	rc = run("--hardware");
	CHECK_EQ(rc, 0);
	CHECK(strncmp(out, "available: ", 11) == 0, "got: %s", out);
	CHECK(strstr(out, "node distances:\n") != NULL);
	CHECK(strstr(out, "cpu memory nodes") != NULL);

	/* Bad arguments: named, exit 1. */
	rc = run("--bogus");
	CHECK_EQ(rc, 1);
	CHECK(strstr(out, "nodactl: unrecognized option '--bogus'") != NULL, "got: %s", out);
	rc = run("--hardware --topology");
	CHECK_EQ(rc, 1);
	CHECK(strstr(out, "option '--topology' needs a value") != NULL, "got: %s", out);
	rc = run("--hardware=yes");
	CHECK_EQ(rc, 1);
	CHECK(strstr(out, "option '--hardware=yes' takes no value") != NULL, "got: %s", out);
	/* A plain word is a program to run, as with numactl: not found -> 127. */
	rc = run("frobnicate");
	CHECK_EQ(rc, 127);
	CHECK(strstr(out, "nodactl: execution of 'frobnicate': No such file or directory") != NULL, "got: %s", out);
	rc = run("--hardware --topology='0: cpus=0 mem=1G; 1: cpus=1 mem=lots'");
	CHECK_EQ(rc, 1);
	CHECK(strstr(out, "nodactl: --topology: topology spec: node 1: mem: bad size 'lots' at column 33") != NULL, "got: %s", out);
	rc = run("--hardware --sysfs=/nonexistent");
	CHECK_EQ(rc, 1);
	CHECK(strstr(out, "nodactl: --sysfs: topology: /nonexistent/devices/system/node") != NULL, "got: %s", out);
	rc = run("");
	CHECK_EQ(rc, 1);
	CHECK(strstr(out, "usage: nodactl") != NULL);
	rc = run("--help");
	CHECK_EQ(rc, 0);
	return CHECK_DONE();
}
