// SPDX-License-Identifier: MIT
/*
 * Topology: nodes, CPUs, distances, fallback lists and each CPU's memory
 * node, read from sysfs or emulated from a spec string (docs/topology.md).
 *
 * A topology is built whole in one fresh mapping (every table sized by the
 * highest node id + 1 and the highest CPU id + 1) and only then published
 * by one pointer store, so a bad spec or tree leaves the live one as it
 * was. Published topologies are immutable (except the free-memory cache
 * and the emulated use counters, which are atomics) and never unmapped.
 */
#include "internal.h"

#define LOCAL_DIST 10
#define REMOTE_DIST 20
#define MAX_CPUS 8192 /* the kernel's largest NR_CPUS on x86-64 */
#define FREE_CACHE_NS 10000000ull /* MemFree is re-read at most every 10 ms */
#define FILE_BUF 8192

/* The per-thread CPU override (nd_emulate_cpu) and rseq area live in the
 * thread record (internal.h): cpu_override, rseq. */

typedef struct topo_impl {
	_nd_topo_t pub; /* first: &pub is what callers see */
	size_t map_len;
	/* writable views of pub's tables */
	uint8_t *online, *has_mem, *has_cpu, *dist, *cpu_allowed, *mem_allowed;
	uint64_t *mem_total;
	int *cpu_node, *cpu_mem_node, *fb_len, *tier;
	int **fb, **fbt;
	int *fb_store, *fbt_store; /* node_limit rows of node_limit entries */
	int *scratch;              /* node_limit ints: node_load while building */
	int64_t *mem_used;         /* emulation: bytes accounted by page.c */
	uint64_t *free_cache, *free_stamp; /* real: MemFree and when read */
	int *cpus;                 /* the possible CPUs, ascending */
	int ncpus;
	int dense_limit;           /* every id below is a possible CPU */
	char root[256];            /* sysfs root ("" in emulation) */
} topo_impl_t;

static topo_impl_t *live;       /* published by release store */
static int frozen;
ND_LOCK_DEFINE(swap_lock, ND_RANK_TOPO_SWAP); /* serializes replacing `live` */

/* Fast-path copies of the live topology's CPU facts (set before `live`). */
static int fast_dense_limit = 1;
static topo_impl_t *fast_topo;

/* One node, one CPU: what _nd_topo() returns before init. */
static const uint8_t boot_one[1] = { 1 };
static const uint64_t boot_mem[1] = { 0 };
static const uint8_t boot_dist[1] = { LOCAL_DIST };
static const int boot_zero[1] = { 0 };
static const int boot_len[1] = { 1 };
static const int *const boot_fb[1] = { boot_zero };
static const _nd_topo_t boot = {
	.node_limit = 1, .cpu_limit = 1, .online = boot_one, .has_mem = boot_one,
	.has_cpu = boot_one, .mem_total = boot_mem, .distance = boot_dist,
	.cpu_node = boot_zero, .cpu_mem_node = boot_zero, .fallback = boot_fb,
	.fallback_tier = boot_fb, .fallback_len = boot_len, .tier = boot_zero,
	.tier_count = 1, .cpu_allowed = boot_one, .mem_allowed = boot_one,
};

/* ---- small string helpers (no libc dependence beyond the basics) ------- */

