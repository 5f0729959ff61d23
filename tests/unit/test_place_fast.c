// SPDX-License-Identifier: MIT
/* The placement calls' fast paths (issue 11, place.c), under an emulated
 * two-node topology:
 *  - place.c's own size -> class table gives, for every size up to 1 KiB,
 *    the class malloc gives (usable size), through nd_malloc_onnode,
 *    nd_malloc_local, nd_malloc_policy (prepared and plain) and
 *    nd_mallocx_onnode / nd_mallocx_policy with flags 0, warm (so the
 *    fast path serves them), on the right node;
 *  - the x calls' flag decoding (the record's masks for an lg up to 12,
 *    alone or with ZERO; a table for the low 7 bits else): every lg
 *    0..20 with and without ND_MALLOCX_ZERO, sizes 0..600 and around
 *    32 KiB: aligned, zeroed, on the node, at least the size; bad flags
 *    refused (also lg 31 and 63, with and without ZERO); in a new and a
 *    reused thread record too (the record's mask table);
 *    nd_aligned_alloc_onnode's own fast path (the alignment as the mask)
 *    the same way; the node calls called with stray upper halves in the
 *    node's and the flags' registers (they compare whole registers)
 *    place and align as without them;
 *  - a thread's heaps[] entry of a node it has no heap for yet (heap.c's
 *    empty heap) sends nd_malloc_onnode to its slow path, also in a thread
 *    whose record was reused after another thread exited;
 *    nd_malloc_onnode(-1) and nd_mallocx_onnode(-1, 0) are local (warm,
 *    they follow a CPU change at the next call; the first also with a
 *    stray upper half) and the x call refuses nodes -3, -2, 2, 3;
 *  - a plain policy object changed in place between calls is seen at the
 *    next call for every word its mode reads: mode, node bits, flags,
 *    interleave granularity (an invalid one is refused at once), weights;
 *    a granularity the mode ignores changes nothing (nd_policy_check
 *    ignores it too); a weighted object's weights alone (its node set
 *    comes from them); a plain object whose heap depends on the CPU
 *    (bind:0-1) follows a migration at the next call; so does a prepared
 *    one (bind:0-1, preferred-many:0-1), and a prepared one whose heap
 *    is the same on every CPU (bind:1, interleave:0-1) keeps its fast
 *    path across a CPU change;
 *  - nd_malloc_policy(size, NULL) is malloc also when the thread's cache
 *    entry 0 lost its object (its heap was parked to make room for
 *    another policy heap: the entry once read the NULL object); an entry
 *    that served a prepared policy by its address alone (fix) stops
 *    serving it when its heap is parked. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";

typedef void *(*alloc_fn)(size_t, const void *);
static void *on0(size_t n, const void *a) { (void)a; return nd_malloc_onnode(n, 0); }
static void *on1(size_t n, const void *a) { (void)a; return nd_malloc_onnode(n, 1); }
static void *loc(size_t n, const void *a) { (void)a; return nd_malloc_local(n); }
static void *bypol(size_t n, const void *a) { return nd_malloc_policy(n, a); }
static void *x1(size_t n, const void *a) { (void)a; return nd_mallocx_onnode(n, 1, 0); }
static void *xloc(size_t n, const void *a) { (void)a; return nd_mallocx_onnode(n, ND_NODE_LOCAL, 0); }
static void *xpol(size_t n, const void *a) { return nd_mallocx_policy(n, a, 0); }

/* Every size 0..max through fn: the class malloc uses, on node; twice, so
 * the second round runs warm on the fast path (one slow path per class
 * at most: a first slab). */
