// SPDX-License-Identifier: MIT
/*
 * Memory policies: node sets, the policy grammar, per-thread and process
 * policies, and the choice of node (first choice and fallback order) for a
 * page-run allocation. See docs/policy.md.
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
static int mask_next(const nd_nodemask_t *m, int from)
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
	int n = from < ND_MAX_NODES ? mask_next(m, from) : -1;
	return n >= 0 ? n : mask_next(m, 0);
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

static bool node_exists(const _nd_topo_t *t, int n)
{
	return n >= 0 && n < t->node_limit && t->online[n];
}

static bool node_has_mem(const _nd_topo_t *t, int n)
{
	return node_exists(t, n) && t->has_mem[n];
}

/* Formats into err with a prefix; tolerates err == NULL. Returns -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		_nd_msg_vformat(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Parses an unsigned decimal in [s, e); -1 if not all digits or too big. */
static long parse_num(const char *s, const char *e)
{
	if (s == e)
		return -1;
	long v = 0;
	for (const char *p = s; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
		if (v > 1000000)
			return -1;
	}
	return v;
}

static const char *find_char(const char *s, const char *e, char c)
{
	for (; s < e; s++)
		if (*s == c)
			return s;
	return NULL;
}

/* Checks that node n may be used for memory; ctx names the string, pos is
 * the 1-based position of the entry that named n. */
static int check_mem_node(const _nd_topo_t *t, long n, const char *ctx, size_t pos, char *err, size_t errlen)
{
	if (n >= ND_MAX_NODES || !node_exists(t, (int)n))
		return fail(err, errlen, "%s: node %ld (at position %zu) does not exist (nodes 0-%d)", ctx, n, pos,
			    t->node_limit - 1);
	if (!t->has_mem[n])
		return fail(err, errlen, "%s: node %ld (at position %zu) has no memory", ctx, n, pos);
	return 0;
}

/* Parses the node range [s, e) ("3" or "1-4") into *lo, *hi. */
static int parse_range(const char *s, const char *e, long *lo, long *hi, const char *ctx, size_t pos, char *err,
		       size_t errlen)
{
	const char *dash = find_char(s, e, '-');
	*lo = parse_num(s, dash ? dash : e);
	*hi = dash ? parse_num(dash + 1, e) : *lo;
	if (*lo < 0 || *hi < 0)
		return fail(err, errlen, "%s: '%.*s' at position %zu is not a node number%s", ctx, (int)(e - s), s, pos,
			    dash ? " or range" : "");
	if (*lo > *hi)
		return fail(err, errlen, "%s: range '%.*s' at position %zu is reversed", ctx, (int)(e - s), s, pos);
	return 0;
}

/*
 * numactl node list in [s, e): "all", "0-3,5", "!1" (all memory nodes but).
 * base: 1-based position of s in the whole string (for messages).
 */
static int mask_parse(const char *s, const char *e, nd_nodemask_t *m, const char *ctx, size_t base, char *err,
		      size_t errlen)
{
	const _nd_topo_t *t = _nd_topo();
	nd_nodemask_zero(m);
	const char *start = s;
	bool invert = false;
	if (s < e && *s == '+')
		return fail(err, errlen, "%s: relative node lists ('+' at position %zu) are not supported", ctx, base);
	if (s < e && *s == '!') {
		invert = true;
		s++;
	}
	if (s == e)
		return fail(err, errlen, "%s: empty node list at position %zu", ctx, base + (size_t)(s - start));
	if (e - s == 3 && s[0] == 'a' && s[1] == 'l' && s[2] == 'l') {
		for (int n = 0; n < t->node_limit; n++)
			if (node_has_mem(t, n))
				nd_nodemask_set(m, n);
	} else {
		while (s <= e) {
			const char *c = find_char(s, e, ',');
			const char *te = c ? c : e;
			size_t pos = base + (size_t)(s - start);
			if (te == s)
				return fail(err, errlen, "%s: empty entry at position %zu", ctx, pos);
			long lo, hi;
			if (parse_range(s, te, &lo, &hi, ctx, pos, err, errlen) != 0)
				return -1;
			for (long n = lo; n <= hi; n++) {
				if (check_mem_node(t, n, ctx, pos, err, errlen) != 0)
					return -1;
				nd_nodemask_set(m, (int)n);
			}
			s = te + 1;
		}
	}
	if (invert) {
		nd_nodemask_t all;
		nd_nodemask_zero(&all);
		for (int n = 0; n < t->node_limit; n++)
			if (node_has_mem(t, n) && !nd_nodemask_isset(m, n))
				nd_nodemask_set(&all, n);
		*m = all;
	}
	if (nd_nodemask_count(m) == 0)
		return fail(err, errlen, "%s: '%.*s' selects no memory node", ctx, (int)(e - start), start);
	return 0;
}

