// SPDX-License-Identifier: MIT
/* Edge cases of the public API found by a hostile review (audit12):
 *  - a node id in a gap of the topology (below node_limit, not online) is
 *    EINVAL for every node call, also once the thread has heaps of other
 *    nodes (its heap array then spans the gap: the fast paths' refill
 *    must not take it for a node without memory, ENOMEM);
 *  - a weighted policy object whose node set has no weight (the weights
 *    then come from the set, or the set from the weights: nd_policy_check
 *    accepts both) places blocks of more than a page where its
 *    normalized form says (the raw object hung the node choice).
 * And edges2's:
 *  - ND_NODE_LOCAL is the calling CPU's memory node for every call that
 *    takes a node (nd_malloc_onnode refused it, the x calls took it);
 *  - nd_malloc_interleaved takes the granularities "@gran" takes (0 or
 *    4K << k up to 1G): any other is EINVAL, named under
 *    NODALLOC_VERBOSE (it was rounded up, and clamped to 1G);
 *  - memalign and friends at alignments of 2^62 + 1 and up give glibc
 *    2.36's errno (memalign(2^63, 1): ENOMEM, not EINVAL). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

/* node 1 is a gap: node_limit 3 */
static const char *SPEC = "0: cpus=0 mem=256M; 2: cpus=1 mem=256M";

static void gap_node(void)
{
	static const size_t sizes[] = { 0, 10, 100, 5000, 32768, 40000 };
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			size_t sz = sizes[i];
			void *p;
			errno = 0;
			p = nd_malloc_onnode(sz, 1);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_malloc_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_mallocx_onnode(sz, 1, 0);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_mallocx_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_mallocx_onnode(sz, 1, ND_MALLOCX_ZERO | ND_MALLOCX_LG_ALIGN(6));
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_mallocx_onnode(%zu, gap, zero|64) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_calloc_onnode(1, sz, 1);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_calloc_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_aligned_alloc_onnode(256, sz, 1);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_aligned_alloc_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			/* the real nodes around the gap work (and give the thread its heaps) */
			for (int n = 0; n <= 2; n += 2) {
				p = nd_malloc_onnode(sz, n);
				CHECK(p != NULL && nd_node_of(p) == n, "nd_malloc_onnode(%zu, %d) = %p on %d", sz, n, p, p ? nd_node_of(p) : -2);
				free(p);
			}
		}
	}
}

static void weighted_raw(void)
{
	static const size_t sizes[] = { 100, 5000, 40000, 1 << 20 };
	nd_policy_t p;
	char err[256];
	/* a set without weights: every node of the set weighs 1 */
	CHECK(nd_policy_parse("weighted:2=3", &p, err, sizeof err) == 0, "%s", err);
	p.weights[2] = 0;
	CHECK(nd_policy_check(&p, err, sizeof err) == 0, "%s", err);
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		void *a = nd_malloc_policy(sizes[i], &p);
		CHECK(a != NULL && nd_node_of(a) == 2, "set {2}, no weight: %zu on %d", sizes[i], a ? nd_node_of(a) : -2);
		free(a);
		a = nd_mallocx_policy(sizes[i], &p, ND_MALLOCX_ZERO);
		CHECK(a != NULL && nd_node_of(a) == 2, "x, set {2}, no weight: %zu on %d", sizes[i], a ? nd_node_of(a) : -2);
		free(a);
	}
	/* weights outside the set: the weights name the nodes */
	CHECK(nd_policy_parse("weighted:0=1", &p, err, sizeof err) == 0, "%s", err);
	nd_nodemask_zero(&p.nodes);
	nd_nodemask_set(&p.nodes, 2);
	CHECK(nd_policy_check(&p, err, sizeof err) == 0, "%s", err);
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		void *a = nd_malloc_policy(sizes[i], &p);
		CHECK(a != NULL && nd_node_of(a) == 0, "set {2}, weight 0=1: %zu on %d", sizes[i], a ? nd_node_of(a) : -2);
		free(a);
	}
}