static void sizes(const char *name, alloc_fn fn, const void *arg, int node, size_t max)
{
	int bad_size = 0, bad_node = 0;
	for (int round = 0; round < 2; round++) {
		uint64_t before = _nd_slab_slow_count();
		for (size_t s = 0; s <= max; s++) {
			void *p = fn(s, arg);
			void *m = malloc(s);
			CHECK(p && m, "%s(%zu)", name, s);
			if (!p || !m)
				return;
			bad_size += nd_usable_size(p) != nd_usable_size(m);
			if (bad_size == 1 && nd_usable_size(p) != nd_usable_size(m))
				CHECK(0, "%s(%zu): usable %zu, malloc's %zu", name, s, nd_usable_size(p), nd_usable_size(m));
			bad_node += nd_node_of(p) != node;
			free(p);
			free(m);
		}
		uint64_t slow = _nd_slab_slow_count() - before;
		if (round == 1)
			CHECK(slow <= 2 * ND_SLAB_CLASSES, "%s warm: %llu slow paths for %zu sizes", name,
			      (unsigned long long)slow, max + 1);
	}
	CHECK(bad_size == 0, "%s: %d sizes got another class than malloc's", name, bad_size);
	CHECK(bad_node == 0, "%s: %d blocks off node %d", name, bad_node, node);
}

/* A fresh thread: node 1 first (its heaps[] is made for node 1, node 0's
 * entry is the empty heap), then node 0, then local (CPU 0: node 0). */
struct thread_res {
	int bad;
	uint64_t slow; /* slow paths of the second round's node calls */
};

static void *thread_body(void *arg)
{
	struct thread_res *res = arg;
	int *bad = &res->bad;
	nd_emulate_cpu(0);
	for (int round = 0; round < 2; round++) {
		uint64_t before = _nd_slab_slow_count();
		for (int node = 1; node >= 0; node--) {
			for (int i = 0; i < 64; i++) {
				void *p = nd_malloc_onnode(48, node);
				*bad += !p || nd_node_of(p) != node;
				free(p);
			}
		}
		res->slow = _nd_slab_slow_count() - before;
		void *p = nd_malloc_local(48);
		*bad += !p || nd_node_of(p) != 0;
		free(p);
	}
	/* the record's class table (thread.c fills it in a new and in a
	 * reused record): every direct size gets malloc's class; its mask
	 * table: every alignment up to a page, with and without zeroing */
	for (size_t s = 1; s <= 256; s++) {
		void *p = nd_malloc_onnode(s, 0), *m = malloc(s);
		*bad += !p || !m || nd_usable_size(p) != nd_usable_size(m);
		free(p);
		free(m);
		for (unsigned lg = 0; lg <= 12; lg++) {
			unsigned z = s & 1 ? ND_MALLOCX_ZERO : 0;
			unsigned char *x = nd_mallocx_onnode(s, 0, lg | z);
			*bad += !x || ((uintptr_t)x & (((uintptr_t)1 << lg) - 1)) || nd_node_of(x) != 0 ||
				nd_usable_size(x) < s || (z && (x[0] | x[s - 1]));
			if (x)
				memset(x, 0xa5, s);
			free(x);
		}
	}
	return NULL;
}

/* n allocations of 48 bytes under p: how many on node, how many slow paths */
static int on_node(const nd_policy_t *p, int node, int n, uint64_t *slow)
{
	static void *v[512];
	uint64_t before = _nd_slab_slow_count();
	int c = 0;
	for (int i = 0; i < n; i++) {
		v[i] = nd_malloc_policy(48, p);
		c += v[i] && nd_node_of(v[i]) == node;
	}
	if (slow)
		*slow = _nd_slab_slow_count() - before;
	for (int i = 0; i < n; i++)
		free(v[i]);
	return c;
}

/* A fresh thread: cache entry 0 for the oldest of 8 policy heaps, which
 * the thread policy's heap then parks (heap.c keeps 8); NULL is then the
 * default policy, not a read of a NULL object. */