int nd_nodemask_parse(const char *s, nd_nodemask_t *m, char *err, size_t errlen)
{
	if (!s || !m) {
		errno = EINVAL;
		return fail(err, errlen, "node list: missing argument");
	}
	size_t n = 0;
	while (s[n])
		n++;
	/* parsed aside: a failure leaves *m empty, never a part of the list */
	nd_nodemask_t r;
	if (mask_parse(s, s + n, &r, "node list", 1, err, errlen) != 0) {
		nd_nodemask_zero(m);
		errno = EINVAL;
		return -1;
	}
	*m = r;
	return 0;
}

/* "0-3,5": the canonical node list. Returns the length it would have. */
static size_t mask_format(const nd_nodemask_t *m, char *buf, size_t len)
{
	size_t k = 0;
	int n = mask_next(m, 0);
	while (n >= 0) {
		int hi = n;
		while (hi + 1 < ND_MAX_NODES && nd_nodemask_isset(m, hi + 1))
			hi++;
		char tmp[32];
		int w = hi == n ? _nd_msg_format(tmp, sizeof tmp, "%s%d", k ? "," : "", n)
				: _nd_msg_format(tmp, sizeof tmp, "%s%d-%d", k ? "," : "", n, hi);
		for (int i = 0; i < w; i++, k++)
			if (k + 1 < len)
				buf[k] = tmp[i];
		n = hi + 1 < ND_MAX_NODES ? mask_next(m, hi + 1) : -1;
	}
	if (len)
		buf[k < len ? k : len - 1] = '\0';
	return k;
}

/* ---- the policy grammar ------------------------------------------------ */

#define MAX_GRAN_SHIFT 18 /* 4096 << 18 = 1 GiB */

static const struct {
	const char *name;
	nd_policy_mode_t mode;
} mode_names[] = {
	{ "default", ND_POLICY_DEFAULT },
	{ "local", ND_POLICY_LOCAL },
	{ "preferred", ND_POLICY_PREFERRED },
	{ "preferred-many", ND_POLICY_PREFERRED_MANY },
	{ "bind", ND_POLICY_BIND },
	{ "interleave", ND_POLICY_INTERLEAVE },
	{ "weighted", ND_POLICY_WEIGHTED },
};
#define N_MODES (sizeof mode_names / sizeof mode_names[0])

static bool span_eq(const char *s, const char *e, const char *lit)
{
	for (; s < e && *lit; s++, lit++)
		if (*s != *lit)
			return false;
	return s == e && *lit == '\0';
}

static void zero_policy(nd_policy_t *p)
{
	char *c = (char *)p;
	for (size_t i = 0; i < sizeof *p; i++)
		c[i] = 0;
}

int _nd_policy_granularity_shift(uint64_t bytes)
{
	unsigned k = 0;
	while (k < MAX_GRAN_SHIFT && ((uint64_t)ND_PAGE_SIZE << k) < bytes)
		k++;
	return (int)k;
}

