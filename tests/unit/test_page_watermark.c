// SPDX-License-Identifier: MIT
/* Page level, strict binding on a non-emulated node: before committing
 * fresh pages the node's MemFree is checked against a watermark
 * (max(MemTotal/64, 32 MiB)), so a nearly full node makes the allocation
 * fail over by policy (here: ENOMEM, there is one node) instead of letting
 * the kernel OOM-kill inside a bound range; reusing committed free pages
 * needs no check. The node is this machine's node 0, described by a
 * sysfs-shaped tree whose MemFree the test rewrites.
 * The binary runs on nodalloc's malloc, which freezes the topology at its
 * first page allocation and, here, allocates on the node under test: the
 * tree is built and rewritten with plain system calls (no stdio, no
 * system()), so nothing allocates before the tree is loaded nor while the
 * node is below its watermark. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static char root[128], path[256];

static void put(const char *rel, const char *text)
{
	snprintf(path, sizeof path, "%s/devices/system/node/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0, "%s", path);
	if (fd >= 0) {
		size_t n = strlen(text);
		CHECK(write(fd, text, n) == (ssize_t)n, "%s", path);
		close(fd);
	}
}

static const char *const files[] = { "possible", "online", "has_memory", "has_cpu",
				     "node0/cpulist", "node0/distance", "node0/meminfo" };

static void set_free_mib(unsigned mib)
{
	char buf[256];
	snprintf(buf, sizeof buf, "Node 0 MemTotal:       8388608 kB\nNode 0 MemFree:        %u kB\n", mib * 1024);
	put("node0/meminfo", buf);
	struct timespec ts = { 0, 25 * 1000 * 1000 }; /* past the 10 ms cache */
	nanosleep(&ts, NULL);
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/nd-watermark-%d", (int)getpid());
	static const char *const dirs[] = { "", "/devices", "/devices/system", "/devices/system/node",
					    "/devices/system/node/node0" };
	char d[256];
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(d, sizeof d, "%s%s", root, dirs[i]);
		CHECK(mkdir(d, 0755) == 0, "mkdir %s", d);
	}
	put("possible", "0\n");
	put("online", "0\n");
	put("has_memory", "0\n");
	put("has_cpu", "0\n");
	put("node0/cpulist", "0-1023\n");
	put("node0/distance", "10\n");
	set_free_mib(4096);
	char err[256] = "";
	CHECK(_nd_topo_load_sysfs(root, err, sizeof err) == 0, "%s", err);
	CHECK(!_nd_topo()->emulated);
	CHECK(_nd_opt_int(ND_OPT_STRICT) == 1);

	char *a = _nd_page_alloc_exact(0, 16, 1);
	CHECK(a != NULL, "errno %d", errno);
	a[0] = 1;
	CHECK(a && _nd_page_free(a) == 0); /* stays committed (dirty) */

	set_free_mib(100); /* below the 128 MiB watermark */
	char *b = _nd_page_alloc_exact(0, 16, 1); /* reuses committed pages: allowed */
	CHECK(b != NULL);
	errno = 0;
	char *c = _nd_page_alloc_exact(0, 64, 1); /* needs fresh pages: refused */
	CHECK(c == NULL && errno == ENOMEM);
	nd_policy_t pref;
	CHECK(nd_policy_parse("preferred:0", &pref, err, sizeof err) == 0);
	int got = 7;
	errno = 0;
	CHECK(_nd_page_alloc(64, 1, &pref, -1, &got) == NULL && errno == ENOMEM && got == -1);

	set_free_mib(200); /* above it again */
	c = _nd_page_alloc_exact(0, 64, 1);
	CHECK(c != NULL);
	CHECK(b && _nd_page_free(b) == 0);
	CHECK(c && _nd_page_free(c) == 0);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/devices/system/node/%s", root, files[i]);
		CHECK(unlink(path) == 0, "unlink %s", path);
	}
	for (size_t i = sizeof dirs / sizeof dirs[0]; i-- > 0;) {
		snprintf(d, sizeof d, "%s%s", root, dirs[i]);
		CHECK(rmdir(d) == 0, "rmdir %s", d);
	}
	return CHECK_DONE();
}