/* The calling CPU's memory node: emulated CPU 0 is on node 0, CPU 1 on 2. */
static void local_node(void)
{
	static const size_t sizes[] = { 0, 10, 100, 5000, 32768, 40000, 1 << 20 };
	for (int cpu = 0; cpu <= 1; cpu++) {
		nd_emulate_cpu(cpu);
		int want = cpu ? 2 : 0;
		for (int round = 0; round < 2; round++) {
			for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
				size_t sz = sizes[i];
				void *p[5];
				p[0] = nd_malloc_onnode(sz, ND_NODE_LOCAL);
				p[1] = nd_mallocx_onnode(sz, ND_NODE_LOCAL, 0);
				p[2] = nd_mallocx_onnode(sz, ND_NODE_LOCAL, ND_MALLOCX_ZERO | ND_MALLOCX_LG_ALIGN(6));
				p[3] = nd_calloc_onnode(1, sz, ND_NODE_LOCAL);
				p[4] = nd_aligned_alloc_onnode(256, sz, ND_NODE_LOCAL);
				for (int k = 0; k < 5; k++) {
					CHECK(p[k] != NULL && nd_node_of(p[k]) == want, "cpu %d call %d size %zu: %p on %d", cpu,
					      k, sz, p[k], p[k] ? nd_node_of(p[k]) : -2);
					free(p[k]);
				}
			}
		}
		/* a heap of the creating CPU's node */
		nd_heap_t *h = nd_heap_new(ND_NODE_LOCAL);
		CHECK(h != NULL, "nd_heap_new(local) on cpu %d: errno %d", cpu, errno);
		void *a = h ? nd_heap_malloc(h, 100) : NULL, *b = h ? nd_heap_malloc(h, 100000) : NULL;
		CHECK(a && b && nd_node_of(a) == want && nd_node_of(b) == want, "heap of cpu %d: %d %d", cpu,
		      a ? nd_node_of(a) : -2, b ? nd_node_of(b) : -2);
		if (h)
			nd_heap_destroy(h);
	}
	nd_emulate_cpu(0);
	/* any other negative node is still EINVAL */
	errno = 0;
	void *p = nd_malloc_onnode(100, -2);
	CHECK(p == NULL && errno == EINVAL, "nd_malloc_onnode(-2) = %p errno %d", p, errno);
	errno = 0;
	p = nd_mallocx_onnode(100, -2, 0);
	CHECK(p == NULL && errno == EINVAL, "nd_mallocx_onnode(-2) = %p errno %d", p, errno);
	errno = 0;
	nd_heap_t *h = nd_heap_new(-2);
	CHECK(h == NULL && errno == EINVAL, "nd_heap_new(-2) = %p errno %d", (void *)h, errno);
}

static int pipefd[2];
static char msgs[4096];
static void drain(void)
{
	ssize_t n = read(pipefd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
}

/* The granularities of "@gran" (policy_parse.c) and no other. */
static void interleaved_gran(void)
{
	static const size_t good[] = { 0, 4096, 8192, 65536, 2 << 20, 1 << 30 };
	static const size_t bad[] = { 1, 512, 4095, 4097, 12288, 6 << 20, (size_t)2 << 30, (size_t)1 << 40, SIZE_MAX };
	nd_nodemask_t m;
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 0);
	nd_nodemask_set(&m, 2);
	for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
		void *p = nd_malloc_interleaved(1 << 20, &m, good[i]);
		CHECK(p != NULL, "granularity %zu refused: errno %d", good[i], errno);
		free(p);
	}
	CHECK(pipe(pipefd) == 0 && fcntl(pipefd[0], F_SETFL, O_NONBLOCK) == 0);
	char fd[16];
	snprintf(fd, sizeof fd, "%d", pipefd[1]);
	CHECK(_nd_opt_set("msg_fd", fd) == 0);
	for (int verbose = 0; verbose <= 1; verbose++) {
		CHECK(_nd_opt_set("verbose", verbose ? "1" : "0") == 0);
		for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			errno = 0;
			void *p = nd_malloc_interleaved(1 << 20, &m, bad[i]);
			CHECK(p == NULL && errno == EINVAL, "granularity %zu: %p errno %d", bad[i], p, errno);
			drain();
			char want[128];
			snprintf(want, sizeof want, "nd_malloc_interleaved: granularity %zu is not 0 (one page) or 4K", bad[i]);
			CHECK(verbose ? strstr(msgs, want) != NULL : msgs[0] == '\0', "verbose %d, %zu: got '%s'", verbose,
			      bad[i], msgs);
		}
	}
	CHECK(_nd_opt_set("verbose", "0") == 0);
	CHECK(_nd_opt_set("msg_fd", "2") == 0);
}

