// SPDX-License-Identifier: MIT
/*
 * Memory policies: node sets, per-thread and process policies (and the
 * kernel policy a process inherits), and the choice of node (first choice
 * and fallback order) for a page-run allocation. The grammar, format and
 * validation are policy_parse.c's. See docs/policy.md.
 *
 * Policies in force are interned: nd_set_policy/nd_set_default_policy copy
 * the caller's struct into an append-only pool (mmap'd chunks, never freed),
 * so a thread or the process holds only a pointer to an immutable policy and
 * _nd_policy_current() can hand that pointer out without copying.
 *
 * Freshness: the process default lives in proc_pol; every change bumps
 * _nd_policy_gen (always even). Each thread caches its effective policy
 * with the generation it was computed at (its thread record). A change
 * also sets every thread's slab keys to NONE, so each thread's next malloc
 * resolves its heap again: the malloc fast path never looks at policies.
 */
#include <errno.h>

#include "internal.h"

/* ---- node sets --------------------------------------------------------- */

void nd_nodemask_zero(nd_nodemask_t *m)
{
	for (unsigned i = 0; i < ND_MAX_NODES / 64; i++)
		m->bits[i] = 0;
}

void nd_nodemask_set(nd_nodemask_t *m, int node)
{
	if (node >= 0 && node < ND_MAX_NODES)
		m->bits[node >> 6] |= (uint64_t)1 << (node & 63);
}

int nd_nodemask_isset(const nd_nodemask_t *m, int node)
{
	if (node < 0 || node >= ND_MAX_NODES)
		return 0;
	return (int)((m->bits[node >> 6] >> (node & 63)) & 1);
}

int nd_nodemask_count(const nd_nodemask_t *m)
{
	int n = 0;
	/* Zero words are skipped: without -mpopcnt each popcount is a libgcc
	 * call, and spread runs ask once per granule. */
	for (unsigned i = 0; i < ND_MAX_NODES / 64; i++)
		if (m->bits[i])
			n += __builtin_popcountll(m->bits[i]);
	return n;
}

/* First node of m at or after from, or -1. */
int _nd_policy_mask_next(const nd_nodemask_t *m, int from)
{
	if (from < 0)
		from = 0;
	for (int w = from >> 6; w < ND_MAX_NODES / 64; w++) {
		uint64_t b = m->bits[w];
		if (w == from >> 6)
			b &= ~(uint64_t)0 << (from & 63);
		if (b)
			return w * 64 + __builtin_ctzll(b);
	}
	return -1;
}

/* First node of m at or after from, wrapping to the lowest; -1 if empty. */
static int mask_next_cyclic(const nd_nodemask_t *m, int from)
{
	int n = from < ND_MAX_NODES ? _nd_policy_mask_next(m, from) : -1;
	return n >= 0 ? n : _nd_policy_mask_next(m, 0);
}

/* The r-th node of m (0-based), or -1. */
static int mask_nth(const nd_nodemask_t *m, int r)
{
	for (int w = 0; w < ND_MAX_NODES / 64; w++) {
		uint64_t b = m->bits[w];
		if (!b)
			continue;
		int c = __builtin_popcountll(b);
		if (r >= c) {
			r -= c;
			continue;
		}
		while (r-- > 0)
			b &= b - 1;
		return w * 64 + __builtin_ctzll(b);
	}
	return -1;
}

static bool mask_equal(const nd_nodemask_t *a, const nd_nodemask_t *b)
{
	for (unsigned i = 0; i < ND_MAX_NODES / 64; i++)
		if (a->bits[i] != b->bits[i])
			return false;
	return true;
}

/* ---- interned policies ------------------------------------------------- */

#define POOL_CHUNK 32    /* policies per mmap'd chunk (~37 KiB) */
#define POOL_CHUNKS 512  /* at most 16384 distinct policies per process */

/* Protects pool_chunk[] and pool_n. Readers of an interned policy take no
 * lock: entries are written before being published and never change. */
ND_LOCK_DEFINE(pool_lock, ND_RANK_POLICY_POOL);
static ND_BIG_TABLE nd_policy_t *pool_chunk[POOL_CHUNKS];
static unsigned pool_n;

