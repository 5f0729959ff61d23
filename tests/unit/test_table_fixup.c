// SPDX-License-Identifier: MIT
/* Large tables when only one node has memory (the kernel's fixup_hashdist):
 * a table asked to spread is placed whole on that node, also for a CPU
 * of the memoryless node; sizing counts only nodes with memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define SPEC "0: cpus=0-1 mem=64M; 1: cpus=2-3 mem=0"

int main(void)
{
	char err[256];
	if (nd_topology_emulate(SPEC, err, sizeof err) != 0) {
		if (getenv("NODALLOC_TOPOLOGY")) {
			fprintf(stderr, "cannot emulate: %s\n", err);
			return 1;
		}
		setenv("NODALLOC_TOPOLOGY", SPEC, 1);
		execv("/proc/self/exe", (char *[]){ "test_table_fixup", NULL });
		perror("execv");
		return 1;
	}
	/* A CPU of the memoryless node: its memory node is 0. */
	nd_emulate_cpu(3);
	/* 64 MiB = 16384 pages >> 1 = 8192 entries (64 KiB). */
	nd_table_desc_t d = { .name = "Dentry cache", .bucket_size = 8, .scale = 13,
			      .flags = ND_TABLE_DISTRIBUTE | ND_TABLE_ZERO };
	nd_table_t t;
	CHECK(nd_table_alloc(&d, &t) == 0, "errno %d", errno);
	CHECK_EQ(t.entries, 8192);
	CHECK_EQ(t.flags, ND_TABLE_LOCAL | ND_TABLE_ZERO);
	CHECK_EQ(t.granule_shift, 0);
	uint64_t per[4];
	CHECK_EQ(nd_table_node_bytes(&t, per, 4), 2);
	CHECK_EQ(per[0], 65536);
	CHECK_EQ(per[1], 0);
	CHECK_EQ(per[2] + per[3], 0); /* beyond node_limit: zeroed */
	for (size_t off = 0; off < t.bytes; off += 4096)
		CHECK_EQ(nd_node_of((char *)t.base + off), 0);
	char line[256];
	nd_table_format(&t, line, sizeof line);
	CHECK_STR(line, "Dentry cache hash table entries: 8192 (order: 4, 65536 bytes, local on node 0)");
	/* The memory override sizes from the given bytes instead: 1 GiB at
	 * scale 13 = 2^17 entries, but the 1/16 cap is of that same memory
	 * (64 MiB / 8 = 2^23): 2^17, 1 MiB, still fits on the 64 MiB node. */
	nd_table_t u;
	nd_table_desc_t m = d;
	m.memory = (uint64_t)1 << 30;
	CHECK(nd_table_alloc(&m, &u) == 0);
	CHECK_EQ(u.entries, (uint64_t)1 << 17);
	nd_table_free(&u);
	nd_table_free(&t);
	CHECK(t.base == NULL && t.entries == 0);
	nd_emulate_cpu(-1);
	return CHECK_DONE();
}