/* glibc 2.36's answers (measured: a program run with and without the
 * library preloaded); posix_memalign returns its error, keeps errno and
 * *out. */
#define NULL_ERRNO(expr, e)                                                                           \
	do {                                                                                          \
		errno = 0;                                                                            \
		void *r_ = (expr);                                                                    \
		CHECK(r_ == NULL && errno == (e), #expr " = %p errno %d, want %d", r_, errno, (e));   \
	} while (0)
#define PM_ERR(al, sz, e)                                                                                      \
	do {                                                                                                   \
		void *o_ = &errno;                                                                             \
		errno = 4242;                                                                                  \
		int r_ = posix_memalign(&o_, (al), (sz));                                                     \
		CHECK(r_ == (e) && errno == 4242 && o_ == &errno, "posix_memalign(" #al ", " #sz ") = %d errno %d", r_, \
		      errno);                                                                                  \
	} while (0)
/* at run time: gcc warns on constant sizes above PTRDIFF_MAX, clang on alignments above 2^32 */
static volatile size_t vmax = SIZE_MAX, vh = (size_t)1 << 63;
static void huge_align(void)
{
	const size_t h = vh, q = h >> 1, max = vmax;
	NULL_ERRNO(memalign(h, 1), ENOMEM);
	NULL_ERRNO(memalign(h, 0), ENOMEM);
	NULL_ERRNO(memalign(h, max), ENOMEM);
	NULL_ERRNO(memalign(q + 1, 1), ENOMEM); /* rounded up to 2^63 */
	NULL_ERRNO(memalign(h - 1, 1), ENOMEM);
	NULL_ERRNO(memalign(q, 1), ENOMEM);
	NULL_ERRNO(memalign(h + 1, 1), EINVAL);
	NULL_ERRNO(memalign(max, 1), EINVAL);
	NULL_ERRNO(memalign(64, max), ENOMEM);
	NULL_ERRNO(aligned_alloc(h, 1), ENOMEM);
	NULL_ERRNO(aligned_alloc(h + 1, 1), EINVAL);
	NULL_ERRNO(aligned_alloc(max, 1), EINVAL);
	NULL_ERRNO(aligned_alloc(4096, max - 100), ENOMEM);
	PM_ERR(h, 1, ENOMEM);
	PM_ERR(h, 0, ENOMEM);
	PM_ERR(h + 1, 1, EINVAL);
	PM_ERR(max, 1, EINVAL);
	PM_ERR(16, max, ENOMEM);
	NULL_ERRNO(valloc(max), ENOMEM);
	NULL_ERRNO(valloc(h), ENOMEM);
	NULL_ERRNO(pvalloc(max), ENOMEM);
	NULL_ERRNO(pvalloc(max - 4095), ENOMEM);
	NULL_ERRNO(pvalloc(max - 4096), ENOMEM);
}

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	gap_node();
	weighted_raw();
	local_node();
	interleaved_gran();
	huge_align();
	return CHECK_DONE();
}