const nd_policy_t _nd_policy_local = { .mode = ND_POLICY_LOCAL };

static bool policy_equal(const nd_policy_t *a, const nd_policy_t *b)
{
	if (a->mode != b->mode || a->flags != b->flags || a->granularity_shift != b->granularity_shift ||
	    !mask_equal(&a->nodes, &b->nodes))
		return false;
	if (a->mode == ND_POLICY_WEIGHTED)
		for (int n = _nd_policy_mask_next(&a->nodes, 0); n >= 0; n = _nd_policy_mask_next(&a->nodes, n + 1))
			if (a->weights[n] != b->weights[n])
				return false;
	return true;
}

/* The interned copy of the normalized p, or NULL (ENOMEM). */
static const nd_policy_t *intern(const nd_policy_t *p)
{
	if (p->mode == ND_POLICY_LOCAL && p->flags == 0)
		return &_nd_policy_local;
	const nd_policy_t *r = NULL;
	_nd_lock(&pool_lock);
	for (unsigned i = 0; i < pool_n && !r; i++)
		if (policy_equal(&pool_chunk[i / POOL_CHUNK][i % POOL_CHUNK], p))
			r = &pool_chunk[i / POOL_CHUNK][i % POOL_CHUNK];
	if (!r && pool_n < POOL_CHUNK * POOL_CHUNKS) {
		unsigned c = pool_n / POOL_CHUNK;
		if (!pool_chunk[c]) {
			int e;
			pool_chunk[c] = _nd_os_mmap(POOL_CHUNK * sizeof(nd_policy_t), false, &e);
		}
		if (pool_chunk[c]) {
			nd_policy_t *slot = &pool_chunk[c][pool_n % POOL_CHUNK];
			ND_ASSERT(p->mode != ND_POLICY_DEFAULT, "interned policies are resolved (never DEFAULT)");
			*slot = *p;
			r = slot;
			__atomic_store_n(&pool_n, pool_n + 1, __ATOMIC_RELEASE);
		}
	}
	_nd_unlock(&pool_lock);
	return r;
}

/* ---- thread and process policies --------------------------------------- */

volatile uint32_t _nd_policy_gen = 2;      /* even; += 2 per process change */
static const nd_policy_t *volatile proc_pol; /* NULL = local */
/* Per thread (the thread record, internal.h): pol_thr (NULL = inherit the
 * process's), pol_eff (cached effective policy) and pol_gen (the
 * generation pol_eff is from); il_node/il_credit, the interleave cursor
 * of this thread (shared by all interleave policies, as the kernel's
 * il_prev): the node in turn and each node's credit (il_choose). */

static const nd_policy_t *refresh(void)
{
	/* gen before proc_pol: a policy newer than gen is only re-read later. */
	uint32_t g = __atomic_load_n(&_nd_policy_gen, __ATOMIC_ACQUIRE);
	_nd_thread_t *t = _nd_tls;
	const nd_policy_t *e = t->pol_thr;
	if (!e)
		e = __atomic_load_n(&proc_pol, __ATOMIC_ACQUIRE);
	if (!e)
		e = &_nd_policy_local;
	if (!_nd_thread_none(t)) { /* no record yet: answer without caching */
		t->pol_eff = e;
		t->pol_gen = g;
	}
	return e;
}

const nd_policy_t *_nd_policy_current(void)
{
	const _nd_thread_t *t = _nd_tls;
	if (nd_likely(t->pol_eff && t->pol_gen == __atomic_load_n(&_nd_policy_gen, __ATOMIC_RELAXED)))
		return t->pol_eff;
	return refresh();
}

bool _nd_policy_is_local(void)
{
	return _nd_policy_current()->mode == ND_POLICY_LOCAL;
}

/* Normalizes and interns p; NULL with errno (EINVAL, ENOMEM). */
static const nd_policy_t *adopt(const nd_policy_t *p, char *err, size_t errlen)
{
	nd_policy_t n;
	if (_nd_policy_normalize(p, &n, err, errlen) != 0) {
		errno = EINVAL;
		return NULL;
	}
	const nd_policy_t *r = intern(&n);
	if (!r) {
		_nd_policy_fail(err, errlen, "policy: out of memory for policies");
		errno = ENOMEM;
	}
	return r;
}

