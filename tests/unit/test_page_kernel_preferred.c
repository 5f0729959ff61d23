// SPDX-License-Identifier: MIT
/* Page level on the real machine with strict=0: node slots and spread
 * granules carry MPOL_PREFERRED (advisory) instead of MPOL_BIND. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "internal.h"

int main(void)
{
	CHECK(_nd_opt_set("strict", "0") == 0); /* before the first allocation */
	const _nd_topo_t *t = _nd_topo();
	CHECK(!t->emulated);
	int node = t->cpu_mem_node[_nd_topo_cpu()];
	char *p = _nd_page_alloc_exact(node, 4, 1);
	CHECK(p != NULL, "errno %d", errno);
	static uint64_t mask[ND_MAX_NODES / 64];
	int mode = -1;
	CHECK(_nd_os_get_mempolicy(&mode, mask, ND_MAX_NODES, p, ND_MPOL_F_ADDR) == 0);
	CHECK_EQ(mode, ND_MPOL_PREFERRED);
	CHECK_EQ(mask[node / 64], 1ull << (node % 64));
	/* granules above a page: bound stretch by stretch, preferred */
	nd_policy_t il;
	char err[200], spec[64];
	snprintf(spec, sizeof spec, "interleave:%d@64K", node);
	CHECK(nd_policy_parse(spec, &il, err, sizeof err) == 0, "%s", err);
	char *s = _nd_page_alloc_spread(40, &il);
	CHECK(s != NULL);
	memset(mask, 0, sizeof mask);
	mode = -1;
	CHECK(s && _nd_os_get_mempolicy(&mode, mask, ND_MAX_NODES, s + 20 * 4096, ND_MPOL_F_ADDR) == 0);
	CHECK_EQ(mode, ND_MPOL_PREFERRED);
	CHECK_EQ(mask[node / 64], 1ull << (node % 64));
	CHECK(s && _nd_page_free(s) == 0);
	/* page granule: the kernel's own interleave (advisory too: it falls
	 * back by itself), one mbind for the run */
	snprintf(spec, sizeof spec, "interleave:%d", node);
	CHECK(nd_policy_parse(spec, &il, err, sizeof err) == 0, "%s", err);
	s = _nd_page_alloc_spread(3, &il);
	CHECK(s != NULL);
	memset(mask, 0, sizeof mask);
	mode = -1;
	CHECK(s && _nd_os_get_mempolicy(&mode, mask, ND_MAX_NODES, s + 2 * 4096, ND_MPOL_F_ADDR) == 0);
	CHECK_EQ(mode, ND_MPOL_INTERLEAVE);
	CHECK_EQ(mask[node / 64], 1ull << (node % 64));
	CHECK(s && _nd_page_free(s) == 0);
	CHECK(p && _nd_page_free(p) == 0);
	return CHECK_DONE();
}
