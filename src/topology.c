// SPDX-License-Identifier: MIT
/*
 * Topology core: the tables of a topology, the fallback lists (the
 * kernel's zonelists: node order and tier order), each CPU's effective
 * memory node (numa_mem_id), the live topology and its replacement, free
 * memory per node, and the current CPU. Built by topo_spec.c (emulation,
 * NODALLOC_TOPOLOGY) or topo_sysfs.c (the machine); docs/topology.md.
 *
 * A topology is built whole in one fresh mapping (every table sized by the
 * highest node id + 1 and the highest CPU id + 1) and only then published
 * by one pointer store, so a bad spec or tree leaves the live one as it
 * was. Published topologies are immutable (except the free-memory cache
 * and the emulated use counters, which are atomics) and never unmapped.
 */
#include "topo_impl.h"

#define FREE_CACHE_NS 10000000ull /* MemFree is re-read at most every 10 ms */

/* The per-thread CPU override (nd_emulate_cpu) and rseq area live in the
 * thread record (internal.h): cpu_override, rseq. */

static topo_impl_t *live;       /* published by release store */
static int frozen;
ND_LOCK_DEFINE(swap_lock, ND_RANK_TOPO_SWAP); /* serializes replacing `live` */

/* Fast-path copies of the live topology's CPU facts (set before `live`). */
static int fast_dense_limit = 1;
static topo_impl_t *fast_topo;

/* One node, one CPU: what _nd_topo() returns before init. */
static const uint8_t boot_one[1] = { 1 };
static const uint64_t boot_mem[1] = { 0 };
static const uint8_t boot_dist[1] = { ND_TOPO_LOCAL_DIST };
static const int boot_zero[1] = { 0 };
static const int boot_len[1] = { 1 };
static const int *const boot_fb[1] = { boot_zero };
static const _nd_topo_t boot = {
	.node_limit = 1, .cpu_limit = 1, .online = boot_one, .has_mem = boot_one,
	.has_cpu = boot_one, .mem_total = boot_mem, .distance = boot_dist,
	.cpu_node = boot_zero, .cpu_mem_node = boot_zero, .fallback = boot_fb,
	.fallback_tier = boot_fb, .fallback_len = boot_len, .tier = boot_zero,
	.tier_count = 1, .cpu_allowed = boot_one, .mem_allowed = boot_one, .one_cpu_node = true,
};

