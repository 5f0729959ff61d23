// SPDX-License-Identifier: MIT
/* Shared by the topology tests: a node's fallback list as "a b c". */
#ifndef ND_TOPO_FIXTURE_H
#define ND_TOPO_FIXTURE_H
#include <stdio.h>

#include "internal.h"

static char got_buf[256];
static inline const char *list_str(const _nd_topo_t *t, int node, int tier)
{
	const int *l = tier ? t->fallback_tier[node] : t->fallback[node];
	size_t o = 0;
	got_buf[0] = '\0';
	for (int i = 0; i < t->fallback_len[node]; i++)
		o += (size_t)snprintf(got_buf + o, sizeof got_buf - o, "%s%d", i ? " " : "", l[i]);
	return got_buf;
}
#endif
