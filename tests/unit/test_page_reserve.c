// SPDX-License-Identifier: MIT
/* Page level under an address space limit (issue 12, item 11): the
 * layout is sized to the limit and mapped as it is used, so the slots are
 * the size wanted from the nodes' memory when the room allows (they were
 * halved until all of them fit: 1 GiB slots, a quarter of the room), a
 * 1 GiB run fits, and only what runs use is mapped.
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
#include "vm_bytes.h"
#include "internal.h"

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
	/* Room for about 6 GiB more address space: 3 eager 8 GiB slots would
	 * not fit (they were halved to 1 GiB), the lazy layout does. */
	long vm = vm_bytes();
	CHECK(vm > 0);
	struct rlimit rl = { .rlim_cur = (rlim_t)vm + (6ull << 30), .rlim_max = RLIM_INFINITY };
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
	void *p = _nd_page_alloc_exact(1, 16, 1);
	CHECK(p != NULL);
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK_EQ(in.slot_bytes, 8ull << 30);
	CHECK_EQ(in.capacity_pages, (4ull << 30) >> 12); /* capacity stays the node's */
	CHECK(in.mapped_pages >= 16 && in.mapped_pages <= (4u << 20) >> 12, "mapped %llu pages",
	      (unsigned long long)in.mapped_pages);
	CHECK_EQ(_nd_page_node_of(p), 1);
	char msgs[1024] = "";
	ssize_t n = read(pfd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
	CHECK(strstr(msgs, "could not reserve") == NULL, "got: %s", msgs);
	/* A 1 GiB run maps what it needs (its aligned block), no more. */
	void *big = _nd_page_alloc_exact(1, (1u << 30) >> 12, 1);
	CHECK(big != NULL);
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK_EQ(in.mapped_pages, (2ull << 30) >> 12);
	char err2[256] = "";
	CHECK(_nd_page_check(1, err2, sizeof err2) == 0, "%s", err2);
	CHECK(big && _nd_page_free(big) == 0);
	CHECK(_nd_page_free(p) == 0);
	CHECK(_nd_page_check(1, err2, sizeof err2) == 0, "%s", err2);
	return CHECK_DONE();
}