const nd_policy_t *_nd_policy_intern(const nd_policy_t *p, char *err, size_t errlen)
{
	return adopt(p, err, errlen);
}

int nd_set_policy(const nd_policy_t *p)
{
	const nd_policy_t *r = NULL;
	if (p && p->mode != ND_POLICY_DEFAULT && !(r = adopt(p, NULL, 0)))
		return -1;
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return -1;
	}
	t->pol_thr = r;
	refresh();
	_nd_thread_invalidate(t); /* the next malloc resolves its heap again */
	return 0;
}

int nd_get_policy(nd_policy_t *out)
{
	if (!out) {
		errno = EINVAL;
		return -1;
	}
	const nd_policy_t *tp = _nd_tls->pol_thr;
	if (tp)
		*out = *tp;
	else {
		_nd_policy_zero(out);
		out->mode = ND_POLICY_DEFAULT;
	}
	return 0;
}

/* Lock: serializes writers of proc_pol so that gen moves once per change. */
ND_LOCK_DEFINE(proc_lock, ND_RANK_POLICY_PROC);

static void set_proc(const nd_policy_t *r)
{
	_nd_lock(&proc_lock);
	__atomic_store_n(&proc_pol, r, __ATOMIC_RELEASE);
	uint32_t g = __atomic_add_fetch(&_nd_policy_gen, 2, __ATOMIC_SEQ_CST);
	ND_ASSERT((g & 1) == 0, "the policy generation is even");
	/* every thread's malloc resolves its heap again (internal.h) */
	_nd_thread_invalidate_all();
	_nd_unlock(&proc_lock);
}


int nd_set_default_policy(const nd_policy_t *p)
{
	const nd_policy_t *r = NULL;
	if (p && p->mode != ND_POLICY_DEFAULT && !(r = adopt(p, NULL, 0)))
		return -1;
	set_proc(r);
	return 0;
}

int nd_get_default_policy(nd_policy_t *out)
{
	if (!out) {
		errno = EINVAL;
		return -1;
	}
	const nd_policy_t *r = __atomic_load_n(&proc_pol, __ATOMIC_ACQUIRE);
	*out = r ? *r : _nd_policy_local;
	return 0;
}

int _nd_policy_from_kernel(int kmode, const uint64_t *kmask, nd_policy_t *out)
{
	const _nd_topo_t *t = _nd_topo();
	_nd_policy_zero(out);
	switch (kmode & ~ND_MPOL_MODE_FLAGS) {
	case ND_MPOL_BIND: out->mode = ND_POLICY_BIND; break;
	case ND_MPOL_PREFERRED: out->mode = ND_POLICY_PREFERRED; break;
	case ND_MPOL_PREFERRED_MANY: out->mode = ND_POLICY_PREFERRED_MANY; break;
	/* the kernel's weights live in sysfs, per node: equal weights are
	 * the nearest nodalloc mode that needs no reading of them */
	case ND_MPOL_WEIGHTED_INTERLEAVE:
	case ND_MPOL_INTERLEAVE: out->mode = ND_POLICY_INTERLEAVE; break;
	default: return -1; /* default, local: nodalloc's local already */
	}
	/* only nodes this topology can use (a cpuset may have shrunk since) */
	for (int n = 0; n < t->node_limit && n < ND_MAX_NODES; n++)
		if (_nd_bit_get(kmask, (size_t)n) && _nd_topo_has_mem(t, n))
			nd_nodemask_set(&out->nodes, n);
	int c = nd_nodemask_count(&out->nodes);
	/* preferred with no node is the kernel's "local" */
	if (c == 0 || (out->mode == ND_POLICY_PREFERRED && c != 1))
		return -1;
	return 0;
}

/* The kernel policy this process inherited (started under numactl -i all,
 * -m 1, ...), as the process default: the heap follows it instead of
 * overriding it with local (issue 13). Not under an emulated topology,
 * whose nodes are not the kernel's. */