/* "@2M" granularity in [s, e) into *shift; exact 4096 << k only. */
static int parse_gran(const char *s, const char *e, unsigned *shift, const char *ctx, size_t pos, char *err,
		      size_t errlen)
{
	char tmp[40];
	size_t n = (size_t)(e - s);
	if (n == 0)
		return fail(err, errlen, "%s: empty granularity after '@' at position %zu", ctx, pos - 1);
	if (n >= sizeof tmp)
		return fail(err, errlen, "%s: granularity '%.*s' at position %zu is not a size", ctx, (int)n, s, pos);
	for (size_t i = 0; i < n; i++)
		tmp[i] = s[i];
	tmp[n] = '\0';
	uint64_t v;
	if (_nd_opt_parse_size(tmp, &v) != 0)
		return fail(err, errlen, "%s: granularity '%s' at position %zu is not a size (e.g. 4K, 64K, 2M)", ctx, tmp,
			    pos);
	for (unsigned k = 0; k <= MAX_GRAN_SHIFT; k++) {
		if (((uint64_t)ND_PAGE_SIZE << k) == v) {
			*shift = k;
			return 0;
		}
	}
	return fail(err, errlen, "%s: granularity '%s' at position %zu must be 4K times a power of two, at most 1G", ctx,
		    tmp, pos);
}

/* weighted list "0=3,1-2=1,4" (no "=w" means weight 1) in [s, e). */
static int parse_weights(const char *s, const char *e, nd_policy_t *p, const char *ctx, size_t base, char *err,
			 size_t errlen)
{
	const _nd_topo_t *t = _nd_topo();
	const char *start = s;
	if (s == e)
		return fail(err, errlen, "%s: empty node list at position %zu", ctx, base);
	while (s <= e) {
		const char *c = find_char(s, e, ',');
		const char *te = c ? c : e;
		size_t pos = base + (size_t)(s - start);
		if (te == s)
			return fail(err, errlen, "%s: empty entry at position %zu", ctx, pos);
		const char *eq = find_char(s, te, '=');
		long lo, hi, w = 1;
		if (parse_range(s, eq ? eq : te, &lo, &hi, ctx, pos, err, errlen) != 0)
			return -1;
		if (eq) {
			w = parse_num(eq + 1, te);
			if (w < 1 || w > 255)
				return fail(err, errlen, "%s: weight '%.*s' at position %zu is not a number 1-255", ctx,
					    (int)(te - eq - 1), eq + 1, base + (size_t)(eq + 1 - start));
		}
		for (long n = lo; n <= hi; n++) {
			if (check_mem_node(t, n, ctx, pos, err, errlen) != 0)
				return -1;
			if (p->weights[n])
				return fail(err, errlen, "%s: node %ld given twice (at position %zu)", ctx, n, pos);
			p->weights[n] = (uint8_t)w;
			nd_nodemask_set(&p->nodes, (int)n);
		}
		s = te + 1;
	}
	return 0;
}