static void *evict_body(void *arg)
{
	int *bad = arg;
	static const char *specs[] = { "bind:0", "bind:1", "bind:0-1", "interleave:0-1", "interleave:0-1@64K",
				       "interleave:0-1@2M", "weighted:0=1,1=2", "weighted:0=2,1=1" };
	nd_policy_t ps[8];
	nd_emulate_cpu(0);
	for (int i = 0; i < 8; i++) {
		ps[i] = pol(specs[i]);
		void *p = nd_malloc_policy(48, &ps[i]);
		*bad += !p;
		free(p);
	}
	void *p = nd_malloc_policy(48, &ps[0]); /* entry 0: the oldest heap */
	*bad += !p || nd_node_of(p) != 0;
	free(p);
	nd_policy_t w = pol("weighted:0=3,1=1");
	*bad += nd_set_policy(&w) != 0;
	free(malloc(48)); /* a ninth policy heap: the oldest is parked */
	*bad += nd_set_policy(NULL) != 0;
	for (int i = 0; i < 2; i++) {
		p = nd_malloc_policy(48, NULL);
		*bad += !p || nd_node_of(p) != 0;
		free(p);
	}
	return NULL;
}

/* A fresh thread: cache entry 0 serves a prepared policy by its address
 * alone (its heap the same on every CPU: heap.c's fix), then thread
 * policies take the thread's 8 policy heaps and park the entry's: the
 * entry must stop serving it (pheap_get clears fix with key and user),
 * and the next calls take a heap this thread owns, on the policy's node.
 * Without the clearing they popped from the parked heap (a crash). */
static void *evict_fix_body(void *arg)
{
	int *bad = arg;
	static const char *specs[] = { "bind:0", "bind:0-1", "interleave:0-1", "interleave:0-1@64K", "interleave:0-1@2M",
				       "weighted:0=1,1=2", "weighted:0=2,1=1", "weighted:0=3,1=1" };
	static const char *prep[] = { "bind:1", "interleave:0-1@128K", "weighted:0=1,1=5" };
	nd_emulate_cpu(0);
	for (int k = 0; k < 3; k++) {
		nd_policy_t p = pol(prep[k]);
		const nd_policy_t *pp = nd_policy_prepare(&p);
		void *o = pp ? nd_malloc_policy(48, pp) : NULL;
		*bad += !o || _nd_tls->pc[0].fix != pp;
		free(o);
		for (int i = 0; i < 8; i++) {
			nd_policy_t q = pol(specs[i]);
			*bad += nd_set_policy(&q) != 0;
			free(malloc(48));
		}
		*bad += nd_set_policy(NULL) != 0;
		*bad += _nd_tls->pc[0].fix == pp; /* its heap parked: no longer served by fix */
		for (int i = 0; i < 64; i++) {
			void *v[2] = { nd_malloc_policy(48, pp), nd_mallocx_policy(48, pp, 6) };
			for (int j = 0; j < 2; j++) {
				_nd_slab_t *s = v[j] ? (_nd_slab_t *)_nd_slab_of(v[j]) : NULL;
				struct nd_heap *h = s ? __atomic_load_n(&s->heap, __ATOMIC_RELAXED) : NULL;
				*bad += !h || __atomic_load_n(&h->owner, __ATOMIC_RELAXED) != _nd_tls ||
					(k == 0 && nd_node_of(v[j]) != 1);
				free(v[j]);
			}
		}
	}
	return NULL;
}

/* Prepared policies across a CPU change (nd_emulate_cpu: the record's
 * keys invalidated, as a migration makes them stale): one whose heap is
 * the same on every CPU (bind:1, interleave:0-1) keeps its fast path, no
 * slow path (heap.c's pc_cpu_free: its entry's fix); one whose heap
 * depends on the CPU (bind:0-1, preferred-many:0-1: the CPU's node) takes
 * the new CPU's node at the next call, through both calls. */