static void inherit_kernel_policy(void)
{
	if (_nd_topo()->emulated)
		return;
	int kmode = ND_MPOL_DEFAULT;
	uint64_t kmask[ND_MAX_NODES / 64] = { 0 };
	nd_policy_t p;
	const nd_policy_t *r;
	if (_nd_os_get_mempolicy(&kmode, kmask, ND_MAX_NODES, NULL, 0) < 0 ||
	    _nd_policy_from_kernel(kmode, kmask, &p) != 0 || !(r = adopt(&p, NULL, 0)))
		return;
	set_proc(r);
	char buf[256];
	nd_policy_format(r, buf, sizeof buf);
	_nd_msg_info("NODALLOC_POLICY is not set: the heap follows the inherited kernel policy (%s)", buf);
}

int _nd_policy_init(void)
{
	const char *s = _nd_opt_str(ND_OPT_POLICY);
	if (!*s) {
		inherit_kernel_policy();
		return 0;
	}
	char err[256];
	nd_policy_t p;
	const nd_policy_t *r = NULL;
	if (nd_policy_parse(s, &p, err, sizeof err) != 0 ||
	    (p.mode != ND_POLICY_DEFAULT && !(r = adopt(&p, err, sizeof err)))) {
		_nd_msg_error("NODALLOC_POLICY: %s; the default policy stays local", err);
		return 0; /* a bad policy does not stop the allocator */
	}
	set_proc(r);
	return 0;
}

/* ---- node choice ------------------------------------------------------- */

enum { F_NONE = 0, F_SET_ONLY = 1, F_SET_FIRST = 2 };

/* The node for an allocation of npages under interleave or weighted: a
 * deficit round robin over the set. The node in turn takes allocations
 * while it has credit (pages it may still have); a node that gets the
 * turn gains its quota (2^k pages, times its weight), one that is still
 * in debt (a slab or run bigger than its quota) passes its turn. So for
 * allocations of at most a quota this is the seed's rule ("the allocation
 * size decides when to switch": 2^k single pages per node, then the next)
 * and for bigger ones (slabs of 4-64 pages under @4K) every node's pages
 * stay within one allocation plus one quota of its share. Credits are per
 * thread and shared by all interleave policies (the kernel's il_prev). */
static int64_t quota_of(const nd_policy_t *p, int n)
{
	uint64_t q = (uint64_t)1 << p->granularity_shift;
	return (int64_t)(p->mode == ND_POLICY_WEIGHTED ? q * p->weights[n] : q);
}

/* Out of line: only interleave and weighted runs take it, and
 * _nd_policy_first_n is in the code every process runs
 * (test_init_footprint). */
static __attribute__((noinline)) int il_choose(const nd_policy_t *p, uint64_t npages)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) /* no memory for a record: the first node */
		return mask_next_cyclic(&p->nodes, 0);
	int n = t->il_node;
	if (n < 0 || !nd_nodemask_isset(&p->nodes, n)) {
		n = mask_next_cyclic(&p->nodes, n < 0 ? 0 : n);
		t->il_credit[n & 63] = (int32_t)quota_of(p, n);
	}
	while (t->il_credit[n & 63] <= 0) {
		n = mask_next_cyclic(&p->nodes, n + 1);
		int64_t c = t->il_credit[n & 63] + quota_of(p, n);
		t->il_credit[n & 63] = (int32_t)(c > INT32_MAX ? INT32_MAX : c);
	}
	/* debt is capped at 64 quotas: a huge run does not starve its node
	 * for long (and the loop above stays short) */
	int64_t lim = -64 * quota_of(p, n), c = (int64_t)t->il_credit[n & 63] - (int64_t)(npages ? npages : 1);
	if (lim < -((int64_t)1 << 30))
		lim = -((int64_t)1 << 30);
	t->il_credit[n & 63] = (int32_t)(c < lim ? lim : c);
	t->il_node = n;
	return n;
}

void _nd_policy_reset_cursor(void)
{
	_nd_thread_t *t = _nd_thread_self();
	if (t) {
		t->il_node = -1;
		for (int i = 0; i < 64; i++)
			t->il_credit[i] = 0;
	}
}