static size_t str_len(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
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

/* One zeroed mapping holding every table of a topology of L nodes and C
 * CPUs. NULL on failure (err set). */
static topo_impl_t *topo_alloc(int L, int C, char *err, size_t errlen)
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
	size_t len = ND_ALIGN_UP(off, ND_PAGE_SIZE);
	int e = 0;
	char *m = _nd_os_mmap(len, false, &e);
	if (!m) {
		set_err(err, errlen, "topology: out of memory for %d nodes and %d CPUs (error %d)", L, C, -e);
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
			t->dist[(size_t)i * l + (size_t)j] = i == j ? LOCAL_DIST : REMOTE_DIST;
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

static void topo_free(topo_impl_t *t)
{
	if (t)
		_nd_os_munmap(t, t->map_len); /* t is at the mapping's start */
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
static void build_lists(topo_impl_t *t, uint8_t *used)
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
	}

	/* CPUs: the memory node (numa_mem_id()), the dense list. */
	int nc = 0;
	t->dense_limit = -1;
	for (int c = 0; c < t->pub.cpu_limit; c++) {
		int node = t->cpu_node[c];
		if (node < 0) {
			if (t->dense_limit < 0)
				t->dense_limit = c;
			continue;
		}
		t->cpus[nc++] = c;
		t->cpu_mem_node[c] = t->fb_len[node] ? t->fb[node][0] : -1;
	}
	t->ncpus = nc;
	if (t->dense_limit < 0)
		t->dense_limit = t->pub.cpu_limit;
}

/* ---- lists: "0-3,8,10-11" ----------------------------------------------- */

/* Parses one unsigned decimal; returns chars used (0 if none). Values
 * above max are reported as max + 1. */
static int parse_uint(const char *s, long max, long *out)
{
	int i = 0;
	long v = 0;
	while (is_digit(s[i])) {
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
typedef int (*list_fn)(long id, void *arg, int at);
static int walk_list(const char *s, long max, list_fn fn, void *arg, const char **why)
{
	int i = 0;
	for (;;) {
		long a, b;
		int n = parse_uint(s + i, max, &a);
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
			n = parse_uint(s + i + 1, max, &b);
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
		if (s[i] == ',' && is_digit(s[i + 1])) {
			i++;
			continue;
		}
		return i;
	}
}

/* ---- the spec grammar (docs/topology.md) --------------------------------
 *   spec     := clause { ';' clause }       (empty clauses are allowed)
 *   clause   := ["node"] ID ["-" ID] ":" field { (ws | ",") field }
 *             | "distance" (":" | "=") (pairs | matrix)
 *   field    := "cpus=" LIST | "ncpus=" N | "mem=" SIZE
 *   pairs    := pair { (ws | ",") pair };  pair := A "-" B "=" D (both ways)
 *                                                | A ">" B "=" D (one way)
 *   matrix   := row { "/" row }; row := D { (ws | ",") D }, one row per
 *               node and one column per node, in ascending node id
 * Distances default to 10 local, 20 remote; local must be 10, remote
 * 11-255. mem is required (0 = memoryless).
 * ------------------------------------------------------------------------ */

typedef struct spec_parse {
	const char *s, *p; /* spec and cursor */
	char *err;
	size_t errlen;
	int node;          /* node being parsed, for messages (-1: none) */
	const char *field; /* field being parsed, for messages */
	topo_impl_t *t;    /* NULL in the first pass (which only validates
			    * and measures), the tables in the second */
	int max_node, max_cpu;
	int next_cpu;      /* ncpus=: lowest CPU id not yet checked */
	bool failed;
	uint64_t nodes_seen[ND_MAX_NODES / 64];
	uint64_t cpus_seen[MAX_CPUS / 64];
} spec_parse_t;

static bool bit_get(const uint64_t *m, long i) { return (m[i >> 6] >> (i & 63)) & 1; }
static void bit_set(uint64_t *m, long i) { m[i >> 6] |= 1ull << (i & 63); }

static int sp_fail(spec_parse_t *sp, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sp_fail(spec_parse_t *sp, const char *at, const char *fmt, ...)
{
	if (sp->failed)
		return -1;
	sp->failed = true;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	_nd_msg_vformat(what, sizeof what, fmt, ap);
	va_end(ap);
	char where[48] = "";
	if (sp->node >= 0)
		_nd_msg_format(where, sizeof where, "node %d: ", sp->node);
	set_err(sp->err, sp->errlen, "topology spec: %s%s%s%s at column %d", where,
		sp->field ? sp->field : "", sp->field ? ": " : "", what, (int)(at - sp->s) + 1);
	return -1;
}

static void skip_ws(spec_parse_t *sp)
{
	while (is_space(*sp->p))
		sp->p++;
}

/* Copies the token at the cursor (up to whitespace, ',', ';', '/') for a
 * message. */
static const char *token(const char *p, char *buf, size_t len)
{
	size_t i = 0;
	while (p[i] && !is_space(p[i]) && p[i] != ';' && p[i] != ',' && p[i] != '/' && i + 1 < len) {
		buf[i] = p[i];
		i++;
	}
	buf[i] = '\0';
	return buf;
}

static bool keyword(spec_parse_t *sp, const char *kw)
{
	size_t n = str_len(kw);
	for (size_t i = 0; i < n; i++)
		if (lower(sp->p[i]) != kw[i])
			return false;
	sp->p += n;
	return true;
}

struct cpu_arg {
	spec_parse_t *sp;
	const char *base;
};

static int add_cpu(spec_parse_t *sp, long cpu, const char *at)
{
	if (bit_get(sp->cpus_seen, cpu)) {
		if (sp->t && sp->t->cpu_node[cpu] >= 0)
			return sp_fail(sp, at, "CPU %ld is already on node %d", cpu, sp->t->cpu_node[cpu]);
		return sp_fail(sp, at, "CPU %ld is already on another node", cpu);
	}
	bit_set(sp->cpus_seen, cpu);
	if (cpu > sp->max_cpu)
		sp->max_cpu = (int)cpu;
	if (sp->t) {
		sp->t->cpu_node[cpu] = sp->node;
		sp->t->cpu_allowed[cpu] = 1;
		sp->t->has_cpu[sp->node] = 1;
	}
	return 0;
}

static int cpu_cb(long id, void *arg, int at)
{
	struct cpu_arg *a = arg;
	return add_cpu(a->sp, id, a->base + at);
}

static int parse_node_clause(spec_parse_t *sp)
{
	const char *at = sp->p;
	long first, last;
	int n = parse_uint(sp->p, ND_MAX_NODES - 1, &first);
	if (n == 0) {
		char tok[40];
		return sp_fail(sp, at, "expected a node id, 'node N:' or 'distance:', got '%s'",
			       token(sp->p, tok, sizeof tok));
	}
	if (first >= ND_MAX_NODES)
		return sp_fail(sp, at, "node id out of range (0-%d)", ND_MAX_NODES - 1);
	sp->p += n;
	last = first;
	if (*sp->p == '-') {
		n = parse_uint(sp->p + 1, ND_MAX_NODES - 1, &last);
		if (n == 0)
			return sp_fail(sp, sp->p + 1, "expected a node id after '-'");
		if (last >= ND_MAX_NODES)
			return sp_fail(sp, sp->p + 1, "node id out of range (0-%d)", ND_MAX_NODES - 1);
		if (last < first)
			return sp_fail(sp, at, "node range %ld-%ld runs backwards", first, last);
		sp->p += 1 + n;
	}
	skip_ws(sp);
	if (*sp->p != ':')
		return sp_fail(sp, sp->p, "expected ':' after the node id");
	sp->p++;
	const char *fields = sp->p;
	for (long node = first; node <= last; node++) {
		/* A range applies the same fields to each node in turn. */
		sp->p = fields;
		sp->node = (int)node;
		sp->field = NULL;
		if (bit_get(sp->nodes_seen, node))
			return sp_fail(sp, at, "defined twice");
		bit_set(sp->nodes_seen, node);
		if (node > sp->max_node)
			sp->max_node = (int)node;
		if (sp->t)
			sp->t->online[node] = 1;
		bool have_mem = false, have_cpus = false;
		for (;;) {
			while (is_space(*sp->p) || *sp->p == ',')
				sp->p++;
			if (*sp->p == '\0' || *sp->p == ';')
				break;
			const char *fat = sp->p;
			const char *fname = NULL;
			if (keyword(sp, "cpus=")) {
				sp->field = fname = "cpus";
				if (have_cpus)
					return sp_fail(sp, fat, "given twice");
				have_cpus = true;
				struct cpu_arg a = { sp, sp->p };
				const char *why = "";
				int r = walk_list(sp->p, MAX_CPUS - 1, cpu_cb, &a, &why);
				if (sp->failed)
					return -1;
				if (r < 0) {
					char tok[40];
					return sp_fail(sp, sp->p - 1 - r, "%s in '%s' (CPU ids 0-%d)", why,
						       token(sp->p, tok, sizeof tok), MAX_CPUS - 1);
				}
				sp->p += r;
			} else if (keyword(sp, "ncpus=")) {
				sp->field = fname = "ncpus";
				if (have_cpus)
					return sp_fail(sp, fat, "given twice (or with cpus=)");
				have_cpus = true;
				long cnt;
				int k = parse_uint(sp->p, MAX_CPUS, &cnt);
				if (k == 0 || cnt == 0 || cnt > MAX_CPUS) {
					char tok[40];
					return sp_fail(sp, sp->p, "bad count '%s' (1-%d)", token(sp->p, tok, sizeof tok), MAX_CPUS);
				}
				/* The cnt lowest CPU ids not taken so far. */
				for (long i = 0; i < cnt; i++) {
					while (sp->next_cpu < MAX_CPUS && bit_get(sp->cpus_seen, sp->next_cpu))
						sp->next_cpu++;
					if (sp->next_cpu >= MAX_CPUS)
						return sp_fail(sp, sp->p, "more than %d CPUs", MAX_CPUS);
					add_cpu(sp, sp->next_cpu, sp->p);
				}
				sp->p += k;
			} else if (keyword(sp, "mem=")) {
				sp->field = fname = "mem";
				if (have_mem)
					return sp_fail(sp, fat, "given twice");
				have_mem = true;
				char tok[40];
				token(sp->p, tok, sizeof tok);
				uint64_t bytes;
				if (tok[0] == '\0' || _nd_opt_parse_size(tok, &bytes) != 0)
					return sp_fail(sp, sp->p, "bad size '%s'", tok);
				if (sp->t) {
					sp->t->mem_total[node] = bytes;
					sp->t->has_mem[node] = bytes > 0;
					sp->t->mem_allowed[node] = 1;
				}
				sp->p += str_len(tok);
			} else {
				char tok[40];
				sp->field = NULL;
				return sp_fail(sp, fat, "unknown field '%s' (expected cpus=, ncpus= or mem=)",
					       token(sp->p, tok, sizeof tok));
			}
			sp->field = NULL;
			if (*sp->p && !is_space(*sp->p) && *sp->p != ',' && *sp->p != ';') {
				char tok[40];
				sp->field = fname;
				return sp_fail(sp, sp->p, "unexpected '%s' after the value", token(sp->p, tok, sizeof tok));
			}
		}
		if (!have_mem) {
			sp->field = "mem";
			return sp_fail(sp, sp->p, "missing (every node needs mem=SIZE; mem=0 for a memoryless node)");
		}
	}
	sp->node = -1;
	return 0;
}

/* Distance value at the cursor: 10 on the diagonal, 11-255 off it. */
static int parse_dist_value(spec_parse_t *sp, int from, int to)
{
	long d;
	const char *at = sp->p;
	int n = parse_uint(sp->p, 255, &d);
	if (n == 0) {
		char tok[40];
		return sp_fail(sp, at, "expected a distance, got '%s'", token(sp->p, tok, sizeof tok));
	}
	sp->p += n;
	if (from == to && d != LOCAL_DIST)
		return sp_fail(sp, at, "node %d to itself must be %d, not %ld", from, LOCAL_DIST, d);
	if (from != to && (d <= LOCAL_DIST || d > 255))
		return sp_fail(sp, at, "%d to %d: %ld out of range (remote distances are 11-255)", from, to, d);
	if (sp->t)
		sp->t->dist[(size_t)from * (size_t)sp->t->pub.node_limit + (size_t)to] = (uint8_t)d;
	return 0;
}

/* A node id that must name a defined node (checked in the second pass,
 * when all nodes are known). */
static int parse_dist_node(spec_parse_t *sp, long *out)
{
	const char *at = sp->p;
	int n = parse_uint(sp->p, ND_MAX_NODES - 1, out);
	if (n == 0) {
		char tok[40];
		return sp_fail(sp, at, "expected a node id, got '%s'", token(sp->p, tok, sizeof tok));
	}
	if (*out >= ND_MAX_NODES || (sp->t && (*out >= sp->t->pub.node_limit || !sp->t->online[*out])))
		return sp_fail(sp, at, "node %ld is not defined", *out);
	sp->p += n;
	return 0;
}

static int parse_distance_clause(spec_parse_t *sp)
{
	sp->field = "distance";
	skip_ws(sp);
	if (*sp->p != ':' && *sp->p != '=')
		return sp_fail(sp, sp->p, "expected ':' after 'distance'");
	sp->p++;
	skip_ws(sp);
	/* Pairs if the clause has an '=', else a matrix. */
	bool pairs = false;
	for (const char *q = sp->p; *q && *q != ';'; q++)
		if (*q == '=')
			pairs = true;
	if (pairs) {
		for (;;) {
			while (is_space(*sp->p) || *sp->p == ',')
				sp->p++;
			if (*sp->p == '\0' || *sp->p == ';')
				break;
			long a, b;
			if (parse_dist_node(sp, &a))
				return -1;
			char op = *sp->p;
			if (op != '-' && op != '>')
				return sp_fail(sp, sp->p, "expected '-' (both ways) or '>' (one way) between nodes");
			sp->p++;
			if (parse_dist_node(sp, &b))
				return -1;
			if (*sp->p != '=')
				return sp_fail(sp, sp->p, "expected '=' and a distance after %ld%c%ld", a, op, b);
			sp->p++;
			const char *v = sp->p;
			if (parse_dist_value(sp, (int)a, (int)b))
				return -1;
			if (op == '-') {
				sp->p = v;
				if (parse_dist_value(sp, (int)b, (int)a))
					return -1;
			}
		}
	} else {
		/* Rows and columns in ascending node id; the node set is only
		 * known in the second pass, so the first just checks syntax. */
		int nodes[ND_MAX_NODES];
		int count = 0;
		if (sp->t)
			for (int n = 0; n < sp->t->pub.node_limit; n++)
				if (sp->t->online[n])
					nodes[count++] = n;
		int row = 0;
		for (;;) {
			int col = 0;
			for (;;) {
				while (is_space(*sp->p) || *sp->p == ',')
					sp->p++;
				if (*sp->p == '/' || *sp->p == ';' || *sp->p == '\0')
					break;
				if (sp->t && (row >= count || col >= count))
					return sp_fail(sp, sp->p, row >= count ? "more rows than the %d nodes" : "row %d has more than %d columns", row >= count ? count : row + 1, count);
				if (sp->t) {
					if (parse_dist_value(sp, nodes[row], nodes[col]))
						return -1;
				} else {
					long d;
					int n = parse_uint(sp->p, 255, &d);
					char tok[40];
					if (n == 0)
						return sp_fail(sp, sp->p, "expected a distance, got '%s'", token(sp->p, tok, sizeof tok));
					if (sp->p[n] == '-' || sp->p[n] == '>')
						return sp_fail(sp, sp->p, "pair '%s' needs '=DISTANCE' (e.g. 0-1=20)", token(sp->p, tok, sizeof tok));
					sp->p += n;
				}
				col++;
			}
			if (sp->t && col != count)
				return sp_fail(sp, sp->p, "row %d has %d columns, expected %d (one per node)", row + 1, col, count);
			row++;
			if (*sp->p != '/')
				break;
			sp->p++;
		}
		if (sp->t && row != count)
			return sp_fail(sp, sp->p, "%d rows, expected %d (one per node)", row, count);
	}
	sp->field = NULL;
	return 0;
}

static int spec_pass(spec_parse_t *sp)
{
	sp->p = sp->s;
	sp->node = -1;
	sp->field = NULL;
	sp->max_node = sp->max_cpu = -1;
	sp->next_cpu = 0;
	for (size_t i = 0; i < ND_MAX_NODES / 64; i++)
		sp->nodes_seen[i] = 0;
	for (size_t i = 0; i < MAX_CPUS / 64; i++)
		sp->cpus_seen[i] = 0;
	bool any_distance = false;
	for (;;) {
		skip_ws(sp);
		if (*sp->p == ';') {
			sp->p++;
			continue;
		}
		if (*sp->p == '\0')
			break;
		if (keyword(sp, "distance") || keyword(sp, "dist")) {
			any_distance = true;
			if (!sp->t) {
				/* Syntax only; applied after every node is known. */
				if (parse_distance_clause(sp))
					return -1;
			} else {
				/* Skipped here: see the loop below. */
				while (*sp->p && *sp->p != ';')
					sp->p++;
			}
		} else {
			if (keyword(sp, "node"))
				skip_ws(sp);
			if (parse_node_clause(sp))
				return -1;
		}
		skip_ws(sp);
		if (*sp->p && *sp->p != ';') {
			char tok[40];
			return sp_fail(sp, sp->p, "unexpected '%s' (clauses are separated by ';')", token(sp->p, tok, sizeof tok));
		}
	}
	if (sp->t && any_distance) {
		/* Distance clauses, in order, once all nodes are defined. */
		sp->p = sp->s;
		while (*sp->p) {
			skip_ws(sp);
			if (keyword(sp, "distance") || keyword(sp, "dist")) {
				if (parse_distance_clause(sp))
					return -1;
			}
			while (*sp->p && *sp->p != ';')
				sp->p++;
			if (*sp->p == ';')
				sp->p++;
		}
	}
	sp->node = -1;
	sp->field = NULL;
	if (sp->max_node < 0)
		return sp_fail(sp, sp->p, "no nodes (e.g. \"0: cpus=0-1 mem=1G\")");
	if (sp->max_cpu < 0)
		return sp_fail(sp, sp->p, "no node has CPUs");
	return 0;
}

const _nd_topo_t *_nd_topo_build_spec(const char *spec, char *err, size_t errlen)
{
	if (!spec) {
		set_err(err, errlen, "topology spec: none given");
		return NULL;
	}
	/* ~1.2 KiB of bitmaps: static would not be thread-safe, and the
	 * caller's stack is fine for this size. */
	spec_parse_t sp = { .s = spec, .err = err, .errlen = errlen };
	if (spec_pass(&sp))
		return NULL;
	topo_impl_t *t = topo_alloc(sp.max_node + 1, sp.max_cpu + 1, err, errlen);
	if (!t)
		return NULL;
	t->pub.emulated = true;
	sp.t = t;
	sp.failed = false;
	if (spec_pass(&sp)) {
		topo_free(t);
		return NULL;
	}
	bool any_mem = false;
	for (int n = 0; n < t->pub.node_limit; n++)
		any_mem |= t->has_mem[n] != 0;
	if (!any_mem) {
		set_err(err, errlen, "topology spec: no node has memory (give one node mem=SIZE above 0)");
		topo_free(t);
		return NULL;
	}
	uint8_t used[ND_MAX_NODES];
	build_lists(t, used);
	return &t->pub;
}

/* ---- sysfs -------------------------------------------------------------- */

typedef struct sysfs_read {
	const char *root;
	char *err;
	size_t errlen;
	char path[512];
	char buf[FILE_BUF];
} sysfs_read_t;

/* Reads root/devices/system/<rel> into sr->buf. >= 0 bytes, or negative
 * errno (no message: the caller decides whether the file is optional). */
static long sys_read(sysfs_read_t *sr, const char *rel)
{
	int n = _nd_msg_format(sr->path, sizeof sr->path, "%s/devices/system/%s", sr->root, rel);
	if (n < 0 || (size_t)n >= sizeof sr->path)
		return -36; /* ENAMETOOLONG */
	return _nd_os_read_file(sr->path, sr->buf, sizeof sr->buf);
}

static int sys_fail(sysfs_read_t *sr, const char *what, long e)
{
	if (e < 0)
		set_err(sr->err, sr->errlen, "topology: %s: %s (error %ld)", sr->path, what, -e);
	else
		set_err(sr->err, sr->errlen, "topology: %s: %s", sr->path, what);
	return -1;
}

/* A whole file that is a kernel list (possibly empty). */
static int sys_list(sysfs_read_t *sr, long max, list_fn fn, void *arg)
{
	const char *s = sr->buf;
	while (is_space(*s))
		s++;
	if (*s == '\0')
		return 0;
	const char *why = "";
	int r = walk_list(s, max, fn, arg, &why);
	if (r < 0) {
		/* The file's bytes are never echoed: the tree may be anyone's
		 * (a link to a secret file); the offset locates the fault. */
		char msg[96];
		_nd_msg_format(msg, sizeof msg, "bad list: %s at offset %d", why, (int)(s - sr->buf) + -1 - r);
		return sys_fail(sr, msg, 0);
	}
	s += r;
	while (is_space(*s))
		s++;
	if (*s) {
		char msg[96];
		_nd_msg_format(msg, sizeof msg, "bad list: unexpected text at offset %d", (int)(s - sr->buf));
		return sys_fail(sr, msg, 0);
	}
	return 0;
}

static int bitmap_cb(long id, void *arg, int at)
{
	bit_set(arg, id);
	return 0;
}

struct max_arg {
	long max;
};
static int max_cb(long id, void *arg, int at)
{
	struct max_arg *m = arg;
	if (id > m->max)
		m->max = id;
	return 0;
}

struct node_cpu_arg {
	topo_impl_t *t;
	int node;
};
static int node_cpu_cb(long id, void *arg, int at)
{
	struct node_cpu_arg *a = arg;
	if (a->t->cpu_node[id] < 0)
		a->t->cpu_node[id] = a->node;
	a->t->has_cpu[a->node] = 1;
	return 0;
}

static void nodedir_cb(const char *name, void *arg)
{
	if (name[0] == 'n' && name[1] == 'o' && name[2] == 'd' && name[3] == 'e' && is_digit(name[4])) {
		long id;
		int n = parse_uint(name + 4, ND_MAX_NODES - 1, &id);
		if (name[4 + n] == '\0' && id < ND_MAX_NODES)
			bit_set(arg, id);
	}
}

/* The text after key, where key starts buf or follows the character
 * before (' ' in meminfo's "Node 0 MemTotal:", '\n' in a status file),
 * with blanks skipped; NULL if key is absent. */
static const char *after_key(const char *buf, const char *key, char before)
{
	size_t kl = str_len(key);
	for (const char *s = buf; *s; s++) {
		if (s != buf && s[-1] != before)
			continue;
		size_t i = 0;
		while (i < kl && s[i] == key[i])
			i++;
		if (i < kl)
			continue;
		s += kl;
		while (*s == ' ' || *s == '\t')
			s++;
		return s;
	}
	return NULL;
}

/* "Node 0 MemTotal:  16310880 kB" -> bytes; false if the key is absent. */
static bool meminfo_value(const char *buf, const char *key, uint64_t *out)
{
	const char *s = after_key(buf, key, ' ');
	if (!s)
		return false;
	uint64_t v = 0;
	while (is_digit(*s))
		v = v * 10 + (uint64_t)(*s++ - '0');
	while (*s == ' ')
		s++;
	if (*s == 'k' || *s == 'K')
		v <<= 10;
	*out = v;
	return true;
}

/* Mems_allowed_list from a /proc/<pid>/status-shaped file into mask;
 * false if absent. */
static bool read_mems_allowed(const char *path, char *buf, size_t len, uint64_t *mask)
{
	if (_nd_os_read_file(path, buf, len) < 0)
		return false;
	const char *s = after_key(buf, "Mems_allowed_list:", '\n');
	const char *why;
	return s && walk_list(s, ND_MAX_NODES - 1, bitmap_cb, mask, &why) >= 0;
}

static bool is_real_root(const char *root)
{
	const char *r = "/sys";
	size_t i = 0;
	while (r[i] && root[i] == r[i])
		i++;
	return r[i] == '\0' && (root[i] == '\0' || (root[i] == '/' && root[i + 1] == '\0'));
}

const _nd_topo_t *_nd_topo_build_sysfs(const char *root, char *err, size_t errlen)
{
	if (!root || !*root)
		root = "/sys";
	if (str_len(root) >= sizeof((topo_impl_t *)0)->root) {
		set_err(err, errlen, "topology: sysfs root too long: %.60s...", root);
		return NULL;
	}
	/* ~9 KiB of buffers: on the mapping, not the stack. */
	int e = 0;
	size_t srlen = ND_ALIGN_UP(sizeof(sysfs_read_t) + 2 * (ND_MAX_NODES / 8), ND_PAGE_SIZE);
	sysfs_read_t *sr = _nd_os_mmap(srlen, false, &e);
	if (!sr) {
		set_err(err, errlen, "topology: out of memory reading %s (error %d)", root, -e);
		return NULL;
	}
	uint64_t *nodes = (uint64_t *)(sr + 1);
	uint64_t *mems = nodes + ND_MAX_NODES / 64;
	sr->root = root;
	sr->err = err;
	sr->errlen = errlen;
	topo_impl_t *t = NULL;
	bool real = is_real_root(root);

	/* Pass 1: which nodes, the largest CPU id. */
	long r = sys_read(sr, "node/online");
	if (r >= 0) {
		if (sys_list(sr, ND_MAX_NODES - 1, bitmap_cb, nodes))
			goto fail;
	} else {
		/* Older or partial trees: the nodeN directories. */
		_nd_msg_format(sr->path, sizeof sr->path, "%s/devices/system/node", root);
		int lr = _nd_os_list_dir(sr->path, nodedir_cb, nodes);
		if (lr < 0) {
			sys_fail(sr, "cannot read the node directory", lr);
			goto fail;
		}
	}
	int max_node = -1;
	for (int n = 0; n < ND_MAX_NODES; n++)
		if (bit_get(nodes, n))
			max_node = n;
	if (max_node < 0) {
		sys_fail(sr, "no online node", 0);
		goto fail;
	}
	struct max_arg mc = { -1 }, node_cpus = { -1 };
	if (sys_read(sr, "cpu/possible") >= 0 && sys_list(sr, MAX_CPUS - 1, max_cb, &mc))
		goto fail;
	for (int n = 0; n <= max_node; n++) {
		if (!bit_get(nodes, n))
			continue;
		char rel[48];
		_nd_msg_format(rel, sizeof rel, "node/node%d/cpulist", n);
		r = sys_read(sr, rel);
		if (r < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		if (sys_list(sr, MAX_CPUS - 1, max_cb, &node_cpus))
			goto fail;
	}
	/* Every CPU we run on must fold onto a CPU of some node (cpu_slower
	 * divides by their count): CPUs in cpu/possible alone are not enough. */
	if (node_cpus.max < 0) {
		set_err(err, errlen, "topology: %s: no node has CPUs (no node's cpulist names one%s)", root,
			mc.max >= 0 ? ", though cpu/possible does" : "");
		goto fail;
	}
	if (node_cpus.max > mc.max)
		mc.max = node_cpus.max;

	/* Pass 2: fill a fresh topology. */
	t = topo_alloc(max_node + 1, (int)mc.max + 1, err, errlen);
	if (!t)
		goto fail;
	int L = max_node + 1;
	int ids[ND_MAX_NODES], count = 0;
	for (int n = 0; n < L; n++)
		if (bit_get(nodes, n)) {
			t->online[n] = 1;
			ids[count++] = n;
		}
	for (int i = 0; i < count; i++) {
		int n = ids[i];
		char rel[48];
		_nd_msg_format(rel, sizeof rel, "node/node%d/cpulist", n);
		if ((r = sys_read(sr, rel)) < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		struct node_cpu_arg a = { t, n };
		if (sys_list(sr, t->pub.cpu_limit - 1, node_cpu_cb, &a))
			goto fail;
		_nd_msg_format(rel, sizeof rel, "node/node%d/meminfo", n);
		if ((r = sys_read(sr, rel)) < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		uint64_t v = 0;
		if (!meminfo_value(sr->buf, "MemTotal:", &v)) {
			sys_fail(sr, "no MemTotal line", 0);
			goto fail;
		}
		t->mem_total[n] = v;
		if (meminfo_value(sr->buf, "MemFree:", &v))
			t->free_cache[n] = v;
		/* Distances: one per online node, ascending (node_read_distance). */
		_nd_msg_format(rel, sizeof rel, "node/node%d/distance", n);
		if ((r = sys_read(sr, rel)) < 0) {
			sys_fail(sr, "cannot read", r);
			goto fail;
		}
		const char *s = sr->buf;
		for (int j = 0; j < count; j++) {
			while (*s == ' ' || *s == '\t')
				s++;
			long d;
			int k = parse_uint(s, 255, &d);
			if (k == 0 || d > 255) {
				char msg[80];
				_nd_msg_format(msg, sizeof msg, "expected %d distances (one per online node), entry %d is bad", count, j + 1);
				sys_fail(sr, msg, 0);
				goto fail;
			}
			t->dist[(size_t)n * (size_t)L + (size_t)ids[j]] = (uint8_t)d;
			s += k;
		}
		while (is_space(*s))
			s++;
		if (*s) {
			char msg[80];
			_nd_msg_format(msg, sizeof msg, "more than %d distances (one per online node)", count);
			sys_fail(sr, msg, 0);
			goto fail;
		}
	}
	/* Memory: has_memory if present, else MemTotal > 0. */
	if (sys_read(sr, "node/has_memory") >= 0) {
		uint64_t hm[ND_MAX_NODES / 64] = { 0 };
		if (sys_list(sr, ND_MAX_NODES - 1, bitmap_cb, hm))
			goto fail;
		for (int n = 0; n < L; n++)
			t->has_mem[n] = t->online[n] && bit_get(hm, n);
	} else {
		for (int n = 0; n < L; n++)
			t->has_mem[n] = t->online[n] && t->mem_total[n] > 0;
	}
	/* has_cpu: the kernel's file if present (it agrees with cpulist). */
	if (sys_read(sr, "node/has_cpu") >= 0) {
		uint64_t hc[ND_MAX_NODES / 64] = { 0 };
		if (sys_list(sr, ND_MAX_NODES - 1, bitmap_cb, hc))
			goto fail;
		for (int n = 0; n < L; n++)
			t->has_cpu[n] = t->online[n] && bit_get(hc, n);
	}
	/* Mems_allowed (cpuset): a node outside it has no memory for us. A
	 * fixture tree may carry root/proc/self/status. */
	char spath[300];
	if (real)
		_nd_msg_format(spath, sizeof spath, "/proc/self/status");
	else
		_nd_msg_format(spath, sizeof spath, "%s/proc/self/status", root);
	bool restrict_mems = read_mems_allowed(spath, sr->buf, sizeof sr->buf, mems);
	bool any_mem = false;
	for (int n = 0; n < L; n++) {
		t->mem_allowed[n] = t->online[n] && (!restrict_mems || bit_get(mems, n));
		if (t->has_mem[n] && t->mem_allowed[n])
			any_mem = true;
	}
	if (!any_mem) {
		set_err(err, errlen, "topology: %s: no allowed node has memory%s", root,
			restrict_mems ? " (Mems_allowed_list excludes every memory node)" : "");
		goto fail;
	}
	for (int n = 0; n < L; n++)
		if (!t->mem_allowed[n])
			t->has_mem[n] = 0;
	/* Allowed CPUs: the affinity mask, for the real machine only. */
	uint64_t *aff = (uint64_t *)sr->buf; /* MAX_CPUS bits fit in buf */
	int got = real ? _nd_os_sched_getaffinity(0, MAX_CPUS / 8, aff) : -1;
	for (int c = 0; c < t->pub.cpu_limit; c++) {
		bool ok = t->cpu_node[c] >= 0;
		if (got > 0)
			ok = ok && c < got * 8 && bit_get(aff, c);
		t->cpu_allowed[c] = ok;
	}
	for (int n = 0; n < L; n++)
		t->free_stamp[n] = t->has_mem[n] ? _nd_os_now_ns() : 0;
	{
		size_t i = 0;
		for (; root[i]; i++)
			t->root[i] = root[i];
		t->root[i] = '\0';
	}
	build_lists(t, (uint8_t *)sr->buf);
	_nd_os_munmap(sr, srlen);
	return &t->pub;
fail:
	topo_free(t);
	_nd_os_munmap(sr, srlen);
	return NULL;
}

/* Without NUMA sysfs: one node 0 with every CPU of the affinity mask and
 * MemTotal from /proc/meminfo. */
static const _nd_topo_t *build_flat(char *err, size_t errlen)
{
	uint64_t aff[MAX_CPUS / 64] = { 0 };
	int got = _nd_os_sched_getaffinity(0, sizeof aff, aff);
	int max = 0;
	for (int c = 0; got > 0 && c < got * 8; c++)
		if (bit_get(aff, c))
			max = c;
	topo_impl_t *t = topo_alloc(1, max + 1, err, errlen);
	if (!t)
		return NULL;
	t->online[0] = t->has_mem[0] = t->has_cpu[0] = t->mem_allowed[0] = 1;
	for (int c = 0; c <= max; c++)
		if (got <= 0 || bit_get(aff, c)) {
			t->cpu_node[c] = 0;
			t->cpu_allowed[c] = 1;
		}
	char buf[4096];
	uint64_t v = 0;
	if (_nd_os_read_file("/proc/meminfo", buf, sizeof buf) >= 0 && meminfo_value(buf, "MemTotal:", &v))
		t->mem_total[0] = v;
	uint8_t used[1];
	build_lists(t, used);
	return &t->pub;
}

void _nd_topo_discard(const _nd_topo_t *t)
{
	/* Never the live one: readers may hold its pointers. */
	if (t && t != &boot && (const void *)t != (const void *)__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		topo_free((topo_impl_t *)t);
}

/* ---- the live topology -------------------------------------------------- */

static void publish(topo_impl_t *t)
{
	__atomic_store_n(&fast_topo, t, __ATOMIC_RELEASE);
	/* Emulated: only ids below the dense prefix are emulated CPUs as they
	 * are; real: the same holds for the machine's CPU ids. */
	__atomic_store_n(&fast_dense_limit, t->dense_limit, __ATOMIC_RELEASE);
	__atomic_store_n(&live, t, __ATOMIC_RELEASE);
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
	set_err(err, errlen, "topology: cannot be replaced after the first allocation "
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
	if (_nd_opt_int(ND_OPT_VERBOSE))
		_nd_msg_warn("%s; assuming one node", err);
	const _nd_topo_t *flat = build_flat(err, sizeof err);
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
		if (_nd_os_read_file(path, buf, sizeof buf) >= 0 && meminfo_value(buf, "MemFree:", &v))
			__atomic_store_n(&t->free_cache[node], v, __ATOMIC_RELAXED);
		__atomic_store_n(&t->free_stamp[node], now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&t->free_cache[node], __ATOMIC_RELAXED);
}

uint64_t _nd_topo_node_free(int node)
{
	return _nd_topo_node_free_in(_nd_topo(), node);
}

/* ---- the kernel's watermarks (/proc/zoneinfo) ------------------------------
 * Per zone (docs/arenas.md): "Node N, zone Name" opens it; "pages free",
 * "low", "boost", "protection: (r0, .., rk)" (lowmem reserve against each
 * highest zone: user pages are movable, the last entry) and the zone's
 * file LRU counts ("nr_zone_inactive_file", "nr_zone_active_file") follow.
 * Free pages on the per-CPU lists are left out (counting them, fills in
 * the VM were OOM-killed: they are not all there for the faulting CPU).
 * The file is long (per-CPU lists of every zone), so it is read in pieces
 * and scanned line by line. */

typedef struct zone_scan {
	uint64_t *avail;
	int max;
	int node;               /* node of the open zone, -1 before the first */
	uint64_t free, low, boost, prot, file;
} zone_scan_t;

static void zone_close(zone_scan_t *z)
{
	if (z->node >= 0 && z->node < z->max) {
		uint64_t keep = z->low + z->boost + z->prot, has = z->free + z->file / 2;
		if (has > keep)
			z->avail[z->node] += (has - keep) << ND_PAGE_SHIFT;
	}
	z->node = -1;
	z->free = z->low = z->boost = z->prot = z->file = 0;
}

/* s after leading blanks starts with key followed by a blank: the text
 * after the blanks, else NULL. */
static const char *zone_key(const char *s, const char *key)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t kl = str_len(key);
	for (size_t i = 0; i < kl; i++)
		if (s[i] != key[i])
			return NULL;
	s += kl;
	if (*s != ' ' && *s != '\t')
		return NULL;
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static uint64_t zone_num(const char *s)
{
	uint64_t v = 0;
	while (is_digit(*s))
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v;
}

static void zone_line(zone_scan_t *z, const char *l)
{
	const char *v;
	if (l[0] == 'N' && (v = zone_key(l, "Node"))) {
		zone_close(z);
		z->node = is_digit(*v) ? (int)zone_num(v) : -1;
	} else if (z->node < 0) {
		return;
	} else if ((v = zone_key(l, "pages")) && (v = zone_key(v, "free"))) {
		z->free = zone_num(v);
	} else if ((v = zone_key(l, "low"))) {
		z->low = zone_num(v);
	} else if ((v = zone_key(l, "boost"))) {
		z->boost = zone_num(v);
	} else if ((v = zone_key(l, "protection:"))) {
		/* "(0, 3018, 6218, 6218, 6218)": the last entry */
		for (; *v && *v != ')'; v++)
			if (is_digit(*v)) {
				z->prot = zone_num(v);
				while (is_digit(v[1]))
					v++;
			}
	} else if ((v = zone_key(l, "nr_zone_inactive_file")) || (v = zone_key(l, "nr_zone_active_file"))) {
		z->file += zone_num(v);
	}
}

int _nd_topo_node_avail(uint64_t *avail, int max)
{
	const topo_impl_t *t = __atomic_load_n(&live, __ATOMIC_ACQUIRE);
	if (!t || t->pub.emulated || !(t->root[0] == '/' && t->root[1] == 's' && t->root[2] == 'y' &&
				       t->root[3] == 's' && t->root[4] == '\0'))
		return -1;
	int fd = _nd_os_open("/proc/zoneinfo", 0 /* O_RDONLY */, 0);
	if (fd < 0)
		return -1;
	for (int n = 0; n < max; n++)
		avail[n] = 0;
	zone_scan_t z = { .avail = avail, .max = max, .node = -1 };
	char buf[4096];
	size_t have = 0;
	bool any = false;
	for (;;) {
		long r = _nd_os_read(fd, buf + have, sizeof buf - 1 - have);
		if (r < 0) {
			_nd_os_close(fd);
			return -1;
		}
		have += (size_t)r;
		buf[have] = '\0';
		size_t start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			buf[i] = '\0';
			zone_line(&z, buf + start);
			any = true;
			start = i + 1;
		}
		if (r == 0) {
			if (start < have)
				zone_line(&z, buf + start);
			break;
		}
		if (start == 0 && have == sizeof buf - 1)
			start = have; /* a line longer than the buffer: not ours, drop it */
		for (size_t i = start; i < have; i++)
			buf[i - start] = buf[i];
		have -= start;
	}
	_nd_os_close(fd);
	zone_close(&z);
	return any ? 0 : -1;
}

/* ---- current CPU --------------------------------------------------------- */

/* The thread's rseq area (its record's rseq): NULL = not looked up yet,
 * (void *)1 = none. Without a record yet: looked up every time. */

/* Out of line: rseq unknown or absent, an id beyond the dense prefix, or a
 * real CPU that the emulated topology does not have. */
__attribute__((noinline)) static int cpu_slower(void)
{
	_nd_thread_t *th = _nd_tls;
	struct _nd_rseq_abi *r = th->rseq;
	if (!r) {
		r = _nd_os_rseq_area();
		if (th != &_nd_thread_boot)
			th->rseq = r ? r : (struct _nd_rseq_abi *)1;
	}
	uint32_t c = (uintptr_t)r > 1 ? __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED) : UINT32_MAX;
	if (c == (uint32_t)-2 && th != &_nd_thread_boot) /* RSEQ_CPU_ID_REGISTRATION_FAILED: for good */
		th->rseq = (struct _nd_rseq_abi *)1;
	if (c >= MAX_CPUS) { /* -1 not registered yet, -2 failed, or none */
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
	return cpu_slower();
}

/* ---- public API ---------------------------------------------------------- */

static const _nd_topo_t *pt(void)
{
	_nd_ensure_init();
	return _nd_topo();
}

static bool valid_node(const _nd_topo_t *t, int node)
{
	return node >= 0 && node < t->node_limit && t->online[node];
}

int nd_node_limit(void) { return pt()->node_limit; }
int nd_cpu_limit(void) { return pt()->cpu_limit; }

int nd_node_online(int node)
{
	const _nd_topo_t *t = pt();
	return valid_node(t, node);
}

int nd_node_has_memory(int node)
{
	const _nd_topo_t *t = pt();
	return valid_node(t, node) && t->has_mem[node];
}

int nd_node_has_cpus(int node)
{
	const _nd_topo_t *t = pt();
	return valid_node(t, node) && t->has_cpu[node];
}

int nd_node_distance(int from, int to)
{
	const _nd_topo_t *t = pt();
	if (!valid_node(t, from) || !valid_node(t, to))
		return -1;
	return t->distance[(size_t)from * (size_t)t->node_limit + (size_t)to];
}

uint64_t nd_node_mem_total(int node)
{
	const _nd_topo_t *t = pt();
	return valid_node(t, node) && t->has_mem[node] ? t->mem_total[node] : 0;
}

int nd_node_of_cpu(int cpu)
{
	const _nd_topo_t *t = pt();
	return cpu >= 0 && cpu < t->cpu_limit ? t->cpu_node[cpu] : -1;
}

int nd_mem_node_of_cpu(int cpu)
{
	const _nd_topo_t *t = pt();
	return cpu >= 0 && cpu < t->cpu_limit ? t->cpu_mem_node[cpu] : -1;
}

int nd_fallback_list(int node, int tier, int *out, int max)
{
	const _nd_topo_t *t = pt();
	if (!valid_node(t, node) || max < 0 || (max > 0 && !out))
		return -1;
	const int *l = tier ? t->fallback_tier[node] : t->fallback[node];
	int n = t->fallback_len[node] < max ? t->fallback_len[node] : max;
	for (int i = 0; i < n; i++)
		out[i] = l[i];
	return n;
}

int nd_current_cpu(void)
{
	_nd_ensure_init();
	return _nd_topo_cpu();
}

int nd_topology_emulate(const char *spec, char *err, size_t errlen)
{
	_nd_ensure_init();
	if (err && errlen)
		return _nd_topo_emulate(spec, err, errlen);
	/* No buffer to explain in: say it on the message path. */
	char buf[300];
	int r = _nd_topo_emulate(spec, buf, sizeof buf);
	if (r)
		_nd_msg_error("nd_topology_emulate: %s", buf);
	return r;
}

void nd_emulate_cpu(int cpu)
{
	const _nd_topo_t *t = pt();
	_nd_thread_t *th = _nd_thread_self();
	if (!th)
		return;
	if (cpu < 0) {
		th->cpu_override = -1;
		_nd_thread_invalidate(th); /* the slab layer re-reads the CPU */
		return;
	}
	if (!t->emulated) {
		_nd_msg_warn("nd_emulate_cpu(%d) ignored: the topology is not emulated", cpu);
		return;
	}
	if (cpu >= t->cpu_limit || t->cpu_node[cpu] < 0) {
		_nd_msg_warn("nd_emulate_cpu(%d) ignored: no such CPU in the emulated topology", cpu);
		return;
	}
	th->cpu_override = cpu;
	_nd_thread_invalidate(th);
}
