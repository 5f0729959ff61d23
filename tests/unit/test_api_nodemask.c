// SPDX-License-Identifier: MIT
/* nd_nodemask_parse on failure (issue 14): "0-3" on a machine without
 * nodes 1-3 used to fail silently and leave node 0 set. Now the mask is
 * left as it was (core's fix in policy_parse.c), errno is EINVAL, err
 * (when given) names the bad part; a good list still parses, and leaves
 * errno alone. */
#include <errno.h>

#include "check.h"
#include "nodalloc.h"

int main(void)
{
	static char err[256];
	CHECK(nd_topology_emulate("0: cpus=0 mem=64M; 1: cpus=1 mem=64M", err, sizeof err) == 0, "emulate: %s", err);
	nd_nodemask_t m;
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 1);
	errno = 0;
	CHECK_EQ(nd_nodemask_parse("0-3", &m, NULL, 0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK(nd_nodemask_count(&m) == 1 && nd_nodemask_isset(&m, 1), "mask changed by a failure");
	CHECK(!nd_nodemask_isset(&m, 0), "node 0 set by a failure");
	errno = 0;
	CHECK_EQ(nd_nodemask_parse("0,x", &m, err, sizeof err), -1);
	CHECK(errno == EINVAL && nd_nodemask_count(&m) == 1 && err[0], "errno %d, err '%s'", errno, err);
	errno = 0;
	CHECK(nd_nodemask_parse(NULL, &m, NULL, 0) == -1 && errno == EINVAL);
	errno = 0;
	CHECK_EQ(nd_nodemask_parse("0-1", &m, NULL, 0), 0);
	CHECK(errno == 0 && nd_nodemask_count(&m) == 2, "errno %d, %d nodes", errno, nd_nodemask_count(&m));
	return CHECK_DONE();
}
