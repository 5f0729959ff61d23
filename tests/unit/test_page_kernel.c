// SPDX-License-Identifier: MIT
/* Page level on the real machine (no emulation): the kernel confirms the
 * binding the library set. get_mempolicy(MPOL_F_ADDR) on a node slot and
 * on a spread run's granules reports MPOL_BIND to that node (strict is
 * the default); move_pages (query mode) after touching says the pages
 * are on that node; a freed spread run goes back to the default policy. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "internal.h"

static int policy_of(const void *p, uint64_t *mask)
{
	int mode = -1;
	memset(mask, 0, ND_MAX_NODES / 8);
	int r = _nd_os_get_mempolicy(&mode, mask, ND_MAX_NODES, p, ND_MPOL_F_ADDR);
	CHECK(r == 0, "get_mempolicy: errno %d", -r);
	return mode;
}

int main(void)
{
	const _nd_topo_t *t = _nd_topo();
	CHECK(!t->emulated);
	int node = t->cpu_mem_node[_nd_topo_cpu()];
	CHECK(node >= 0 && t->has_mem[node]);
	static uint64_t mask[ND_MAX_NODES / 64];

	char *p = _nd_page_alloc_exact(node, 64, 1);
	CHECK(p != NULL, "errno %d", errno);
	if (!p)
		return CHECK_DONE();
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	/* The whole slot carries the binding, touched or not. */
	const char *probe[] = { p, (char *)in.base, (char *)in.base + in.slot_bytes - 4096,
				(char *)in.base + in.slot_bytes / 2 };
	for (unsigned k = 0; k < 4; k++) {
		CHECK_EQ(policy_of(probe[k], mask), ND_MPOL_BIND);
		CHECK(mask[node / 64] == 1ull << (node % 64), "mask word %llx for node %d",
		      (unsigned long long)mask[node / 64], node);
	}
	/* Touch, then ask where the pages are. */
	memset(p, 7, 64 * 4096);
	const void *pages[64];
	int status[64];
	for (int j = 0; j < 64; j++) {
		pages[j] = p + j * 4096;
		status[j] = -1000;
	}
	int r = _nd_os_move_pages(0, 64, pages, NULL, status, 0);
	CHECK(r == 0, "move_pages: errno %d", -r);
	for (int j = 0; j < 64; j++)
		CHECK_EQ(status[j], node);

	/* A spread run: each granule bound to its node, pages there. */
	nd_policy_t il;
	char err[200], spec[64];
	snprintf(spec, sizeof spec, "interleave:%d@8K", node);
	CHECK(nd_policy_parse(spec, &il, err, sizeof err) == 0, "%s", err);
	char *s = _nd_page_alloc_spread(16, &il);
	CHECK(s != NULL);
	if (s) {
		_nd_page_info_t mx;
		CHECK(_nd_page_info(-1, &mx) == 0);
		CHECK((char *)s >= (char *)mx.base && (char *)s < (char *)mx.base + mx.slot_bytes);
		for (int j = 0; j < 16; j++) {
			CHECK_EQ(policy_of(s + j * 4096, mask), ND_MPOL_BIND);
			CHECK_EQ(mask[node / 64], 1ull << (node % 64));
			CHECK_EQ(_nd_page_node_of(s + j * 4096), node);
		}
		memset(s, 1, 16 * 4096);
		for (int j = 0; j < 16; j++)
			pages[j] = s + j * 4096;
		CHECK(_nd_os_move_pages(0, 16, pages, NULL, status, 0) == 0);
		for (int j = 0; j < 16; j++)
			CHECK_EQ(status[j], node);
		CHECK(_nd_page_free(s) == 0);
		CHECK_EQ(policy_of(s, mask), ND_MPOL_DEFAULT);
		/* Freed with DONTNEED: no page behind it any more. */
		CHECK(_nd_os_move_pages(0, 1, pages, NULL, status, 0) == 0);
		CHECK(status[0] < 0, "status %d", status[0]);
	}
	CHECK(_nd_page_free(p) == 0);
	return CHECK_DONE();
}