int nd_policy_parse(const char *s, nd_policy_t *out, char *err, size_t errlen)
{
	if (!s || !out)
		return fail(err, errlen, "policy: missing argument");
	size_t len = 0;
	while (s[len])
		len++;
	char ctx[96]; /* names the string in every message (long ones cut) */
	_nd_msg_format(ctx, sizeof ctx, len > 64 ? "policy '%.60s...'" : "policy '%s'", s);
	nd_policy_t p;
	zero_policy(&p);
	const char *e = s + len;
	/* "+tier" suffix */
	static const char tier[] = "+tier";
	if (len >= sizeof tier - 1 && span_eq(e - (sizeof tier - 1), e, tier)) {
		p.flags |= ND_POLICY_F_TIER_ORDER;
		e -= sizeof tier - 1;
	}
	const char *colon = find_char(s, e, ':');
	const char *me = colon ? colon : e;
	unsigned mi = 0;
	while (mi < N_MODES && !span_eq(s, me, mode_names[mi].name))
		mi++;
	if (mi == N_MODES) {
		const char *plus = find_char(s, me, '+');
		if (plus && !colon)
			return fail(err, errlen, "%s: unknown flag '%.*s' at position %zu (only '+tier')", ctx,
				    (int)(e - plus), plus, (size_t)(plus - s) + 1);
		return fail(err, errlen,
			    "%s: unknown mode '%.*s' (local, preferred, preferred-many, bind, interleave, weighted)", ctx,
			    (int)(me - s), s);
	}
	p.mode = mode_names[mi].mode;
	const char *a = colon ? colon + 1 : e; /* argument [a, e) */
	size_t apos = (size_t)(a - s) + 1;
	const char *plus = a < e ? find_char(a + 1, e, '+') : NULL;
	if (plus)
		return fail(err, errlen, "%s: unknown flag '%.*s' at position %zu (only '+tier')", ctx, (int)(e - plus),
			    plus, (size_t)(plus - s) + 1);
	switch (p.mode) {
	case ND_POLICY_DEFAULT:
	case ND_POLICY_LOCAL:
		if (colon)
			return fail(err, errlen, "%s: '%s' takes no node list (':%.*s' at position %zu)", ctx,
				    mode_names[mi].name, (int)(e - a), a, apos - 1);
		break;
	case ND_POLICY_PREFERRED:
	case ND_POLICY_PREFERRED_MANY:
	case ND_POLICY_BIND:
	case ND_POLICY_INTERLEAVE:
	case ND_POLICY_WEIGHTED: {
		if (!colon)
			return fail(err, errlen, "%s: '%s' needs a node list, e.g. '%s:0-1'", ctx, mode_names[mi].name,
				    mode_names[mi].name);
		const char *at = NULL;
		if (p.mode == ND_POLICY_INTERLEAVE || p.mode == ND_POLICY_WEIGHTED) {
			at = find_char(a, e, '@');
			if (at && parse_gran(at + 1, e, &p.granularity_shift, ctx, (size_t)(at + 1 - s) + 1, err, errlen))
				return -1;
		} else if ((at = find_char(a, e, '@')) != NULL) {
			return fail(err, errlen, "%s: granularity '%.*s' at position %zu is only for interleave and weighted",
				    ctx, (int)(e - at), at, (size_t)(at - s) + 1);
		}
		const char *le = at ? at : e;
		if (p.mode == ND_POLICY_WEIGHTED) {
			if (parse_weights(a, le, &p, ctx, apos, err, errlen) != 0)
				return -1;
		} else {
			if (mask_parse(a, le, &p.nodes, ctx, apos, err, errlen) != 0)
				return -1;
			if (p.mode == ND_POLICY_PREFERRED && nd_nodemask_count(&p.nodes) != 1)
				return fail(err, errlen, "%s: preferred takes one node, '%.*s' has %d (use preferred-many)",
					    ctx, (int)(le - a), a, nd_nodemask_count(&p.nodes));
		}
		break;
	}
	}
	*out = p;
	return 0;
}

/* Appends src to buf at *k (snprintf-like truncation). */
static void put(char *buf, size_t len, size_t *k, const char *src)
{
	for (; *src; src++, (*k)++)
		if (*k + 1 < len)
			buf[*k] = *src;
}

int nd_policy_format(const nd_policy_t *p, char *buf, size_t len)
{
	if (!p || (!buf && len) || (unsigned)p->mode > ND_POLICY_WEIGHTED)
		return -1;
	size_t k = 0;
	char tmp[32];
	unsigned mi = 0;
	while (mode_names[mi].mode != p->mode)
		mi++;
	put(buf, len, &k, mode_names[mi].name);
	if (p->mode != ND_POLICY_DEFAULT && p->mode != ND_POLICY_LOCAL) {
		put(buf, len, &k, ":");
		if (p->mode == ND_POLICY_WEIGHTED) {
			bool first = true;
			for (int n = mask_next(&p->nodes, 0); n >= 0; n = mask_next(&p->nodes, n + 1)) {
				_nd_msg_format(tmp, sizeof tmp, "%s%d=%u", first ? "" : ",", n, p->weights[n]);
				put(buf, len, &k, tmp);
				first = false;
			}
		} else {
			/* the node list goes straight into buf at k */
			size_t room = k < len ? len - k : 0;
			k += mask_format(&p->nodes, room ? buf + k : tmp, room ? room : 1);
		}
		if ((p->mode == ND_POLICY_INTERLEAVE || p->mode == ND_POLICY_WEIGHTED) && p->granularity_shift) {
			unsigned s = p->granularity_shift;
			if (s >= 18)
				_nd_msg_format(tmp, sizeof tmp, "@%uG", 1u << (s - 18));
			else if (s >= 8)
				_nd_msg_format(tmp, sizeof tmp, "@%uM", 1u << (s - 8));
			else
				_nd_msg_format(tmp, sizeof tmp, "@%uK", 4u << s);
			put(buf, len, &k, tmp);
		}
	}
	if (p->flags & ND_POLICY_F_TIER_ORDER)
		put(buf, len, &k, "+tier");
	if (len)
		buf[k < len ? k : len - 1] = '\0';
	return (int)k;
}

