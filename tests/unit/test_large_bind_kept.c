// SPDX-License-Identifier: MIT
/* Under bind:1 on a full node, a large malloc that fits only once the
 * calling thread's kept empty slabs (slab.c, up to 16 MiB a heap) are
 * given back gets them back instead of ENOMEM (task bindfull: the large
 * path gave them back only under an address space limit). The node is
 * filled with large blocks to 100 pages short of its capacity (emulated
 * 64 MiB), with freed small objects' slabs kept; then 200 pages. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static char err[256];

static uint64_t used1(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0);
	return in.used_pages;
}

int main(void)
{
	CHECK(nd_topology_emulate("0: cpus=0 mem=64M; 1: cpus=1 mem=64M", err, sizeof err) == 0, "%s", err);
	nd_policy_t bind1;
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "%s", err);
	CHECK(nd_set_policy(&bind1) == 0);
	static void *o[16000];
	for (int i = 0; i < 16000; i++)
		CHECK((o[i] = malloc(1000)) != NULL);
	uint64_t full = used1();
	for (int i = 0; i < 16000; i++)
		free(o[i]);
	uint64_t kept = used1(); /* the kept empty slabs, and the slab layer's metadata */
	CHECK(kept < full);

	/* a multiple of 2 MiB (not rounded up) and the rest but 100 pages
	 * (1..512 pages: not rounded); the kept slabs reach the kept bound's
	 * cap (8 MiB) since the page level purges its dirty pages for them */
	uint64_t cap = 64u << 20 >> ND_PAGE_SHIFT;
	CHECK(kept + 1024 < cap, "kept %llu", (unsigned long long)kept);
	uint64_t big = (cap - kept - 101) / 512 * 512;
	void *f1 = malloc(big << ND_PAGE_SHIFT);
	void *f2 = malloc((cap - kept - big - 100) << ND_PAGE_SHIFT);
	CHECK(f1 && f2);
	CHECK_EQ(used1(), cap - 100);

	errno = 0;
	void *p = malloc(200u << ND_PAGE_SHIFT);
	CHECK(p != NULL, "200 pages with %llu kept: errno %d", (unsigned long long)kept, errno);
	CHECK_EQ(_nd_page_node_of(p), 1);
	free(p);
	free(f2);
	free(f1);
	return CHECK_DONE();
}
