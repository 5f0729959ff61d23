// SPDX-License-Identifier: MIT
/* Shared by the large-block cache tests (test_large_cache,
 * test_large_spread_cache): a node's public statistics now. */
#ifndef ND_STATS_FIXTURE_H
#define ND_STATS_FIXTURE_H
#include <string.h>

#include "nodalloc.h"

static nd_stats_t st; /* large: static */

static const nd_node_stats_t *node_stats(int node)
{
	memset(&st, 0, sizeof st);
	st.version = ND_STATS_VERSION;
	nd_stats_get(&st);
	return &st.nodes[node];
}
#endif
