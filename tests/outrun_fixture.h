// SPDX-License-Identifier: MIT
/* Shared by the tests of runs outside the slot (test_large_outrun,
 * test_large_outrun_bound): a node's page-level figures and public
 * statistics now, and whether p heads a run outside the slots. */
#ifndef ND_OUTRUN_FIXTURE_H
#define ND_OUTRUN_FIXTURE_H
#include "check.h"
#include "internal.h"

static _nd_page_info_t info(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

static nd_node_stats_t stats(int node)
{
	nd_stats_t s = { .version = ND_STATS_VERSION };
	CHECK(nd_stats_get(&s) == 0);
	return s.nodes[node];
}

static bool outside(const void *p)
{
	const _nd_pagedesc_t *d = _nd_page_desc(p);
	return d && (d->flags & ND_PGF_OUT) && d->state == ND_PG_RUN;
}
#endif
