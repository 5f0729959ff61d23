// SPDX-License-Identifier: MIT
/*
 * Distributed large tables: the kernel's alloc_large_system_hash (sizing
 * from mm/mm_init.c, hashdist placement) for programs.
 *
 * A table is one contiguous page run. Spread tables come from the page
 * level's mixed slot, interleaved over the allowed memory nodes with a
 * granule chosen so that every node gets an equal share (max/min <= 1.05)
 * while keeping 2 MiB granules (huge pages) when the table is big enough.
 * Local tables (ND_TABLE_LOCAL, or only one memory node: the kernel's
 * fixup_hashdist) are one run on the caller's memory node.
 *
 * Tables of fewer pages than nodes take one page on each of the next nodes
 * in turn (small_cursor), so that many small tables still add up evenly.
 *
 * State and locks: small_cursor is an atomic hint (no lock). The only lock
 * is nd_table_format's, around its static per-node buffer; under it only
 * lock-free page descriptor lookups happen, so it nests under nothing and
 * nothing nests under it. Allocation and free lock only inside page.c.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define ADAPT_SCALE_BASE ((uint64_t)64 << 30) /* 64 GiB, as in the kernel */
#define ADAPT_SCALE_SHIFT 2                   /* +1 scale per 4x memory */
#define TABLE_MAX_ENTRIES ((uint64_t)1 << 31) /* kernel: 0x80000000 */
#define HUGE_GRANULE_SHIFT (ND_HUGE_SHIFT - ND_PAGE_SHIFT) /* 9: 2 MiB */


/* ---- sizing (pure) ---------------------------------------------------- */

uint64_t _nd_table_size(const nd_table_desc_t *d, uint64_t mem)
{
	uint64_t bucket = d->bucket_size ? d->bucket_size : 1;
	uint64_t pages = mem >> ND_PAGE_SHIFT; /* nr_kernel_pages, nr_all_pages */
	uint64_t n = d->entries;
	unsigned scale = d->scale;

	if (n == 0) {
		/* Round the memory up to a whole MiB (in pages). */
		const uint64_t mib_pages = ((uint64_t)1 << 20) >> ND_PAGE_SHIFT;
		n = ND_ALIGN_UP(pages, mib_pages);
		/* Adaptive scale: past 64 GiB, every 4x of memory adds one to
		 * the scale, so the table only doubles. Not when the caller
		 * set high_limit (as in the kernel). */
		if (d->high_limit == 0) {
			for (uint64_t adapt = ADAPT_SCALE_BASE >> ND_PAGE_SHIFT; adapt < n;
			     adapt <<= ADAPT_SCALE_SHIFT) {
				scale++;
				if (adapt > (UINT64_MAX >> ADAPT_SCALE_SHIFT))
					break;
			}
		}
		/* One bucket per 2^scale bytes. */
		if (scale > ND_PAGE_SHIFT)
			n = scale - ND_PAGE_SHIFT >= 64 ? 0 : n >> (scale - ND_PAGE_SHIFT);
		else if (n > (UINT64_MAX >> (ND_PAGE_SHIFT - scale)))
			n = UINT64_MAX; /* capped below */
		else
			n <<= (ND_PAGE_SHIFT - scale);
		/* At least one page of buckets. */
		if (n <= ND_PAGE_SIZE / bucket && n * bucket < ND_PAGE_SIZE)
			n = ND_PAGE_SIZE / bucket;
	}
	/* Entries above 2^32 end at the 2^31 cap anyway: clamp before
	 * rounding so the rounding cannot overflow. */
	if (n > ((uint64_t)1 << 32))
		n = (uint64_t)1 << 32;
	n = (uint64_t)1 << _nd_log2_ceil(n); /* roundup_pow_of_two */

	/* Cap: high_limit, else 1/16 of memory; never above 2^31 entries. */
	uint64_t max = d->high_limit;
	if (max == 0)
		max = ((pages << ND_PAGE_SHIFT) >> 4) / bucket;
	if (max > TABLE_MAX_ENTRIES)
		max = TABLE_MAX_ENTRIES;
	if (n < d->low_limit)
		n = d->low_limit;
	if (n > max)
		n = max;
	/* The kernel takes ilog2: a limit that is not a power of two rounds
	 * down. Less memory than 16 buckets still gets one entry. */
	return n ? (uint64_t)1 << _nd_log2_floor(n) : 1;
}

