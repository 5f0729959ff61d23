// SPDX-License-Identifier: MIT
/* The consumer program of tests/consumer/run.sh: built against nodalloc
 * the way an outside project would; prints where its block landed. */
#include <stdio.h>

#include "nodalloc.h"

int main(void)
{
	void *p = nd_malloc_onnode(1 << 20, 0);
	int node = nd_node_of(p);
	printf("consumer: version %d node %d\n", nd_version(), node);
	nd_free(p);
	return p && node == 0 && nd_version() == ND_VERSION ? 0 : 1;
}