/*
 * Validates p for use and writes its normal form to *out (unused fields
 * zeroed, the weighted set derived from the weights), so that equal
 * policies compare equal byte for byte. 0, or -1 with err.
 */
static int normalize(const nd_policy_t *p, nd_policy_t *out, char *err, size_t errlen)
{
	const _nd_topo_t *t = _nd_topo();
	if ((unsigned)p->mode > ND_POLICY_WEIGHTED)
		return fail(err, errlen, "policy: unknown mode %d", (int)p->mode);
	if (p->flags & ~ND_POLICY_F_TIER_ORDER)
		return fail(err, errlen, "policy: unknown flags 0x%x", p->flags & ~ND_POLICY_F_TIER_ORDER);
	zero_policy(out);
	out->mode = p->mode;
	out->flags = p->flags;
	if (p->mode == ND_POLICY_DEFAULT || p->mode == ND_POLICY_LOCAL)
		return 0;
	if (p->mode == ND_POLICY_WEIGHTED) {
		bool any_w = false;
		for (int n = 0; n < ND_MAX_NODES; n++)
			any_w |= p->weights[n] != 0;
		for (int n = 0; n < ND_MAX_NODES; n++) {
			uint8_t w = any_w ? p->weights[n] : (uint8_t)nd_nodemask_isset(&p->nodes, n);
			if (w) {
				out->weights[n] = w;
				nd_nodemask_set(&out->nodes, n);
			}
		}
	} else {
		out->nodes = p->nodes;
	}
	int c = nd_nodemask_count(&out->nodes);
	if (c == 0)
		return fail(err, errlen, "policy: empty node set");
	if (p->mode == ND_POLICY_PREFERRED && c != 1)
		return fail(err, errlen, "policy: preferred takes exactly one node (%d given)", c);
	for (int n = mask_next(&out->nodes, 0); n >= 0; n = mask_next(&out->nodes, n + 1)) {
		if (!node_exists(t, n))
			return fail(err, errlen, "policy: node %d does not exist", n);
		if (!t->has_mem[n])
			return fail(err, errlen, "policy: node %d has no memory", n);
	}
	if (p->mode == ND_POLICY_INTERLEAVE || p->mode == ND_POLICY_WEIGHTED) {
		if (p->granularity_shift > MAX_GRAN_SHIFT)
			return fail(err, errlen, "policy: granularity shift %u above %d (1G)", p->granularity_shift,
				    MAX_GRAN_SHIFT);
		out->granularity_shift = p->granularity_shift;
	}
	return 0;
}

/* ---- interned policies ------------------------------------------------- */

#define POOL_CHUNK 32    /* policies per mmap'd chunk (~37 KiB) */
#define POOL_CHUNKS 512  /* at most 16384 distinct policies per process */

/* Protects pool_chunk[] and pool_n. Readers of an interned policy take no
 * lock: entries are written before being published and never change. */
ND_LOCK_DEFINE(pool_lock, ND_RANK_POLICY_POOL);
static nd_policy_t *pool_chunk[POOL_CHUNKS];
static unsigned pool_n;

