// SPDX-License-Identifier: MIT
/* The placement calls with alignment and zeroing, prepared policies,
 * sized free, nd_good_size and nd_version (issue 14), under an emulated
 * two-node topology:
 *  - every (size, alignment, node) lands on its node, aligned, and zeroed
 *    when asked, also when the memory is reused after a free with its old
 *    contents still in it;
 *  - a prepared policy is the same object for equal policies and keeps
 *    nd_malloc_policy on its fast path;
 *  - a thread's first x call on a node it has no heap of, at an alignment
 *    whose class is a twin, gets that alignment;
 *  - bad node, alignment, flags, policy: EINVAL; calloc overflow: ENOMEM;
 *  - the sized frees accept every size a block can have been asked with
 *    (a spreading policy's page runs of a class's size too, a public
 *    heap's objects), and
 *    NODALLOC_CHECK=1 aborts on one it cannot (naming the call). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "policy_fixture.h"

/* C23, exported by the override (glibc 2.36 does not declare them) */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";

static const size_t SIZES[] = { 0, 1, 16, 24, 100, 255, 1000, 4096, 5000, 32768, 40000, 1 << 20 };
static const unsigned LGS[] = { 0, 4, 5, 6, 8, 12, 13, 16 };
#define NS (sizeof SIZES / sizeof SIZES[0])
#define NL (sizeof LGS / sizeof LGS[0])

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Fills, frees, then allocates again with ZERO: the same sizes come back
 * from the same slabs (LIFO), old contents and all. */
static void zero_reuse(int node, const nd_policy_t *p)
{
	enum { K = 64 };
	static unsigned char *b[K];
	for (unsigned si = 0; si < NS; si++) {
		for (unsigned li = 0; li < 3; li++) {
			size_t sz = SIZES[si];
			unsigned fl = ND_MALLOCX_LG_ALIGN(LGS[li]);
			for (int i = 0; i < K; i++) {
				b[i] = p ? nd_mallocx_policy(sz, p, fl) : nd_mallocx_onnode(sz, node, fl);
				if (b[i])
					memset(b[i], 0xab, sz);
			}
			void *old[K];
			for (int i = 0; i < K; i++) {
				old[i] = b[i];
				free(b[i]);
			}
			int reused = 0, bad = 0;
			for (int i = 0; i < K; i++) {
				b[i] = p ? nd_mallocx_policy(sz, p, fl | ND_MALLOCX_ZERO)
					 : nd_mallocx_onnode(sz, node, fl | ND_MALLOCX_ZERO);
				if (!b[i] || !all_zero(b[i], sz))
					bad++;
				for (int j = 0; j < K && b[i]; j++)
					reused += (void *)b[i] == old[j];
			}
			CHECK(bad == 0, "node %d size %zu lg %u: %d blocks not zeroed", node, sz, LGS[li], bad);
			if (sz && sz <= 32768)
				CHECK(reused > 0, "node %d size %zu: no block reused (the test proves nothing)", node, sz);
			for (int i = 0; i < K; i++)
				free(b[i]);
		}
	}
}

/* Random alloc/free of 16-256 B with 4096 live blocks (bench/policy.sh's
 * loop has 1024: the classes of 64-aligned requests, 256 objects a slab,
 * then refill too seldom), each written over when allocated: the classes
 * an alignment of 64 rounds to refill often (their slabs run dry and swap with full ones
 * holding the blocks freed with old contents), and every block, popped
 * or refilled, must come back aligned, zeroed when asked and on its node
 * (want; -1: node 0 or 1). */
static void x_churn(int node, const nd_policy_t *p, unsigned fl, int want)
{
	enum { SLOTS = 4096, N = 60000 };
	static unsigned char *slot[SLOTS];
	static size_t len[SLOTS];
	uint64_t rng = 0x9E3779B97F4A7C15ULL, slow = _nd_slab_slow_count();
	int bad = 0, off = 0;
	for (long i = -SLOTS; i < N; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		size_t j = i < 0 ? (size_t)(i + SLOTS) : (size_t)(rng >> 32) % SLOTS;
		size_t sz = 16 + (size_t)(rng & 0xffff) % 241;
		if (i >= 0)
			free(slot[j]);
		unsigned char *b = p ? nd_mallocx_policy(sz, p, fl) : nd_mallocx_onnode(sz, node, fl);
		CHECK(b != NULL, "churn: %zu bytes failed", sz);
		bad += ((uintptr_t)b & 63) || ((fl & ND_MALLOCX_ZERO) && !all_zero(b, sz));
		off += want >= 0 ? nd_node_of(b) != want : nd_node_of(b) < 0;
		memset(b, 0xcd, sz);
		slot[j] = b;
		len[j] = sz;
	}
	slow = _nd_slab_slow_count() - slow;
	CHECK(bad == 0 && off == 0, "churn node %d flags %#x: %d bad, %d off node", node, fl, bad, off);
	CHECK(slow > 100, "churn node %d flags %#x: %llu refills (the test proves nothing)", node, fl,
	      (unsigned long long)slow);
	for (int k = 0; k < SLOTS; k++)
		nd_free_aligned_sized(slot[k], 64, len[k]);
}

