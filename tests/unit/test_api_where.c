// SPDX-License-Identifier: MIT
/* nd_where and nd_move on this machine's real topology (issue 14): every
 * touched page of a block is on a node the kernel reports (one-node
 * machine: all on node 0), pages never touched are on none, a move to the
 * node the pages are on succeeds and keeps them, a move to a node that does
 * not exist fails with EINVAL and moves nothing, one to ND_NODE_LOCAL
 * succeeds; bad arguments: EINVAL. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "nodalloc.h"

static long sum(const uint64_t *c, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += (long)c[i];
	return s;
}

int main(void)
{
	enum { MAXN = 1024 };
	static uint64_t c[MAXN];
	int limit = nd_node_limit();
	size_t sz = 1 << 20;
	unsigned char *b = malloc(sz);
	memset(b, 3, sz);
	long n = nd_where(b, sz, c, MAXN);
	CHECK_EQ(n, (long)(sz / 4096));
	CHECK_EQ(sum(c, MAXN), n);
	int home = -1;
	for (int i = 0; i < MAXN; i++)
		if (c[i])
			home = home < 0 ? i : -2;
	CHECK(home >= 0 && home < limit, "one node holds the block: %d", home);
	if (limit == 1)
		CHECK_EQ(home, 0);
	/* an unaligned range counts each page it touches once */
	CHECK_EQ(nd_where(b + 4000, 200, c, MAXN), 2);
	CHECK_EQ(nd_where(b + 5, 0, c, MAXN), 1);
	/* counts beyond max are left out of counts, not of the return */
	c[1] = 77;
	CHECK_EQ(nd_where(b, sz, c, 1), home == 0 ? n : n);
	CHECK_EQ(c[1], 77); /* untouched: only counts[0..max) is written */

	/* never touched: on no node */
	size_t msz = 64 << 10;
	char *m = mmap(NULL, msz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK_EQ(nd_where(m, msz, c, MAXN), 0);
	m[4096] = 1;
	CHECK_EQ(nd_where(m, msz, c, MAXN), 1);
	CHECK_EQ(c[home], 1);
	/* nd_move: to where it is: 0, nothing changes; untouched pages are
	 * no error */
	CHECK_EQ(nd_move(m, msz, home), 0);
	CHECK_EQ(nd_where(m, msz, c, MAXN), 1);
	munmap(m, msz);
	CHECK_EQ(nd_move(b, sz, home), 0);
	CHECK_EQ(nd_where(b, sz, c, MAXN), n);
	CHECK_EQ((long)c[home], n);
	bool same = true;
	for (size_t i = 0; i < sz; i++)
		same &= b[i] == 3;
	CHECK(same, "contents intact");

	/* a node that does not exist (node 1 on a one-node machine) */
	errno = 0;
	CHECK(nd_move(b, sz, limit) == -1 && errno == EINVAL, "node %d: errno %d", limit, errno);
	errno = 0;
	CHECK(nd_move(b, sz, -2) == -1 && errno == EINVAL, "node -2: errno %d", errno);
	CHECK_EQ(nd_where(b, sz, c, MAXN), n);
	CHECK_EQ((long)c[home], n); /* nothing moved */
	/* ND_NODE_LOCAL: the calling CPU's memory node (a one-node machine: home) */
	CHECK_EQ(nd_move(b, sz, ND_NODE_LOCAL), 0);
	if (limit == 1)
		CHECK(nd_where(b, sz, c, MAXN) == n && (long)c[home] == n, "moved away from node %d", home);

	/* bad arguments */
	errno = 0;
	CHECK(nd_where(NULL, 10, c, MAXN) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(nd_where(b, 10, NULL, MAXN) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(nd_where(b, 10, c, 0) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(nd_where(b, SIZE_MAX, c, MAXN) == -1 && errno == EINVAL, "wrapping range");
	errno = 0;
	CHECK(nd_move(NULL, 10, 0) == -1 && errno == EINVAL);
	free(b);
	return CHECK_DONE();
}