/* Spread cursor of this thread (shared by all policies, like il_node).
 * Numbering every run's granules from 0 gives the partial last granule's
 * shortfall to the same nodes every time (the kernel avoids it because its
 * index comes from the virtual address). So a run starts at granule index
 * spread_cursor + shift, the cursor moves by the run's whole granules (the
 * node left with a partial one starts the next run: the whole granules of
 * successive runs tile the nodes), and shift makes the partial granule
 * visit every index too: with W indexes per round (nodes, or the sum of
 * the weights) and r = whole granules mod W, the partial granule's index
 * only moves in steps of gcd(r, W) (not at all if r = 0, e.g. 2.5 granules
 * on 2 nodes), so when gcd > 1 the start moves one more index every W/gcd
 * runs with a partial granule. A sequence of equal runs thus balances by
 * pages within one granule per index, exactly over W runs. Granules keep
 * their alignment: only the index moves. */
/* (spread_cursor, spread_partials: the thread record's; the latter counts
 * runs with a partial granule.) */

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

uint64_t _nd_policy_spread_start(const nd_policy_t *pol, uint64_t full_granules, bool partial)
{
	_nd_thread_t *t = _nd_thread_self();
	static ND_BIG_TABLE _nd_thread_t none; /* no memory for a record: cursor 0 */
	if (!t)
		t = &none;
	uint64_t s = t->spread_cursor;
	t->spread_cursor = s + full_granules;
	if (!partial || !pol)
		return s;
	uint64_t w = _nd_policy_round(pol);
	uint64_t k = t->spread_partials++;
	uint64_t gd = w ? gcd_u64(full_granules % w, w) : 1;
	if (gd > 1)
		s += k / w * gd + k % w * gd / w; /* = floor(k * gd / w), no overflow */
	return s;
}

void _nd_policy_reset_spread_cursor(void)
{
	_nd_thread_t *t = _nd_thread_self();
	if (t)
		t->spread_cursor = t->spread_partials = 0;
}

/* Points the iterator at node base's fallback list (node or tier order). */
static void use_list(_nd_policy_iter_t *it, const _nd_topo_t *t, int base, bool tier)
{
	const int *const *fl = tier && t->fallback_tier ? t->fallback_tier : t->fallback;
	it->list = NULL;
	it->len = 0;
	if (base >= 0 && base < t->node_limit && fl && fl[base]) {
		it->list = fl[base];
		it->len = t->fallback_len[base];
	}
	it->pos = 0;
}

int _nd_policy_next(_nd_policy_iter_t *it)
{
	const nd_nodemask_t *set = &it->pol->nodes;
	for (;;) {
		if (it->pos >= it->len) {
			if (it->filter == F_SET_FIRST && it->phase == 0) {
				it->phase = 1;
				it->pos = 0;
				continue;
			}
			return -1;
		}
		int n = it->list[it->pos++];
		if (n == it->want)
			continue;
		if (it->filter != F_NONE) {
			bool in = nd_nodemask_isset(set, n);
			if (it->phase == 0 ? !in : in)
				continue;
		}
		return n;
	}
}

/* _nd_policy_first_n's first choice under a policy with a node set: out
 * of line, so that the code a process with the default (local) policy
 * runs stays small (src/hot_text.ld, test_init_footprint). */
static __attribute__((noinline, cold)) int first_set(_nd_policy_iter_t *it, const _nd_topo_t *t,
						     const nd_policy_t *pol, int cnode, size_t npages, bool tier)
{
	switch (pol->mode) {
	case ND_POLICY_PREFERRED: {
		int n = _nd_policy_mask_next(&pol->nodes, 0);
		use_list(it, t, n, tier);
		return it->want = n;
	}
	case ND_POLICY_INTERLEAVE:
	case ND_POLICY_WEIGHTED: {
		int n = il_choose(pol, npages);
		use_list(it, t, n, tier);
		it->interleave = true;
		return it->want = n;
	}
	default: /* ND_POLICY_PREFERRED_MANY, ND_POLICY_BIND */
		/* the nearest node of the set in the CPU node's order */
		use_list(it, t, cnode, tier);
		return it->want = _nd_policy_next(it);
	}
}

