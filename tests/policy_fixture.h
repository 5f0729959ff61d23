// SPDX-License-Identifier: MIT
/* Shared by the policy tests: one five-node emulated machine and a policy
 * parser that reports what it could not parse. */
#ifndef ND_POLICY_FIXTURE_H
#define ND_POLICY_FIXTURE_H
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Distances are all distinct, so the fallback lists are:
 *   node 0: 0 1 2 3   node 1: 1 0 2 3   node 2: 2 3 1 0   node 3: 3 2 1 0
 *   node 4 (CPU 6, no memory): 0 1 2 3
 * Node 3 has no CPU: tier 1. Tier order of node 2: 2 1 0 3. */
#define POLICY_SPEC5                                                                           \
	"0:cpus=0-1,mem=64M; 1:cpus=2-3,mem=64M; 2:cpus=4-5,mem=64M; 3:mem=64M; 4:cpus=6,mem=0; " \
	"distance: 0-1=20,0-2=30,0-3=40,1-2=25,1-3=35,2-3=22,4-0=15,4-1=26,4-2=33,4-3=44"

static char err[256];

static inline nd_policy_t pol(const char *s)
{
	nd_policy_t p;
	memset(&p, 0, sizeof p);
	if (nd_policy_parse(s, &p, err, sizeof err) != 0)
		fprintf(stderr, "parse '%s': %s\n", s, err);
	return p;
}
#endif