/* A thread's first x call for a node it has no heap of yet, after a call
 * that set up its node table (its own node's heap, from a policy call):
 * the fast path pops from the empty placeholder heap and its refill took
 * the class's size, so that an alignment whose class is a twin (8192,
 * 16384: the coloured classes' sizes) got a coloured, 64-aligned object
 * (audit24, found by fuzz_threads). */
static size_t twin_size;
static unsigned twin_lg;
static void *twin_first(void *arg)
{
	nd_emulate_cpu(2); /* node 1's CPU: node 0 has no heap of the thread's */
	free(nd_aligned_alloc_policy(256, 437, NULL));
	void *p = nd_mallocx_onnode(twin_size, 0, ND_MALLOCX_LG_ALIGN(twin_lg));
	*(int *)arg = p && ((uintptr_t)p & (((uintptr_t)1 << twin_lg) - 1)) == 0 && nd_node_of(p) == 0;
	free(p);
	return NULL;
}

static int sized_child(const char *what)
{
	nd_topology_emulate(SPEC, err, sizeof err);
	if (!strcmp(what, "ok")) {
		/* every size a block can carry is accepted */
		for (size_t n = 0; n <= 70000; n += n < 300 ? 1 : 97)
			nd_free_sized(malloc(n), n);
		for (size_t n = 0; n <= 5000; n += 7)
			free_sized(nd_calloc_onnode(1, n, 1), n);
		char *r = malloc(1024);
		r = realloc(r, 600); /* in place: more than half */
		nd_free_sized(r, 600);
		r = malloc(100000);
		r = realloc(r, 70000); /* large, shrunk in place */
		free_sized(r, 70000);
		for (unsigned li = 0; li < NL; li++)
			for (unsigned si = 0; si < NS; si++) {
				size_t a = (size_t)1 << LGS[li];
				free_aligned_sized(nd_aligned_alloc_onnode(a, SIZES[si], 0), a, SIZES[si]);
			}
		/* a spreading policy serves more than a page as a page run
		 * (place.c), up to the largest class too (audit24: check mode
		 * took these sizes for a small block's on a large one) */
		nd_policy_t il;
		char e2[128];
		for (int k = 0; k < 3; k++) {
			static const char *const pols[] = { "interleave:0-1@4K", "interleave:0-1@64K", "weighted:0=3,1=1" };
			CHECK(nd_policy_parse(pols[k], &il, e2, sizeof e2) == 0, "%s: %s", pols[k], e2);
			for (size_t n = 4097; n <= ND_SLAB_MAX; n += 1531) {
				nd_free_sized(nd_malloc_policy(n, &il), n);
				nd_free_sized(nd_calloc_policy(1, n, &il), n);
			}
			CHECK(nd_set_policy(&il) == 0);
			for (size_t n = 4097; n <= ND_SLAB_MAX; n += 1531)
				free_sized(malloc(n), n);
			nd_set_policy(NULL);
		}
		nd_nodemask_t both;
		nd_nodemask_zero(&both);
		nd_nodemask_set(&both, 0);
		nd_nodemask_set(&both, 1);
		for (size_t n = 4097; n <= ND_SLAB_MAX; n += 1531)
			nd_free_sized(nd_malloc_interleaved(n, &both, 4096), n);
		/* a public heap's objects: aligned above a page, or large, its
		 * own page runs (chunks; audit24: their aligned sizes aborted) */
		nd_heap_t *h = nd_heap_new(1);
		CHECK(h != NULL);
		for (unsigned li = 0; li < NL; li++)
			for (unsigned si = 0; si < NS; si++) {
				size_t a = (size_t)1 << LGS[li];
				if (a >= sizeof(void *))
					nd_free_aligned_sized(nd_heap_aligned_alloc(h, a, SIZES[si]), a, SIZES[si]);
			}
		for (size_t n = 0; n <= 70000; n += n < 300 ? 1 : 97)
			nd_free_sized(nd_heap_malloc(h, n), n);
		for (size_t n = 1; n <= 4000; n += 333) { /* a chunk shrunk in place by realloc */
			char *c = nd_heap_aligned_alloc(h, 8192, n);
			char *r = realloc(c, nd_usable_size(c) / 2 + 1);
			CHECK(r == c, "the owner's realloc of a chunk above half its size stays");
			nd_free_sized(r, nd_usable_size(c) / 2 + 1);
		}
		nd_heap_destroy(h);
		nd_free_sized(NULL, 5);
		return 0;
	}
	if (!strcmp(what, "small"))
		nd_free_sized(malloc(100), 300);
	else if (!strcmp(what, "half"))
		nd_free_sized(malloc(1000), 100);
	else if (!strcmp(what, "large"))
		free_sized(malloc(100000), 200000);
	else if (!strcmp(what, "quarter"))
		free_sized(malloc(100000), 20000);
	else if (!strcmp(what, "aligned"))
		nd_free_sized(nd_aligned_alloc_onnode(4096, 100, 1), 100); /* needs the aligned call */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "sized"))
		return sized_child(argv[2]);
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	CHECK_EQ(nd_version(), ND_VERSION);
	CHECK_EQ(ND_VERSION >> 16, ND_VERSION_MAJOR);

	/* node and alignment of every combination, zeroing on fresh memory */
	for (int node = -1; node <= 1; node++)
		for (unsigned si = 0; si < NS; si++)
			for (unsigned li = 0; li < NL; li++) {
				size_t sz = SIZES[si], a = (size_t)1 << LGS[li];
				unsigned char *p = nd_mallocx_onnode(sz, node, ND_MALLOCX_LG_ALIGN(LGS[li]) | ND_MALLOCX_ZERO);
				int want = node < 0 ? 0 : node;
				CHECK(p && nd_node_of(p) == want && ((uintptr_t)p & (a - 1)) == 0 && all_zero(p, sz) &&
					      nd_usable_size(p) >= sz,
				      "mallocx_onnode(%zu, %d, align %zu) = %p on node %d", sz, node, a, (void *)p,
				      p ? nd_node_of(p) : -9);
				free(p);
				p = nd_aligned_alloc_onnode(a, sz, node);
				CHECK(p && nd_node_of(p) == want && ((uintptr_t)p & (a - 1)) == 0, "aligned_alloc_onnode");
				free(p);
			}
	nd_emulate_cpu(2); /* ND_NODE_LOCAL follows the CPU */
	void *q = nd_mallocx_onnode(48, ND_NODE_LOCAL, 0);
	CHECK_EQ(nd_node_of(q), 1);
	free(q);
	nd_emulate_cpu(0);

	zero_reuse(0, NULL);
	zero_reuse(1, NULL);
	zero_reuse(ND_NODE_LOCAL, NULL);

	/* calloc_onnode: zeroed after reuse, overflow */
	for (int i = 0; i < 100; i++) {
		unsigned char *c = nd_calloc_onnode(10, 13, 1);
		CHECK(c && nd_node_of(c) == 1 && all_zero(c, 130), "calloc_onnode");
		memset(c, 0xff, 130);
		free(c);
	}
	errno = 0;
	CHECK(nd_calloc_onnode(SIZE_MAX / 2, 3, 0) == NULL && errno == ENOMEM, "calloc overflow: errno %d", errno);

	/* sizes near SIZE_MAX on the aligned and interleaved calls' fast paths
	 * (entry 0 primed with a small block first) and slow paths: NULL with
	 * ENOMEM, no wrap of the rounding to a small class (audit15) */
	static const size_t huge[] = { SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095, SIZE_MAX - 8191, SIZE_MAX / 2 + 1,
				       (size_t)1 << 62 };
	static const char *const hspec[] = { "bind:1", "interleave:0-1", "local" };
	for (unsigned sp = 0; sp < 3; sp++) {
		nd_policy_t hp;
		CHECK(nd_policy_parse(hspec[sp], &hp, err, sizeof err) == 0, "%s", err);
		const nd_policy_t *pols[2] = { &hp, nd_policy_prepare(&hp) };
		nd_nodemask_t hm;
		nd_nodemask_zero(&hm);
		nd_nodemask_set(&hm, 0);
		nd_nodemask_set(&hm, 1);
		for (unsigned k = 0; k < 2; k++)
			for (unsigned h = 0; h < sizeof huge / sizeof huge[0]; h++)
				for (size_t a = 16; a <= ((size_t)1 << 20); a <<= 2) {
					free(nd_aligned_alloc_policy(a, 100, pols[k])); /* entry 0 serves p */
					errno = 0;
					CHECK(nd_aligned_alloc_policy(a, huge[h], pols[k]) == NULL && errno == ENOMEM,
					      "aligned_alloc_policy(%zu, %zu, %s): errno %d", a, huge[h], hspec[sp], errno);
					errno = 0;
					CHECK(nd_mallocx_policy(huge[h], pols[k], ND_MALLOCX_ALIGN(a)) == NULL && errno == ENOMEM,
					      "mallocx_policy(%zu, %s, align %zu): errno %d", huge[h], hspec[sp], a, errno);
					errno = 0;
					CHECK(nd_aligned_alloc_onnode(a, huge[h], 1) == NULL && errno == ENOMEM,
					      "aligned_alloc_onnode(%zu, %zu): errno %d", a, huge[h], errno);
					free(nd_malloc_interleaved(100, &hm, 0));
					errno = 0;
					size_t g = a <= ((size_t)1 << 18) ? a << 12 : 0; /* 64K..1G, one page */
					CHECK(nd_malloc_interleaved(huge[h], &hm, g) == NULL && errno == ENOMEM,
					      "malloc_interleaved(%zu, granularity %zu): errno %d", huge[h], g, errno);
				}
	}

	/* bad input: EINVAL, no message needed */
	errno = 0;
	CHECK(nd_mallocx_onnode(16, 2, 0) == NULL && errno == EINVAL, "node 2: errno %d", errno);
	errno = 0;
	CHECK(nd_mallocx_onnode(16, -2, 0) == NULL && errno == EINVAL, "node -2: errno %d", errno);
	errno = 0;
	CHECK(nd_mallocx_onnode(16, 0, 0x100) == NULL && errno == EINVAL, "bad flags: errno %d", errno);
	errno = 0;
	CHECK(nd_mallocx_onnode(16, 0, ND_MALLOCX_LG_ALIGN(31)) == NULL && errno == EINVAL, "lg 31: errno %d", errno);
	errno = 0;
	CHECK(nd_aligned_alloc_onnode(48, 16, 0) == NULL && errno == EINVAL, "align 48: errno %d", errno);
	errno = 0;
	CHECK(nd_aligned_alloc_onnode(0, 16, 0) == NULL && errno == EINVAL, "onnode align 0: errno %d", errno);
	errno = 0;
	CHECK(nd_aligned_alloc_onnode(48, 0, 0) == NULL && errno == EINVAL, "align 48, size 0: errno %d", errno);
	errno = 0;
	CHECK(nd_aligned_alloc_policy(0, 16, NULL) == NULL && errno == EINVAL, "align 0: errno %d", errno);

	/* prepared policies: interned, on the fast path, placed */
	nd_policy_t b1 = pol("bind:1"), b1b = pol("bind:1");
	const nd_policy_t *pb = nd_policy_prepare(&b1);
	CHECK(pb != NULL && pb != &b1 && pb == nd_policy_prepare(&b1b), "prepare: equal policies share one copy");
	CHECK(pb && pb->mode == ND_POLICY_BIND && nd_nodemask_isset(&pb->nodes, 1));
	nd_policy_t bad = pol("preferred:1");
	bad.nodes.bits[0] = 3;
	errno = 0;
	CHECK(nd_policy_prepare(&bad) == NULL && errno == EINVAL, "prepare invalid: errno %d", errno);
	errno = 0;
	CHECK(nd_policy_prepare(NULL) == NULL && errno == EINVAL);
	enum { N = 256 };
	static void *v[N];
	for (int round = 0; round < 2; round++) {
		uint64_t before = _nd_slab_slow_count();
		int off = 0;
		for (int i = 0; i < N; i++)
			off += nd_node_of(v[i] = nd_malloc_policy(48, pb)) != 1;
		uint64_t slow = _nd_slab_slow_count() - before;
		CHECK(off == 0, "prepared bind:1: %d off node", off);
		if (round)
			CHECK(slow <= 8, "prepared: %llu slow paths in %d calls", (unsigned long long)slow, N);
		for (int i = 0; i < N; i++)
			free(v[i]);
	}
	zero_reuse(-1, pb);
	zero_reuse(-1, &b1);
	for (unsigned z = 0; z <= ND_MALLOCX_ZERO; z += ND_MALLOCX_ZERO) {
		x_churn(1, NULL, ND_MALLOCX_ALIGN(64) | z, 1);
		x_churn(ND_NODE_LOCAL, NULL, ND_MALLOCX_ALIGN(64) | z, 0);
		x_churn(-1, pb, ND_MALLOCX_ALIGN(64) | z, 1);
		x_churn(-1, &b1, ND_MALLOCX_ALIGN(64) | z, 1);
	}
	/* interleave: aligned, zeroed, on a node of the set; big ones spread */
	nd_policy_t il = pol("interleave:all");
	const nd_policy_t *pil = nd_policy_prepare(&il);
	for (unsigned si = 0; si < NS; si++)
		for (unsigned li = 0; li < NL; li++) {
			size_t sz = SIZES[si], a = (size_t)1 << LGS[li];
			unsigned char *p = nd_mallocx_policy(sz, li & 1 ? pil : &il,
							    ND_MALLOCX_LG_ALIGN(LGS[li]) | ND_MALLOCX_ZERO);
			CHECK(p && ((uintptr_t)p & (a - 1)) == 0 && all_zero(p, sz) && nd_node_of(p) >= 0,
			      "mallocx_policy(%zu, interleave, align %zu)", sz, a);
			free(p);
		}
	unsigned char *c = nd_calloc_policy(3, 1000, pb);
	CHECK(c && nd_node_of(c) == 1 && all_zero(c, 3000), "calloc_policy");
	free(c);
	c = nd_aligned_alloc_policy(256, 1000, &b1);
	CHECK(c && nd_node_of(c) == 1 && ((uintptr_t)c & 255) == 0, "aligned_alloc_policy");
	free(c);
	c = nd_mallocx_policy(64, NULL, ND_MALLOCX_ZERO); /* the thread's policy */
	CHECK(c && nd_node_of(c) == 0 && all_zero(c, 64));
	free(c);

	static const size_t twin_sizes[] = { 4097, 5000, 7000, 8192, 9615, 14000, 16384 };
	for (unsigned si = 0; si < sizeof twin_sizes / sizeof twin_sizes[0]; si++)
		for (twin_lg = 7; twin_lg <= 12; twin_lg++) {
			int ok = 0;
			pthread_t th;
			twin_size = twin_sizes[si];
			CHECK(pthread_create(&th, NULL, twin_first, &ok) == 0);
			pthread_join(th, NULL);
			CHECK(ok, "a thread's first mallocx_onnode(%zu, 0, align %u) on another node: misaligned or misplaced",
			      twin_size, 1u << twin_lg);
		}

	/* good size: what malloc gives */
	for (size_t n = 0; n <= 70000; n += n < 2048 ? 1 : 61) {
		void *p = malloc(n);
		size_t g = nd_good_size(n);
		CHECK(g >= n && (n > ND_SLAB_MAX ? nd_usable_size(p) >= g : nd_usable_size(p) == g),
		      "good_size(%zu) = %zu, usable %zu", n, g, nd_usable_size(p));
		free(p);
	}
	CHECK_EQ(nd_good_size(SIZE_MAX), 0);
	CHECK_EQ(nd_good_size(0), 16);

	/* sized free: without NODALLOC_CHECK nothing is checked, with it every
	 * right size passes and a wrong one aborts naming the call */
	char msg[512];
	static const char *const bad_cases[] = { "small", "half", "large", "quarter", "aligned" };
	int st = run_child("/proc/self/exe", (char *const[]){ argv[0], "sized", "ok", NULL }, "NODALLOC_CHECK", "1",
			   false, msg, sizeof msg);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "right sizes: status %d: %s", st, msg);
	for (unsigned i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		st = run_child("/proc/self/exe", (char *const[]){ argv[0], "sized", (char *)bad_cases[i], NULL },
			       "NODALLOC_CHECK", "1", false, msg, sizeof msg);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: status %d", bad_cases[i], st);
		CHECK(strstr(msg, "free_sized(): size") != NULL, "%s: message: %s", bad_cases[i], msg);
	}
	return CHECK_DONE();
}