void _nd_topo_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	_nd_msg_vformat(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- building ----------------------------------------------------------- */

static size_t take(size_t *off, size_t bytes)
{
	size_t at = ND_ALIGN_UP(*off, (size_t)16);
	*off = at + bytes;
	return at;
}

/* One zeroed block (_nd_os_small) holding every table of a topology of L nodes and C
 * CPUs. NULL on failure (err set). */
topo_impl_t *_nd_topo_alloc(int L, int C, char *err, size_t errlen)
{
	size_t l = (size_t)L, c = (size_t)C, off = 0;
	size_t o_self = take(&off, sizeof(topo_impl_t));
	size_t o_online = take(&off, l), o_mem = take(&off, l), o_cpu = take(&off, l);
	size_t o_memok = take(&off, l), o_cpuok = take(&off, c);
	size_t o_dist = take(&off, l * l);
	size_t o_total = take(&off, l * 8), o_used = take(&off, l * 8);
	size_t o_fcache = take(&off, l * 8), o_fstamp = take(&off, l * 8);
	size_t o_cnode = take(&off, c * sizeof(int)), o_cmem = take(&off, c * sizeof(int));
	size_t o_cpus = take(&off, c * sizeof(int));
	size_t o_len = take(&off, l * sizeof(int)), o_tier = take(&off, l * sizeof(int));
	size_t o_scr = take(&off, l * sizeof(int));
	size_t o_fb = take(&off, l * sizeof(int *)), o_fbt = take(&off, l * sizeof(int *));
	size_t o_fbs = take(&off, l * l * sizeof(int)), o_fbts = take(&off, l * l * sizeof(int));
	size_t len = off;
	int e = 0;
	char *m = _nd_os_small(len, &e);
	if (!m) {
		_nd_topo_err(err, errlen, "topology: out of memory for %d nodes and %d CPUs (error %d)", L, C, -e);
		return NULL;
	}
	topo_impl_t *t = (topo_impl_t *)(m + o_self);
	t->map_len = len;
	t->online = (uint8_t *)(m + o_online);
	t->has_mem = (uint8_t *)(m + o_mem);
	t->has_cpu = (uint8_t *)(m + o_cpu);
	t->mem_allowed = (uint8_t *)(m + o_memok);
	t->cpu_allowed = (uint8_t *)(m + o_cpuok);
	t->dist = (uint8_t *)(m + o_dist);
	t->mem_total = (uint64_t *)(m + o_total);
	t->mem_used = (int64_t *)(m + o_used);
	t->free_cache = (uint64_t *)(m + o_fcache);
	t->free_stamp = (uint64_t *)(m + o_fstamp);
	t->cpu_node = (int *)(m + o_cnode);
	t->cpu_mem_node = (int *)(m + o_cmem);
	t->cpus = (int *)(m + o_cpus);
	t->fb_len = (int *)(m + o_len);
	t->tier = (int *)(m + o_tier);
	t->scratch = (int *)(m + o_scr);
	t->fb = (int **)(m + o_fb);
	t->fbt = (int **)(m + o_fbt);
	t->fb_store = (int *)(m + o_fbs);
	t->fbt_store = (int *)(m + o_fbts);
	for (int i = 0; i < C; i++)
		t->cpu_node[i] = t->cpu_mem_node[i] = -1;
	for (int i = 0; i < L; i++) {
		t->fb[i] = t->fb_store + (size_t)i * l;
		t->fbt[i] = t->fbt_store + (size_t)i * l;
		t->tier[i] = -1;
		for (int j = 0; j < L; j++)
			t->dist[(size_t)i * l + (size_t)j] = i == j ? ND_TOPO_LOCAL_DIST : ND_TOPO_REMOTE_DIST;
	}
	_nd_topo_t *p = &t->pub;
	p->node_limit = L;
	p->cpu_limit = C;
	p->online = t->online;
	p->has_mem = t->has_mem;
	p->has_cpu = t->has_cpu;
	p->mem_total = t->mem_total;
	p->distance = t->dist;
	p->cpu_node = t->cpu_node;
	p->cpu_mem_node = t->cpu_mem_node;
	p->fallback = (const int *const *)t->fb;
	p->fallback_tier = (const int *const *)t->fbt;
	p->fallback_len = t->fb_len;
	p->tier = t->tier;
	p->cpu_allowed = t->cpu_allowed;
	p->mem_allowed = t->mem_allowed;
	return t;
}

void _nd_topo_free(topo_impl_t *t)
{
	if (t)
		_nd_os_small_free(t, t->map_len); /* t is at the tables' start */
}

static inline int dist_of(const topo_impl_t *t, int from, int to)
{
	return t->dist[(size_t)from * (size_t)t->pub.node_limit + (size_t)to];
}

/* The kernel's find_next_best_node() (mm/page_alloc.c): the local node if
 * it has memory, else the memory node of least
 *   (distance + (n < node) + has_cpus(n)) * MAX_NUMNODES + node_load[n]
 * i.e. nearest first; at equal distance headless (CPU-less) nodes and
 * nodes above us first; then the less loaded; then the lowest id. */
static int next_best_node(const topo_impl_t *t, int node, uint8_t *used, const int *load)
{
	if (!used[node] && t->has_mem[node]) {
		used[node] = 1;
		return node;
	}
	long min_val = 0x7fffffffL;
	int best = -1;
	for (int n = 0; n < t->pub.node_limit; n++) {
		if (!t->has_mem[n] || used[n])
			continue;
		long val = dist_of(t, node, n);
		val += n < node;
		if (t->has_cpu[n])
			val += 1; /* PENALTY_FOR_NODE_WITH_CPUS */
		val *= ND_MAX_NODES;
		val += load[n];
		if (val < min_val) {
			min_val = val;
			best = n;
		}
	}
	if (best >= 0)
		used[best] = 1;
	return best;
}

/* Fallback lists in node order (the kernel's build_zonelists() for each
 * online node in id order, sharing node_load so that the first node of
 * each distance group is spread over the local nodes), tiers, tier-order
 * lists and each CPU's memory node. used: node_limit bytes of scratch. */
void _nd_topo_build_lists(topo_impl_t *t, uint8_t *used)
{
	int L = t->pub.node_limit;
	int *load = t->scratch;
	for (int n = 0; n < L; n++)
		load[n] = 0;
	for (int local = 0; local < L; local++) {
		t->fb_len[local] = 0;
		if (!t->online[local])
			continue;
		for (int n = 0; n < L; n++)
			used[n] = 0;
		int prev = local, k = 0, node;
		while ((node = next_best_node(t, local, used, load)) >= 0) {
			/* The first node of a new distance group gets a load
			 * penalty, so the next local node picks another one. */
			if (dist_of(t, local, node) != dist_of(t, local, prev))
				load[node] += 1;
			t->fb[local][k++] = node;
			prev = node;
		}
		t->fb_len[local] = k;
		ND_ASSERT(k <= L, "a fallback list holds each memory node at most once");
		ND_ASSERT(!t->has_mem[local] || (k > 0 && t->fb[local][0] == local),
			  "a node with memory is first in its own fallback list");
	}

	/* Tiers: a memory node with CPUs is in the top tier (key 0); a
	 * CPU-less memory node's key is 1 + its distance from the nearest
	 * node with CPUs. Tiers are the distinct keys, ascending, numbered
	 * from 0. */
	int *key = t->scratch; /* load is no longer needed */
	for (int m = 0; m < L; m++) {
		key[m] = -1;
		if (!t->has_mem[m])
			continue;
		if (t->has_cpu[m]) {
			key[m] = 0;
			continue;
		}
		int best = 256;
		for (int c = 0; c < L; c++)
			if (t->online[c] && t->has_cpu[c] && dist_of(t, c, m) < best)
				best = dist_of(t, c, m);
		key[m] = 1 + best;
	}
	int ntiers = 0;
	for (int last = -1;;) {
		int next = 0x7fffffff;
		for (int m = 0; m < L; m++)
			if (key[m] > last && key[m] < next)
				next = key[m];
		if (next == 0x7fffffff)
			break;
		for (int m = 0; m < L; m++)
			if (key[m] == next)
				t->tier[m] = ntiers;
		ntiers++;
		last = next;
	}
	t->pub.tier_count = ntiers;

	/* Tier order: the local node first if it has memory, then every node
	 * of tier 0, then tier 1, ...; inside a tier, node order. */
	for (int local = 0; local < L; local++) {
		int len = t->fb_len[local], k = 0;
		if (len == 0)
			continue;
		const int *src = t->fb[local];
		bool lead = src[0] == local;
		if (lead)
			t->fbt[local][k++] = local;
		for (int tier = 0; tier < ntiers; tier++)
			for (int i = lead ? 1 : 0; i < len; i++)
				if (t->tier[src[i]] == tier)
					t->fbt[local][k++] = src[i];
		ND_ASSERT(k == len, "the tier-order list holds the same nodes as the node-order list");
	}

	/* CPUs: the memory node (numa_mem_id()), the dense list, and whether
	 * they all share one node and memory node (a policy's heap is then
	 * the same on every CPU: heap.c's placement cache). */
	int nc = 0;
	t->dense_limit = -1;
	t->pub.one_cpu_node = true;
	for (int c = 0; c < t->pub.cpu_limit; c++) {
		int node = t->cpu_node[c];
		if (node < 0) {
			if (t->dense_limit < 0)
				t->dense_limit = c;
			continue;
		}
		t->cpus[nc++] = c;
		t->cpu_mem_node[c] = t->fb_len[node] ? t->fb[node][0] : -1;
		ND_ASSERT(t->cpu_mem_node[c] < 0 || t->has_mem[t->cpu_mem_node[c]],
			  "a CPU's memory node (numa_mem_id) has memory");
		if (nc > 1 && (node != t->cpu_node[t->cpus[0]] || t->cpu_mem_node[c] != t->cpu_mem_node[t->cpus[0]]))
			t->pub.one_cpu_node = false;
	}
	t->ncpus = nc;
	if (t->dense_limit < 0)
		t->dense_limit = t->pub.cpu_limit;
}

/* ---- lists: "0-3,8,10-11" ----------------------------------------------- */

/* Parses one unsigned decimal; returns chars used (0 if none). Values
 * above max are reported as max + 1. */
int _nd_topo_parse_uint(const char *s, long max, long *out)
{
	int i = 0;
	long v = 0;
	while (_nd_topo_is_digit(s[i])) {
		if (v <= max)
			v = v * 10 + (s[i] - '0');
		i++;
	}
	*out = v > max ? max + 1 : v;
	return i;
}

/* Walks a kernel list ("0-3,8"); calls fn for each id. Stops at the first
 * char that cannot continue the list (a ',' not followed by a digit
 * ends it, so lists can be followed by ",field=" in the spec). Returns the
 * length consumed, or -1 - (offset of the error) with *why set. */
int _nd_topo_walk_list(const char *s, long max, _nd_topo_list_fn fn, void *arg, const char **why)
{
	int i = 0;
	for (;;) {
		long a, b;
		int n = _nd_topo_parse_uint(s + i, max, &a);
		if (n == 0) {
			*why = "expected a number";
			return -1 - i;
		}
		if (a > max) {
			*why = "number out of range";
			return -1 - i;
		}
		int at = i;
		i += n;
		b = a;
		if (s[i] == '-') {
			n = _nd_topo_parse_uint(s + i + 1, max, &b);
			if (n == 0) {
				*why = "expected a number after '-'";
				return -1 - (i + 1);
			}
			if (b > max) {
				*why = "number out of range";
				return -1 - (i + 1);
			}
			if (b < a) {
				*why = "range runs backwards";
				return -1 - at;
			}
			i += 1 + n;
		}
		for (long v = a; v <= b; v++) {
			int r = fn(v, arg, at);
			if (r)
				return r;
		}
		if (s[i] == ',' && _nd_topo_is_digit(s[i + 1])) {
			i++;
			continue;
		}
		return i;
	}
}

void _nd_topo_discard(const _nd_topo_t *t)
{
	/* Never the live one: readers may hold its pointers. */
	if (t && t != &boot && (const void *)t != (const void *)__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		_nd_topo_free((topo_impl_t *)t);
}

/* ---- the live topology -------------------------------------------------- */

static void publish(topo_impl_t *t)
{
	/* cpu_slower folds unknown CPUs by t->ncpus */
	ND_ASSERT(t->ncpus > 0 && t->dense_limit <= t->pub.cpu_limit, "a published topology has a possible CPU");
	__atomic_store_n(&fast_topo, t, __ATOMIC_RELEASE);
	/* Emulated: only ids below the dense prefix are emulated CPUs as they
	 * are; real: the same holds for the machine's CPU ids. */
	__atomic_store_n(&fast_dense_limit, t->dense_limit, __ATOMIC_RELEASE);
	__atomic_store_n(&live, t, __ATOMIC_RELEASE);
}

topo_impl_t *_nd_topo_live(void)
{
	return __atomic_load_n(&live, __ATOMIC_ACQUIRE);
}

const _nd_topo_t *_nd_topo(void)
{
	topo_impl_t *t = __atomic_load_n(&live, __ATOMIC_ACQUIRE);
	return t ? &t->pub : &boot;
}

static bool topo_is_frozen_msg(char *err, size_t errlen)
{
	if (!__atomic_load_n(&frozen, __ATOMIC_ACQUIRE))
		return false;
	_nd_topo_err(err, errlen, "topology: cannot be replaced after the first allocation "
			     "(set NODALLOC_TOPOLOGY or replace it before allocating)");
	return true;
}

/* Publishes nt unless the page layer has frozen the topology meanwhile
 * (checked again under the lock that orders swaps). */
static int install(const _nd_topo_t *nt, char *err, size_t errlen)
{
	_nd_lock(&swap_lock);
	if (topo_is_frozen_msg(err, errlen)) {
		_nd_unlock(&swap_lock);
		_nd_topo_discard(nt);
		return -1;
	}
	/* The old one stays mapped: readers may hold its pointers. */
	publish((topo_impl_t *)nt);
	_nd_unlock(&swap_lock);
	return 0;
}

int _nd_topo_emulate(const char *spec, char *err, size_t errlen)
{
	if (topo_is_frozen_msg(err, errlen))
		return -1;
	const _nd_topo_t *t = _nd_topo_build_spec(spec, err, errlen);
	return t ? install(t, err, errlen) : -1;
}

int _nd_topo_load_sysfs(const char *root, char *err, size_t errlen)
{
	if (topo_is_frozen_msg(err, errlen))
		return -1;
	const _nd_topo_t *t = _nd_topo_build_sysfs(root, err, errlen);
	return t ? install(t, err, errlen) : -1;
}

/* Under swap_lock: once this returns, no replacement is in flight, so the
 * caller's next _nd_topo() is the final topology. */
void _nd_topo_freeze(void)
{
	if (__atomic_load_n(&frozen, __ATOMIC_ACQUIRE))
		return;
	_nd_lock(&swap_lock);
	__atomic_store_n(&frozen, 1, __ATOMIC_RELEASE);
	_nd_unlock(&swap_lock);
}

bool _nd_topo_frozen(void)
{
	return __atomic_load_n(&frozen, __ATOMIC_ACQUIRE) != 0;
}

int _nd_topo_init(void)
{
	if (__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		return 0;
	char err[300];
	const char *spec = _nd_opt_str(ND_OPT_TOPOLOGY);
	if (spec[0]) {
		if (_nd_topo_emulate(spec, err, sizeof err) == 0)
			return 0;
		_nd_msg_error("NODALLOC_TOPOLOGY: %s; using the real topology", err);
	}
	const char *root = _nd_opt_str(ND_OPT_SYSFS_ROOT);
	if (root[0]) {
		if (_nd_topo_load_sysfs(root, err, sizeof err) == 0)
			return 0;
		_nd_msg_error("NODALLOC_SYSFS_ROOT: %s; using /sys", err);
	}
	if (_nd_topo_load_sysfs("/sys", err, sizeof err) == 0)
		return 0;
	_nd_msg_info("%s; assuming one node", err);
	const _nd_topo_t *flat = _nd_topo_build_flat(err, sizeof err);
	if (!flat) {
		_nd_msg_error("%s", err);
		return -1;
	}
	return install(flat, err, sizeof err);
}

/* ---- free memory --------------------------------------------------------- */

void _nd_topo_account(int node, int64_t bytes)
{
	topo_impl_t *t = __atomic_load_n(&live, __ATOMIC_ACQUIRE);
	if (t && node >= 0 && node < t->pub.node_limit)
		__atomic_add_fetch(&t->mem_used[node], bytes, __ATOMIC_RELAXED);
}

uint64_t _nd_topo_node_free_in(const _nd_topo_t *pt, int node)
{
	if (!pt || pt == &boot || node < 0 || node >= pt->node_limit || !pt->has_mem[node])
		return pt == &boot ? UINT64_MAX : 0;
	topo_impl_t *t = (topo_impl_t *)pt;
	if (pt->emulated) {
		int64_t used = __atomic_load_n(&t->mem_used[node], __ATOMIC_RELAXED);
		uint64_t total = t->mem_total[node];
		return used <= 0 ? total : (uint64_t)used >= total ? 0 : total - (uint64_t)used;
	}
	uint64_t now = _nd_os_now_ns();
	uint64_t stamp = __atomic_load_n(&t->free_stamp[node], __ATOMIC_RELAXED);
	if (now - stamp >= FREE_CACHE_NS && t->root[0]) {
		/* Racing readers may both re-read: harmless, last store wins. */
		char path[320], buf[2048];
		_nd_msg_format(path, sizeof path, "%s/devices/system/node/node%d/meminfo", t->root, node);
		uint64_t v;
		if (_nd_os_read_file(path, buf, sizeof buf) >= 0 && _nd_topo_meminfo_value(buf, "MemFree:", &v))
			__atomic_store_n(&t->free_cache[node], v, __ATOMIC_RELAXED);
		__atomic_store_n(&t->free_stamp[node], now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&t->free_cache[node], __ATOMIC_RELAXED);
}

uint64_t _nd_topo_node_free(int node)
{
	return _nd_topo_node_free_in(_nd_topo(), node);
}

/* ---- current CPU --------------------------------------------------------- */

/* The thread's rseq area (its record's rseq): NULL = not looked up yet,
 * (void *)1 = none. Without a record yet: looked up every time. */

/* Out of line: rseq unknown or absent, an id beyond the dense prefix, or a
 * real CPU that the emulated topology does not have. */
__attribute__((noinline)) static int cpu_s_nd_topo_lower(void)
{
	_nd_thread_t *th = _nd_tls;
	struct _nd_rseq_abi *r = th->rseq;
	if (!r) {
		r = _nd_os_rseq_area();
		if (!_nd_thread_none(th))
			th->rseq = r ? r : (struct _nd_rseq_abi *)1;
	}
	uint32_t c = (uintptr_t)r > 1 ? __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED) : UINT32_MAX;
	if (c == (uint32_t)-2 && !_nd_thread_none(th)) /* RSEQ_CPU_ID_REGISTRATION_FAILED: for good */
		th->rseq = (struct _nd_rseq_abi *)1;
	if (c >= ND_TOPO_MAX_CPUS) { /* -1 not registered yet, -2 failed, or none */
		unsigned cpu = 0, node = 0;
		if (_nd_os_getcpu(&cpu, &node) == 0)
			c = cpu;
		else
			c = 0;
	}
	topo_impl_t *t = __atomic_load_n(&fast_topo, __ATOMIC_ACQUIRE);
	if (!t)
		return 0; /* boot topology: one CPU */
	if (c < (uint32_t)t->pub.cpu_limit && t->cpu_node[c] >= 0)
		return (int)c;
	/* Fold an unknown CPU onto the known ones (emulation on a bigger
	 * machine, or a CPU hot-added after init). */
	return t->cpus[c % (uint32_t)t->ncpus];
}

int _nd_topo_cpu_slow(void)
{
	struct _nd_rseq_abi *r = _nd_tls->rseq;
	if (nd_likely((uintptr_t)r > 1)) {
		uint32_t c = __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
		if (nd_likely(c < (uint32_t)__atomic_load_n(&fast_dense_limit, __ATOMIC_RELAXED)))
			return (int)c;
	}
	return cpu_s_nd_topo_lower();
}

