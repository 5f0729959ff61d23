// SPDX-License-Identifier: MIT
/* purge=free: a freed big run is given back with MADV_FREE: its committed
 * bytes drop at once, and the range is reused and writable. */
#include <string.h>

#include "check.h"
#include "internal.h"

static uint64_t committed(int node)
{
	static nd_stats_t s;
	s.version = ND_STATS_VERSION;
	nd_stats_get(&s);
	return s.nodes[node].bytes_committed;
}

int main(void)
{
	CHECK(_nd_opt_set("purge", "FREE") == 0);
	CHECK(_nd_opt_set("purge_threshold", "64K") == 0);
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G", err, sizeof err) == 0, "%s", err);
	uint64_t c0 = committed(0);
	char *p = _nd_page_alloc_exact(0, 32, 1); /* 128 KiB >= 64 KiB: purged on free */
	CHECK(p != NULL);
	CHECK_EQ(committed(0) - c0, 32 * 4096);
	memset(p, 3, 32 * 4096);
	CHECK(_nd_page_free(p) == 0);
	CHECK_EQ(committed(0), c0);
	_nd_page_info_t in;
	CHECK(_nd_page_info(0, &in) == 0);
	CHECK_EQ(in.purge_pages, 16);
	CHECK_EQ(in.dirty_pages, 0);
	char *q = _nd_page_alloc_exact(0, 32, 1);
	CHECK(q == p);
	memset(q, 4, 32 * 4096);
	CHECK(q[100] == 4);
	CHECK(_nd_page_free(q) == 0);
	CHECK(_nd_page_check(0, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
