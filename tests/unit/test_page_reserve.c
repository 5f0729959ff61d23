// SPDX-License-Identifier: MIT
/* Page level: when the whole reservation cannot be had (here RLIMIT_AS),
 * the slots shrink until it fits, with one warning naming both sizes,
 * and allocation works in the smaller slots.
 * The arenas are reserved at the first page allocation, which is the first
 * malloc too (the binary runs on nodalloc's malloc): nothing may allocate
 * before the limit is set, so statm is read without stdio. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static long vm_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10) * 4096;
}

int main(void)
{
	char err[256] = "";
	/* 4 GiB nodes: slots of 8 GiB wanted, 3 slots = 24 GiB (+8 GiB to align). */
	CHECK(nd_topology_emulate("0: cpus=0 mem=4G; 1: cpus=1 mem=4G", err, sizeof err) == 0, "%s", err);
	int pfd[2];
	/* non-blocking: a missing warning fails the check below, not the clock */
	CHECK(pipe2(pfd, O_NONBLOCK) == 0);
	char fd[16];
	snprintf(fd, sizeof fd, "%d", pfd[1]);
	_nd_opt_set("msg_fd", fd);
	/* Room for about 6 GiB more address space: 1 GiB slots fit (3 + 1 to
	 * align, plus descriptors), 2 GiB ones do not (6 + 2). */
	long vm = vm_bytes();
	CHECK(vm > 0);
	struct rlimit rl = { .rlim_cur = (rlim_t)vm + (6ull << 30), .rlim_max = RLIM_INFINITY };
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
	void *p = _nd_page_alloc_exact(1, 16, 1);
	CHECK(p != NULL);
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK_EQ(in.slot_bytes, 1ull << 30);
	CHECK_EQ(in.capacity_pages, (4ull << 30) >> 12); /* capacity stays the node's */
	CHECK_EQ(_nd_page_node_of(p), 1);
	char msgs[1024] = "";
	ssize_t n = read(pfd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
	CHECK(strstr(msgs, "nodalloc: warning: page: could not reserve 3 slots of 8192 MiB; using 1024 MiB slots") != NULL,
	      "got: %s", msgs);
	/* The slot (not the 4 GiB node) is the limit now. */
	void *big = _nd_page_alloc_exact(1, (1u << 30) >> 12, 1);
	CHECK(big == NULL);
	CHECK(_nd_page_free(p) == 0);
	big = _nd_page_alloc_exact(1, (1u << 30) >> 12, 1);
	CHECK(big != NULL);
	CHECK(big && _nd_page_free(big) == 0);
	return CHECK_DONE();
}