static const nd_policy_t local_policy = { .mode = ND_POLICY_LOCAL };

static bool policy_equal(const nd_policy_t *a, const nd_policy_t *b)
{
	if (a->mode != b->mode || a->flags != b->flags || a->granularity_shift != b->granularity_shift ||
	    !mask_equal(&a->nodes, &b->nodes))
		return false;
	if (a->mode == ND_POLICY_WEIGHTED)
		for (int n = mask_next(&a->nodes, 0); n >= 0; n = mask_next(&a->nodes, n + 1))
			if (a->weights[n] != b->weights[n])
				return false;
	return true;
}

/* The interned copy of the normalized p, or NULL (ENOMEM). */
static const nd_policy_t *intern(const nd_policy_t *p)
{
	if (p->mode == ND_POLICY_LOCAL && p->flags == 0)
		return &local_policy;
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
		e = &local_policy;
	if (t != &_nd_thread_boot) { /* no record yet: answer without caching */
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
	if (normalize(p, &n, err, errlen) != 0) {
		errno = EINVAL;
		return NULL;
	}
	const nd_policy_t *r = intern(&n);
	if (!r) {
		fail(err, errlen, "policy: out of memory for policies");
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
		zero_policy(out);
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
	__atomic_add_fetch(&_nd_policy_gen, 2, __ATOMIC_SEQ_CST);
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
	*out = r ? *r : local_policy;
	return 0;
}

int nd_policy_check(const nd_policy_t *p, char *err, size_t errlen)
{
	nd_policy_t n;
	if (!p)
		return fail(err, errlen, "policy: missing argument");
	return normalize(p, &n, err, errlen);
}

int _nd_policy_init(void)
{
	const char *s = _nd_opt_str(ND_OPT_POLICY);
	if (!*s)
		return 0;
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

static int il_choose(const nd_policy_t *p, uint64_t npages)
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
	static _nd_thread_t none; /* no memory for a record: cursor 0 */
	if (!t)
		t = &none;
	uint64_t s = t->spread_cursor;
	t->spread_cursor = s + full_granules;
	if (!partial || !pol)
		return s;
	uint64_t w = 0;
	if (pol->mode == ND_POLICY_INTERLEAVE)
		w = (uint64_t)nd_nodemask_count(&pol->nodes);
	else if (pol->mode == ND_POLICY_WEIGHTED)
		for (int n = mask_next(&pol->nodes, 0); n >= 0; n = mask_next(&pol->nodes, n + 1))
			w += pol->weights[n];
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
		while (mnode + 1 < t->node_limit && !node_has_mem(t, mnode))
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
		if (node_has_mem(t, want_node)) {
			it->want = want_node;
			return want_node;
		}
		return it->want = _nd_policy_next(it);
	}
	switch (mode) {
	case ND_POLICY_PREFERRED: {
		int n = mask_next(&pol->nodes, 0);
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
	case ND_POLICY_PREFERRED_MANY:
	case ND_POLICY_BIND:
		/* the nearest node of the set in the CPU node's order */
		use_list(it, t, cnode, tier);
		return it->want = _nd_policy_next(it);
	case ND_POLICY_DEFAULT:
	case ND_POLICY_LOCAL:
	default:
		/* the CPU's node list (the kernel's zonelist of numa_node_id(),
		 * whose head is the effective memory node) */
		use_list(it, t, cnode, tier);
		if (!it->len)
			use_list(it, t, mnode, tier);
		return it->want = mnode;
	}
}

int _nd_policy_first(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node)
{
	return _nd_policy_first_n(it, pol, want_node, 1);
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
		uint64_t total = 0;
		for (int n = mask_next(&pol->nodes, 0); n >= 0; n = mask_next(&pol->nodes, n + 1))
			total += pol->weights[n];
		if (!total)
			return -1;
		uint64_t r = g % total;
		for (int n = mask_next(&pol->nodes, 0); n >= 0; n = mask_next(&pol->nodes, n + 1)) {
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