int _nd_policy_first_n(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node, size_t npages)
{
	const _nd_topo_t *t = _nd_topo();
	if (!pol || pol->mode == ND_POLICY_DEFAULT)
		pol = _nd_policy_current();
	int cpu = _nd_topo_cpu();
	int cnode = -1, mnode = -1;
	if (cpu >= 0 && cpu < t->cpu_limit) {
		cnode = t->cpu_node[cpu];
		mnode = t->cpu_mem_node[cpu];
	}
	if (mnode < 0 || mnode >= t->node_limit) {
		/* unknown CPU: the lowest memory node */
		mnode = 0;
		while (mnode + 1 < t->node_limit && !_nd_topo_has_mem(t, mnode))
			mnode++;
	}
	if (cnode < 0 || cnode >= t->node_limit)
		cnode = mnode;
	it->pol = pol;
	it->cpu_node = cnode;
	it->interleave = false;
	it->phase = 0;
	it->want = -1;
	bool tier = (pol->flags & ND_POLICY_F_TIER_ORDER) || _nd_opt_int(ND_OPT_TIER_ORDER);
	nd_policy_mode_t mode = pol->mode;
	it->filter = mode == ND_POLICY_BIND ? F_SET_ONLY : mode == ND_POLICY_PREFERRED_MANY ? F_SET_FIRST : F_NONE;

	if (want_node >= t->node_limit || (mode == ND_POLICY_BIND && !nd_nodemask_isset(&pol->nodes, want_node)))
		want_node = -1;
	if (want_node >= 0) {
		/* Forced first choice: want_node, then the policy's order seen
		 * from want_node (a memoryless node: its nearest memory). */
		use_list(it, t, want_node, tier);
		if (_nd_topo_has_mem(t, want_node)) {
			it->want = want_node;
			return want_node;
		}
		return it->want = _nd_policy_next(it);
	}
	if (mode == ND_POLICY_PREFERRED || mode == ND_POLICY_INTERLEAVE || mode == ND_POLICY_WEIGHTED ||
	    mode == ND_POLICY_PREFERRED_MANY || mode == ND_POLICY_BIND)
		return first_set(it, t, pol, cnode, npages, tier);
	/* default, local: the CPU's node list (the kernel's zonelist of
	 * numa_node_id(), whose head is the effective memory node) */
	use_list(it, t, cnode, tier);
	if (!it->len)
		use_list(it, t, mnode, tier);
	return it->want = mnode;
}

int _nd_policy_first(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node)
{
	return _nd_policy_first_n(it, pol, want_node, 1);
}

uint64_t _nd_policy_round(const nd_policy_t *pol)
{
	uint64_t w = 0;
	if (pol->mode == ND_POLICY_INTERLEAVE)
		w = (uint64_t)nd_nodemask_count(&pol->nodes);
	else if (pol->mode == ND_POLICY_WEIGHTED)
		for (int n = _nd_policy_mask_next(&pol->nodes, 0); n >= 0; n = _nd_policy_mask_next(&pol->nodes, n + 1))
			w += pol->weights[n];
	return w;
}

int _nd_policy_node_for_granule(const nd_policy_t *pol, uint64_t g)
{
	if (!pol || pol->mode == ND_POLICY_DEFAULT)
		pol = _nd_policy_current();
	if (pol->mode == ND_POLICY_INTERLEAVE) {
		int c = nd_nodemask_count(&pol->nodes);
		return c ? mask_nth(&pol->nodes, (int)(g % (uint64_t)c)) : -1;
	}
	if (pol->mode == ND_POLICY_WEIGHTED) {
		uint64_t total = _nd_policy_round(pol);
		if (!total)
			return -1;
		uint64_t r = g % total;
		for (int n = _nd_policy_mask_next(&pol->nodes, 0); n >= 0; n = _nd_policy_mask_next(&pol->nodes, n + 1)) {
			if (r < pol->weights[n])
				return n;
			r -= pol->weights[n];
		}
	}
	return -1;
}

void _nd_policy_count(const _nd_policy_iter_t *it, int got)
{
	_nd_stats_count(it->want, got, it->cpu_node, it->interleave);
}