/* ---- granularity (pure) ----------------------------------------------- */

void _nd_table_spread_minmax(uint64_t bytes, int nnodes, unsigned shift, uint64_t *min, uint64_t *max)
{
	/* Memory is page-granular: count whole pages. */
	uint64_t total = ND_ALIGN_UP(bytes, (uint64_t)ND_PAGE_SIZE);
	uint64_t g = (uint64_t)ND_PAGE_SIZE << shift;
	uint64_t n = nnodes > 0 ? (uint64_t)nnodes : 1;
	uint64_t full = total / g, rem = total % g;
	uint64_t q = full / n, r = full % n;
	/* Set index k gets q granules, one more if k < r, and the partial
	 * last granule if k == r. Three classes: k < r, k == r, k > r. */
	uint64_t lo = UINT64_MAX, hi = 0, v;
	if (r > 0) {
		v = (q + 1) * g;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	v = q * g + rem; /* k == r (always exists: r < n) */
	lo = v < lo ? v : lo;
	hi = v > hi ? v : hi;
	if (r + 1 < n) {
		v = q * g;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	*min = lo;
	*max = hi;
}

unsigned _nd_table_granule_shift(uint64_t bytes, int nnodes)
{
	unsigned best = 0;
	uint64_t best_lo = 0, best_hi = 1;
	for (int s = HUGE_GRANULE_SHIFT; s >= 0; s--) {
		uint64_t lo, hi;
		_nd_table_spread_minmax(bytes, nnodes, (unsigned)s, &lo, &hi);
		if (lo > 0 && 20 * hi <= 21 * lo) /* max/min <= 1.05 */
			return (unsigned)s;
		/* Remember the most even (hi/lo smallest; empty nodes worst). */
		if (s == HUGE_GRANULE_SHIFT || (lo > 0 && (best_lo == 0 || hi * best_lo < best_hi * lo))) {
			best = (unsigned)s;
			best_lo = lo;
			best_hi = hi;
		}
	}
	return best;
}

/* ---- the retry loop --------------------------------------------------- */

void *_nd_table_try_halving(size_t bucket_size, unsigned *log2qty, _nd_table_try_fn try_alloc, void *ctx)
{
	for (;;) {
		void *p = NULL;
		size_t size = 0;
		/* A size that does not fit in size_t fails like a full node. */
		if (*log2qty < 64 && bucket_size <= (SIZE_MAX >> *log2qty)) {
			size = bucket_size << *log2qty;
			p = try_alloc(size, ctx);
		} else {
			size = SIZE_MAX;
		}
		if (p)
			return p;
		/* As the kernel's "while (!table && size > PAGE_SIZE &&
		 * --log2qty)": a one-entry table is never the retry. */
		if (size <= ND_PAGE_SIZE || *log2qty <= 1)
			return NULL;
		--*log2qty;
	}
}

/* ---- placement -------------------------------------------------------- */

/* Where the next small spread table starts (an index into the memory
 * nodes): tables of fewer pages than nodes take the next nodes in turn,
 * like the kernel's interleave cursor across vmalloc calls, so that many
 * small tables still add up evenly. A hint only: races are harmless. */
static unsigned small_cursor;

typedef struct place {
	bool spread;
	int nnodes;             /* memory nodes the table may use */
	int16_t ids[ND_MAX_NODES]; /* those nodes, ascending */
	int local_node;
	int used;               /* nodes of the last attempt */
	unsigned first_idx;     /* small tables: first index of the last attempt */
	unsigned granule_shift; /* of the last attempt (spread) */
	nd_policy_t pol;
} place_t;

static void *try_place(size_t bytes, void *ctx)
{
	place_t *pl = ctx;
	size_t npages = (bytes + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	if (pl->spread) {
		/* A table of fewer pages than nodes: one page on each of the
		 * next npages nodes (one node: a plain run there). */
		pl->used = pl->nnodes;
		pl->first_idx = 0;
		if (npages < (size_t)pl->nnodes) {
			unsigned at = __atomic_load_n(&small_cursor, __ATOMIC_RELAXED) % (unsigned)pl->nnodes;
			pl->first_idx = at;
			pl->used = (int)npages;
			nd_nodemask_zero(&pl->pol.nodes);
			for (size_t i = 0; i < npages; i++)
				nd_nodemask_set(&pl->pol.nodes, pl->ids[(at + i) % (unsigned)pl->nnodes]);
			if (npages == 1) {
				nd_policy_t one;
				memset(&one, 0, sizeof one);
				one.mode = ND_POLICY_PREFERRED;
				nd_nodemask_set(&one.nodes, pl->ids[at]);
				int got = -1;
				pl->granule_shift = 0;
				return _nd_page_alloc(1, 1, &one, pl->ids[at], &got);
			}
		} else {
			nd_nodemask_zero(&pl->pol.nodes);
			for (int i = 0; i < pl->nnodes; i++)
				nd_nodemask_set(&pl->pol.nodes, pl->ids[i]);
		}
		pl->granule_shift = _nd_table_granule_shift(bytes, pl->used);
		pl->pol.granularity_shift = pl->granule_shift;
		/* Granule g on the g-th node (the layout the granule was chosen
		 * for, _nd_table_spread_minmax): not the thread's spread cursor. */
		return _nd_page_alloc_spread_from(npages, &pl->pol, 0);
	}
	/* Local: align big tables to 2 MiB so they can use huge pages. */
	size_t align = bytes >= ND_HUGE_SIZE ? ND_HUGE_SIZE >> ND_PAGE_SHIFT : 1;
	int got = -1;
	return _nd_page_alloc(npages, align, &pl->pol, pl->local_node, &got);
}

static int bad(const char *name, const char *what)
{
	_nd_msg_api("nd_table_alloc(%s): %s", name ? name : "(unnamed)", what);
	errno = EINVAL;
	return -1;
}

static void copy_name(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

static void emit_report(const nd_table_t *t)
{
	char line[512];
	int n = _nd_msg_format(line, sizeof line, "nodalloc: ");
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	int m = nd_table_format(t, line + n, sizeof line - (size_t)n - 1);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof line - 2)
		len = sizeof line - 2;
	line[len++] = '\n';
	line[len] = '\0';
	_nd_msg_out(_nd_msg_fd(), line);
}

int _nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out)
{
	if (!d || !out) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof *out);
	const char *name = d->name ? d->name : "(unnamed)";
	if (d->bucket_size == 0)
		return bad(name, "bucket_size is 0");
	if (d->flags & ~(ND_TABLE_ZERO | ND_TABLE_LOCAL | ND_TABLE_DISTRIBUTE))
		return bad(name, "unknown bits in flags");
	if ((d->flags & ND_TABLE_LOCAL) && (d->flags & ND_TABLE_DISTRIBUTE))
		return bad(name, "flags ask for both ND_TABLE_LOCAL and ND_TABLE_DISTRIBUTE");
	if (d->entries == 0 && d->scale > 63)
		return bad(name, "scale above 63");
	if (d->low_limit && d->high_limit && d->low_limit > d->high_limit)
		return bad(name, "low_limit is above high_limit");
	if (d->nodes && (d->flags & ND_TABLE_LOCAL))
		return bad(name, "nodes is for spread tables (ND_TABLE_LOCAL places on the caller's node)");

	const _nd_topo_t *topo = _nd_topo();
	/* place_t is ~3.5 KiB: fine on a thread stack. */
	place_t pl;
	memset(&pl, 0, sizeof pl);
	/* Size from every memory node the process may use (as the kernel
	 * does from all memory); spread over those of them in d->nodes. */
	uint64_t mem = 0;
	for (int node = 0; node < topo->node_limit && node < ND_MAX_NODES; node++) {
		if (!topo->has_mem[node] || (topo->mem_allowed && !topo->mem_allowed[node]))
			continue;
		mem += topo->mem_total[node];
		if (!d->nodes || nd_nodemask_isset(d->nodes, node))
			pl.ids[pl.nnodes++] = (int16_t)node;
	}
	if (d->memory)
		mem = d->memory;
	if (d->entries == 0 && mem < ND_PAGE_SIZE)
		return bad(name, "entries is 0 and the memory size is unknown (set entries or memory)");
	if (pl.nnodes == 0) {
		if (d->nodes)
			return bad(name, "nodes holds no node with memory that the process may use");
		errno = ENOMEM;
		return -1;
	}

	/* The kernel's fixup_hashdist: with one memory node, spreading is
	 * pointless (and the mixed slot costs a descriptor walk). */
	pl.spread = !(d->flags & ND_TABLE_LOCAL) && pl.nnodes > 1;
	if (pl.spread) {
		pl.pol.mode = ND_POLICY_INTERLEAVE;
	} else {
		/* The caller's memory node if the table may go there, else
		 * the one node it may use. */
		int cpu = _nd_topo_cpu();
		int node = (cpu >= 0 && cpu < topo->cpu_limit) ? topo->cpu_mem_node[cpu] : -1;
		pl.local_node = pl.ids[0];
		for (int i = 0; i < pl.nnodes; i++)
			if (pl.ids[i] == node)
				pl.local_node = node;
		memset(&pl.pol, 0, sizeof pl.pol);
		pl.pol.mode = ND_POLICY_LOCAL;
	}

	uint64_t wanted = _nd_table_size(d, mem);
	unsigned log2qty = _nd_log2_floor(wanted);
	void *base = _nd_table_try_halving(d->bucket_size, &log2qty, try_place, &pl);
	if (!base) {
		errno = ENOMEM;
		return -1;
	}
	if (pl.spread && pl.used < pl.nnodes)
		__atomic_store_n(&small_cursor, pl.first_idx + (unsigned)pl.used, __ATOMIC_RELAXED);

	out->base = base;
	out->shift = log2qty;
	out->entries = (uint64_t)1 << log2qty;
	ND_ASSERT(out->entries <= wanted, "halving never grows a table");
	out->mask = out->entries - 1;
	out->bytes = d->bucket_size << log2qty;
	out->wanted = wanted;
	out->flags = (d->flags & ND_TABLE_ZERO) | (pl.spread ? ND_TABLE_DISTRIBUTE : ND_TABLE_LOCAL);
	out->granule_shift = pl.spread ? pl.granule_shift : 0;
	copy_name(out->name, sizeof out->name, name);

	_nd_pagedesc_t *pd = _nd_page_desc(base);
	if (pd) {
		pd->use = ND_USE_TABLE;
		pd->user = (uintptr_t)out->bytes;
	}
	if (d->flags & ND_TABLE_ZERO)
		_nd_page_zero(base, out->bytes);

	if (out->entries < wanted)
		_nd_msg_info("%s hash table reduced to %llu entries (wanted %llu): not enough memory", out->name,
			     (unsigned long long)out->entries, (unsigned long long)wanted);
	if (_nd_msg_verbose())
		emit_report(out);
	return 0;
}

void nd_table_free(nd_table_t *t)
{
	if (!t || !t->base)
		return;
	_nd_pagedesc_t *pd = _nd_page_desc(t->base);
	if (!pd || pd->state != ND_PG_RUN || pd->use != ND_USE_TABLE) {
		_nd_msg_api("nd_table_free(%s): %p is not a table from nd_table_alloc", t->name, t->base);
		errno = EINVAL;
		return;
	}
	pd->use = ND_USE_NONE;
	if (_nd_page_free(t->base) != 0) {
		_nd_msg_api("nd_table_free(%s): %p is not a page run", t->name, t->base);
		errno = EINVAL;
		return;
	}
	memset(t, 0, sizeof *t);
}

/* ---- report ----------------------------------------------------------- */

int nd_table_node_bytes(const nd_table_t *t, uint64_t *bytes, int max)
{
	if (!t || !t->base || !bytes || max <= 0) {
		errno = EINVAL;
		return -1;
	}
	int limit = _nd_topo()->node_limit;
	int n = max < limit ? max : limit;
	for (int i = 0; i < max; i++)
		bytes[i] = 0;
	/* One descriptor lookup per page: the truth after page-level
	 * fallback, not what the policy intended. */
	const char *p = t->base;
	for (size_t off = 0; off < t->bytes; off += ND_PAGE_SIZE) {
		int node = _nd_page_node_of(p + off);
		size_t len = t->bytes - off < ND_PAGE_SIZE ? t->bytes - off : ND_PAGE_SIZE;
		if (node >= 0 && node < n)
			bytes[node] += len;
	}
	return n;
}

/* "0-3,5,7-8" into buf from per-node bytes (nodes with bytes > 0). */
static int format_nodes(char *buf, size_t len, const uint64_t *bytes, int n)
{
	int w = 0;
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (!bytes[i])
			continue;
		int j = i;
		while (j + 1 < n && bytes[j + 1])
			j++;
		size_t at = (size_t)w < len ? (size_t)w : len;
		int k = j > i ? _nd_msg_format(buf + at, len - at, "%s%d-%d", w ? "," : "", i, j)
			      : _nd_msg_format(buf + at, len - at, "%s%d", w ? "," : "", i);
		if (k < 0)
			return -1;
		w += k;
		i = j;
	}
	return w;
}