static void cpu_free_prepared(void)
{
	static const char *const spec[] = { "bind:1", "interleave:0-1", "bind:0-1", "preferred-many:0-1" };
	for (int i = 0; i < 4; i++) {
		nd_policy_t p = pol(spec[i]);
		const nd_policy_t *pp = nd_policy_prepare(&p);
		CHECK(pp != NULL, "%s", spec[i]);
		bool dep = i >= 2;
		for (int cpu = 0; cpu <= 2; cpu += 2) {
			for (int x = 0; x < 2; x++) {
				/* warm on CPU 0: 48 B objects listed in the heap's slab */
				nd_emulate_cpu(0);
				void *w[8];
				for (int k = 0; k < 8; k++)
					w[k] = x ? nd_mallocx_policy(48, pp, 6) : nd_malloc_policy(48, pp);
				for (int k = 0; k < 8; k++)
					free(w[k]);
				nd_emulate_cpu(cpu);
				uint64_t before = _nd_slab_slow_count();
				void *q = x ? nd_mallocx_policy(48, pp, 6) : nd_malloc_policy(48, pp);
				uint64_t slow = _nd_slab_slow_count() - before;
				int want = i == 0 ? 1 : i == 1 ? -1 : cpu / 2;
				CHECK(q && (want < 0 || nd_node_of(q) == want) && !((uintptr_t)q % 64 && x),
				      "%s, %s, CPU %d: %p on node %d", spec[i], x ? "mallocx ALIGN(64)" : "malloc", cpu, q,
				      q ? nd_node_of(q) : -1);
				CHECK(dep || slow == 0, "%s, %s, CPU 0 -> %d: %llu slow paths", spec[i],
				      x ? "mallocx ALIGN(64)" : "malloc", cpu, (unsigned long long)slow);
				free(q);
			}
		}
	}
	nd_emulate_cpu(0);
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);

	nd_policy_t b1 = pol("bind:1"), il = pol("interleave:1");
	const nd_policy_t *pb1 = nd_policy_prepare(&b1);
	CHECK(pb1 != NULL);
	sizes("nd_malloc_onnode(., 1)", on1, NULL, 1, 1024);
	sizes("nd_malloc_onnode(., 0)", on0, NULL, 0, 1024);
	sizes("nd_malloc_local", loc, NULL, 0, 1024);
	sizes("nd_malloc_policy(prepared bind:1)", bypol, pb1, 1, 1024);
	sizes("nd_malloc_policy(bind:1)", bypol, &b1, 1, 1024);
	sizes("nd_malloc_policy(interleave:1)", bypol, &il, 1, 1024);
	sizes("nd_mallocx_onnode(., 1, 0)", x1, NULL, 1, 1024);
	sizes("nd_mallocx_onnode(., LOCAL, 0)", xloc, NULL, 0, 1024);
	sizes("nd_mallocx_policy(bind:1, 0)", xpol, &b1, 1, 1024);

	/* the x calls' flags, warm (each size twice) */
	nd_policy_t b0 = pol("bind:0");
	int bad = 0;
	for (unsigned lg = 0; lg <= 20; lg++) {
		for (unsigned z = 0; z <= ND_MALLOCX_ZERO; z += ND_MALLOCX_ZERO) {
			size_t big[] = { 32768 - 4096, 32767, 32768, 32769 };
			for (size_t i = 0; i < 601 + 4; i++) {
				size_t sz = i < 601 ? i : big[i - 601];
				for (int k = 0; k < 6; k++) {
					if (k >= 4 && z)
						continue; /* k 4, 5: nd_aligned_alloc_onnode (no zeroing) */
					unsigned char *p = k < 2   ? nd_mallocx_onnode(sz, 1, lg | z)
							   : k < 4 ? nd_mallocx_policy(sz, &b0, lg | z)
								   : nd_aligned_alloc_onnode((size_t)1 << lg, sz, 1);
					int want = k < 2 || k >= 4 ? 1 : 0;
					bool ok = p && ((uintptr_t)p & (((uintptr_t)1 << lg) - 1)) == 0 && nd_node_of(p) == want &&
						  nd_usable_size(p) >= sz;
					for (size_t j = 0; ok && z && j < sz; j++)
						ok = p[j] == 0;
					if (!ok && bad++ < 5)
						CHECK(0, "mallocx(%zu, lg %u, zero %u, %s) = %p", sz, lg, z, k < 2 ? "node 1" : k < 4 ? "bind:0" : "aligned_alloc, node 1",
						      (void *)p);
					if (p)
						memset(p, 0xa5, sz);
					free(p);
				}
			}
		}
	}
	CHECK(bad == 0, "%d x allocations wrong", bad);
	/* the record's rows (xrow, lg up to 8): every size up to 256 gets
	 * malloc's class of the size rounded up to the alignment, through the
	 * node call and the policy call, with and without zeroing; size 0
	 * gets the class of the alignment, warm on the fast path (each call
	 * took the slow path before the rows: size - 1 wrapped) */
	bad = 0;
	for (int round = 0; round < 2; round++) {
		uint64_t before = _nd_slab_slow_count();
		for (unsigned lg = 0; lg <= 8; lg++)
			for (size_t sz = 0; sz <= 256; sz++)
				for (int k = 0; k < 4; k++) {
					unsigned f = lg | (k & 1 ? ND_MALLOCX_ZERO : 0);
					size_t a = (size_t)1 << lg, r = sz ? (sz + a - 1) & ~(a - 1) : a;
					void *p = k < 2 ? nd_mallocx_onnode(sz, 1, f) : nd_mallocx_policy(sz, pb1, f);
					void *m = malloc(r);
					bool ok = p && m && ((uintptr_t)p & (a - 1)) == 0 && nd_node_of(p) == 1 &&
						  nd_usable_size(p) == nd_usable_size(m);
					if (!ok && bad++ < 5)
						CHECK(0, "mallocx(%zu, lg %u, %s): usable %zu, malloc(%zu)'s %zu", sz, lg,
						      k & 1 ? "zero" : "-", p ? nd_usable_size(p) : 0, r, m ? nd_usable_size(m) : 0);
					free(p);
					free(m);
				}
		uint64_t slow = _nd_slab_slow_count() - before;
		if (round == 1)
			CHECK(slow <= 4, "x rows warm: %llu slow paths", (unsigned long long)slow);
	}
	CHECK(bad == 0, "%d x allocations of the rows wrong", bad);
	/* nd_aligned_alloc_onnode's fast path, 4 blocks held at a time (a
	 * block freed and taken again would be the same one each time) */
	bad = 0;
	for (unsigned lg = 0; lg <= 12; lg++)
		for (size_t sz = 1; sz <= 300; sz++) {
			void *h[4];
			for (int i = 0; i < 4; i++) {
				h[i] = nd_aligned_alloc_onnode((size_t)1 << lg, sz, i & 1 ? ND_NODE_LOCAL : 1);
				bool ok = h[i] && ((uintptr_t)h[i] & (((uintptr_t)1 << lg) - 1)) == 0 &&
					  nd_node_of(h[i]) == (i & 1 ? 0 : 1) && nd_usable_size(h[i]) >= sz;
				if (!ok && bad++ < 5)
					CHECK(0, "nd_aligned_alloc_onnode(%zu, %zu, %s) = %p", (size_t)1 << lg, sz,
					      i & 1 ? "LOCAL" : "1", h[i]);
			}
			for (int i = 0; i < 4; i++)
				free(h[i]);
		}
	CHECK(bad == 0, "%d aligned allocations wrong", bad);
	errno = 0;
	CHECK(nd_mallocx_onnode(48, 1, 0x80) == NULL && errno == EINVAL, "flags 0x80: errno %d", errno);
	errno = 0;
	CHECK(nd_mallocx_policy(48, &b0, 0x80 | 4) == NULL && errno == EINVAL, "flags 0x84: errno %d", errno);
	/* past the fast paths' two branches (an lg up to 12, with or without
	 * ZERO): lg 31 and 63 refused, with and without ZERO */
	static const unsigned badf[] = { 31, 63, ND_MALLOCX_ZERO | 31, ND_MALLOCX_ZERO | 63 };
	for (unsigned i = 0; i < sizeof badf / sizeof badf[0]; i++) {
		errno = 0;
		CHECK(nd_mallocx_onnode(48, 1, badf[i]) == NULL && errno == EINVAL, "onnode flags %#x: errno %d", badf[i], errno);
		errno = 0;
		CHECK(nd_mallocx_policy(48, &b0, badf[i]) == NULL && errno == EINVAL, "policy flags %#x: errno %d", badf[i],
		      errno);
	}

	/* the node calls read the whole registers of the node and the flags
	 * (place.c's ARGREG_ALIAS; the ABI leaves their upper halves
	 * undefined): a caller's stray upper half changes nothing, warm or
	 * not (each call twice) */
	typedef void *(*onnode_r)(size_t, uint64_t);
	typedef void *(*onnodex_r)(size_t, uint64_t, uint64_t);
	typedef void *(*aligned_r)(size_t, size_t, uint64_t);
	typedef void *(*policyx_r)(size_t, const nd_policy_t *, uint64_t);
	onnode_r on_r = (onnode_r)(void (*)(void))nd_malloc_onnode;
	onnodex_r onx_r = (onnodex_r)(void (*)(void))nd_mallocx_onnode;
	aligned_r al_r = (aligned_r)(void (*)(void))nd_aligned_alloc_onnode;
	policyx_r px_r = (policyx_r)(void (*)(void))nd_mallocx_policy;
	const uint64_t hi = (uint64_t)0x5a5a << 32;
	bad = 0;
	for (int round = 0; round < 4; round++) {
		size_t sz = 100 + (size_t)round * 40;
		void *q1 = on_r(sz, hi | 1), *q2 = onx_r(sz, hi | 1, hi | 6), *q3 = onx_r(sz, hi | 1, hi);
		void *q4 = onx_r(sz, hi | 0xffffffffu, hi | 6), *q5 = al_r(64, sz, hi | 1), *q6 = px_r(sz, pb1, hi | 6);
		void *q7 = onx_r(sz, hi | 1, hi | ND_MALLOCX_ZERO | 6), *q8 = onx_r(sz, hi | 0xffffffffu, hi);
		bad += !q1 || nd_node_of(q1) != 1 || nd_usable_size(q1) < sz;
		bad += !q2 || nd_node_of(q2) != 1 || (uintptr_t)q2 % 64 || nd_usable_size(q2) < sz;
		bad += !q3 || nd_node_of(q3) != 1 || nd_usable_size(q3) < sz;
		bad += !q4 || nd_node_of(q4) != 0 || (uintptr_t)q4 % 64; /* ND_NODE_LOCAL on CPU 0 */
		bad += !q5 || nd_node_of(q5) != 1 || (uintptr_t)q5 % 64;
		bad += !q6 || nd_node_of(q6) != 1 || (uintptr_t)q6 % 64;
		bad += !q7 || nd_node_of(q7) != 1 || (uintptr_t)q7 % 64;
		bad += !q8 || nd_node_of(q8) != 0 || nd_usable_size(q8) < sz; /* LOCAL, flags 0 */
		for (size_t i = 0; q7 && i < sz; i++)
			bad += ((unsigned char *)q7)[i] != 0;
		void *q[] = { q1, q2, q3, q4, q5, q6, q7, q8 };
		for (int i = 0; i < 8; i++) {
			if (q[i])
				memset(q[i], 0xa5, sz); /* the next round's ZERO call gets dirty memory */
			free(q[i]);
		}
	}
	CHECK(bad == 0, "%d calls with a stray upper half wrong", bad);
	errno = 0;
	CHECK(on_r(48, hi | 2) == NULL && errno == EINVAL, "nd_malloc_onnode(48, 2 | upper): errno %d", errno);
	errno = 0;
	CHECK(onx_r(48, hi | 1, hi | 0x80) == NULL && errno == EINVAL, "nd_mallocx_onnode(48, 1, 0x80 | upper): errno %d", errno);

	/* node -1 is ND_NODE_LOCAL (nd_malloc_onnode's: on its miss path) */
	errno = 0;
	CHECK(nd_malloc_onnode(48, 2) == NULL && errno == EINVAL, "nd_malloc_onnode(48, 2): errno %d", errno);
	/* the x call tests ND_NODE_LOCAL before the node's bound: warm, it
	 * follows a CPU change at the next call; other nodes out of range
	 * are still refused */
	for (int cpu = 0; cpu <= 2; cpu += 2) {
		nd_emulate_cpu(cpu);
		int off = 0;
		for (int round = 0; round < 2; round++) {
			uint64_t before = _nd_slab_slow_count();
			for (int i = 0; i < 200; i++) {
				void *x = nd_mallocx_onnode(48 + (size_t)(i % 5) * 16, ND_NODE_LOCAL, 0);
				off += !x || nd_node_of(x) != cpu / 2;
				free(x);
				x = i & 1 ? nd_malloc_onnode(48 + (size_t)(i % 5) * 16, ND_NODE_LOCAL)
					  : on_r(48 + (size_t)(i % 5) * 16, hi | (uint32_t)ND_NODE_LOCAL);
				off += !x || nd_node_of(x) != cpu / 2;
				free(x);
				/* flags fail the key test they are or'ed into: the
				 * x path of ND_NODE_LOCAL, aligned, zeroed */
				size_t sz = 40 + (size_t)(i % 7) * 24;
				unsigned z = i & 1 ? ND_MALLOCX_ZERO : 0;
				unsigned char *y = nd_mallocx_onnode(sz, ND_NODE_LOCAL, ND_MALLOCX_ALIGN(64) | z);
				off += !y || nd_node_of(y) != cpu / 2 || (uintptr_t)y % 64 || nd_usable_size(y) < sz ||
				       (z && (y[0] | y[sz - 1]));
				if (y)
					memset(y, 0xa5, sz);
				free(y);
			}
			if (round == 1)
				CHECK(_nd_slab_slow_count() - before <= 5, "x LOCAL on CPU %d, warm: %llu slow paths", cpu,
				      (unsigned long long)(_nd_slab_slow_count() - before));
		}
		CHECK(off == 0, "x LOCAL on CPU %d: %d blocks off node %d", cpu, off, cpu / 2);
	}
	nd_emulate_cpu(0);
	for (int n = -3; n <= 3; n += 5) {
		errno = 0;
		CHECK(nd_mallocx_onnode(48, n, 0) == NULL && errno == EINVAL, "nd_mallocx_onnode(48, %d, 0): errno %d", n, errno);
		errno = 0;
		CHECK(nd_mallocx_onnode(48, n + 1, 0) == NULL && errno == EINVAL, "nd_mallocx_onnode(48, %d, 0): errno %d",
		      n + 1, errno);
	}

	/* threads one after another: each record after the first is a reused
	 * one (the exit hook put the empty heap back into its heaps[]), whose
	 * node calls take the fast path too (a reused record kept heaps[]
	 * but lost nfast: every call took the slow path, 128 a round) */
	for (int i = 0; i < 4; i++) {
		struct thread_res res = { 0, 0 };
		pthread_t th;
		CHECK(pthread_create(&th, NULL, thread_body, &res) == 0);
		pthread_join(th, NULL);
		CHECK(res.bad == 0, "thread %d: %d blocks off their node or of another class", i, res.bad);
		CHECK(res.slow <= 4, "thread %d: %llu slow paths in 128 warm node calls", i, (unsigned long long)res.slow);
	}

	/* a plain object changed in place: every word the mode reads */
	enum { N = 300 };
	uint64_t slow;
	nd_policy_t p = pol("interleave:0-1");
	on_node(&p, 0, N, NULL);
	on_node(&p, 0, N, &slow);
	CHECK(slow <= 8, "interleave object, warm: %llu slow paths", (unsigned long long)slow);
	p.granularity_shift = 4; /* 64K: seen (re-resolved) at the next call */
	uint64_t before = _nd_slab_slow_count();
	void *q = nd_malloc_policy(48, &p);
	CHECK(q && _nd_slab_slow_count() > before, "interleave granularity changed: not re-resolved");
	free(q);
	p.granularity_shift = 40; /* invalid for interleave: refused at once */
	errno = 0;
	CHECK(nd_malloc_policy(48, &p) == NULL && errno == EINVAL, "interleave, granularity 40: errno %d", errno);
	errno = 0;
	CHECK(nd_mallocx_policy(48, &p, 0) == NULL && errno == EINVAL, "mallocx, granularity 40: errno %d", errno);
	p.granularity_shift = 0;
	p.mode = ND_POLICY_BIND; /* interleave -> bind:0-1 (node 0 is nearest CPU 0) */
	CHECK_EQ(on_node(&p, 0, N, NULL), N);
	p.nodes.bits[0] = 2; /* bind:1 */
	CHECK_EQ(on_node(&p, 1, N, NULL), N);
	CHECK_EQ(nd_node_of(q = nd_mallocx_policy(100, &p, 0)), 1);
	free(q);
	p.granularity_shift = 40; /* ignored by bind, by nd_policy_check too */
	CHECK(nd_policy_check(&p, err, sizeof err) == 0, "bind with granularity 40: %s", err);
	CHECK_EQ(on_node(&p, 1, N, &slow), N);
	CHECK(slow <= 8, "bind object, granularity it ignores: %llu slow paths", (unsigned long long)slow);
	p.flags = ND_POLICY_F_TIER_ORDER; /* flags: re-resolved */
	before = _nd_slab_slow_count();
	q = nd_malloc_policy(48, &p);
	CHECK(q && nd_node_of(q) == 1 && _nd_slab_slow_count() > before, "bind+tier: not re-resolved");
	free(q);
	p.flags = 0x80; /* an unknown flag: refused at once */
	errno = 0;
	CHECK(nd_malloc_policy(48, &p) == NULL && errno == EINVAL, "unknown flag: errno %d", errno);
	p.flags = 0;
	p.mode = ND_POLICY_PREFERRED; /* preferred:1 */
	CHECK_EQ(on_node(&p, 1, N, NULL), N);
	p.mode = ND_POLICY_LOCAL; /* local: CPU 0's node */
	CHECK_EQ(on_node(&p, 0, N, NULL), N);
	p = pol("weighted:0=1,1=1");
	on_node(&p, 0, N, NULL);
	p.weights[0] = 0; /* only node 1 left: every new slab on node 1 */
	p.nodes.bits[0] = 2;
	CHECK_EQ(on_node(&p, 1, N, NULL), N);
	/* the weights alone (the set comes from them): node 1 only, then back */
	p = pol("weighted:0=1,1=1");
	on_node(&p, 0, N, NULL);
	p.weights[0] = 0;
	CHECK_EQ(on_node(&p, 1, N, NULL), N);
	p.weights[0] = 1;
	p.weights[1] = 0;
	CHECK_EQ(on_node(&p, 0, N, NULL), N);
	/* a heap that depends on the CPU: bind:0-1 takes the CPU's node */
	nd_policy_t bb = pol("bind:0-1");
	CHECK_EQ(on_node(&bb, 0, N, NULL), N);
	nd_emulate_cpu(2);
	CHECK_EQ(on_node(&bb, 1, N, NULL), N);
	nd_emulate_cpu(0);
	CHECK_EQ(on_node(&bb, 0, N, NULL), N);
	cpu_free_prepared();
	{
		int ebad = 0;
		pthread_t th;
		CHECK(pthread_create(&th, NULL, evict_body, &ebad) == 0);
		pthread_join(th, NULL);
		CHECK(ebad == 0, "parked entry, NULL policy: %d wrong", ebad);
		ebad = 0;
		CHECK(pthread_create(&th, NULL, evict_fix_body, &ebad) == 0);
		pthread_join(th, NULL);
		CHECK(ebad == 0, "parked entry of a prepared policy served by fix: %d wrong", ebad);
	}
	p = pol("weighted:0=1,1=1");
	on_node(&p, 0, N, NULL);
	p.weights[0] = 0; /* only node 1 left: every new slab on node 1 */
	p.nodes.bits[0] = 2;
	/* a copy at another address: its own entry, same placement */
	nd_policy_t p2 = p;
	CHECK_EQ(on_node(&p2, 1, N, NULL), N);
	return CHECK_DONE();
}