/* nd_table_format's bytes per node: static because ND_MAX_NODES * 8 is too
 * big for the stacks we may run on; serialised by fmt_lock. */
ND_LOCK_DEFINE(fmt_lock, ND_RANK_TABLE_FMT);
static ND_BIG_TABLE uint64_t per_node[ND_MAX_NODES];

int nd_table_format(const nd_table_t *t, char *buf, size_t len)
{
	if (!t || !buf || len == 0) {
		errno = EINVAL;
		return -1;
	}
	if (!t->base)
		return _nd_msg_format(buf, len, "%s hash table: not allocated", t->name);
	_nd_lock(&fmt_lock);
	int n = nd_table_node_bytes(t, per_node, ND_MAX_NODES);
	uint64_t lo = UINT64_MAX, hi = 0;
	int used = 0, only = -1;
	for (int i = 0; i < n; i++) {
		if (!per_node[i])
			continue;
		used++;
		only = i;
		lo = per_node[i] < lo ? per_node[i] : lo;
		hi = per_node[i] > hi ? per_node[i] : hi;
	}
	char nodes[256];
	if (format_nodes(nodes, sizeof nodes, per_node, n < 0 ? 0 : n) < 0)
		nodes[0] = '\0';
	_nd_unlock(&fmt_lock);

	/* Order as the kernel prints it: ilog2(bytes) - PAGE_SHIFT (0 for
	 * tables below a page). */
	unsigned lg = _nd_log2_floor(t->bytes ? t->bytes : 1);
	int order = lg > ND_PAGE_SHIFT ? (int)(lg - ND_PAGE_SHIFT) : 0;
	char where[400];
	if (used == 0)
		_nd_msg_format(where, sizeof where, "node unknown");
	else if (used == 1 && (t->flags & ND_TABLE_LOCAL))
		_nd_msg_format(where, sizeof where, "local on node %d", only);
	else if (used == 1)
		_nd_msg_format(where, sizeof where, "on node %d", only);
	else if (lo == hi)
		_nd_msg_format(where, sizeof where, "spread over nodes %s: %llu bytes each", nodes, (unsigned long long)lo);
	else
		_nd_msg_format(where, sizeof where, "spread over nodes %s: %llu-%llu bytes each", nodes,
			       (unsigned long long)lo, (unsigned long long)hi);
	if (t->entries < t->wanted)
		return _nd_msg_format(buf, len, "%s hash table entries: %llu (order: %d, %llu bytes, %s; reduced from %llu)",
				      t->name, (unsigned long long)t->entries, order, (unsigned long long)t->bytes, where,
				      (unsigned long long)t->wanted);
	return _nd_msg_format(buf, len, "%s hash table entries: %llu (order: %d, %llu bytes, %s)", t->name,
			      (unsigned long long)t->entries, order, (unsigned long long)t->bytes, where);
}
