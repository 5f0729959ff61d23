// SPDX-License-Identifier: MIT
/*
 * Policies as text and as values: node lists ("0-3,5", "all", "!1"), the
 * policy grammar (docs/policy.md), the canonical format, and the
 * validation every policy passes before use (_nd_policy_normalize).
 * Pure functions of the live topology: no state, no lock.
 */
#include <errno.h>

#include "internal.h"

/* Formats into err with a prefix; tolerates err == NULL. Returns -1. */
int _nd_policy_fail(char *err, size_t errlen, const char *fmt, ...)
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
	if (n >= ND_MAX_NODES || !_nd_topo_valid_node(t, (int)n))
		return _nd_policy_fail(err, errlen, "%s: node %ld (at position %zu) does not exist (nodes 0-%d)", ctx, n, pos,
			    t->node_limit - 1);
	if (!t->has_mem[n])
		return _nd_policy_fail(err, errlen, "%s: node %ld (at position %zu) has no memory", ctx, n, pos);
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
		return _nd_policy_fail(err, errlen, "%s: '%.*s' at position %zu is not a node number%s", ctx, (int)(e - s), s, pos,
			    dash ? " or range" : "");
	if (*lo > *hi)
		return _nd_policy_fail(err, errlen, "%s: range '%.*s' at position %zu is reversed", ctx, (int)(e - s), s, pos);
	return 0;
}

/* A comma list in [s, e) (node lists, weight lists): each entry
 * [s, te) with its 1-based position in the whole string, for messages. */
typedef struct list_walk {
	const _nd_topo_t *t;
	const char *ctx, *start; /* the string's name; where [s, e) begins */
	size_t base;             /* 1-based position of start */
	char *err;
	size_t errlen;
	nd_nodemask_t *mask;     /* node list: the set */
	nd_policy_t *pol;        /* weight list: the policy */
} list_walk_t;
typedef int (*entry_fn)(list_walk_t *w, const char *s, const char *te, size_t pos);

static int each_entry(list_walk_t *w, const char *s, const char *e, entry_fn fn)
{
	while (s <= e) {
		const char *comma = find_char(s, e, ',');
		const char *te = comma ? comma : e;
		size_t pos = w->base + (size_t)(s - w->start);
		if (te == s)
			return _nd_policy_fail(w->err, w->errlen, "%s: empty entry at position %zu", w->ctx, pos);
		if (fn(w, s, te, pos))
			return -1;
		s = te + 1;
	}
	return 0;
}

/* "2" or "0-3": every node must have memory. */
static int mask_entry(list_walk_t *w, const char *s, const char *te, size_t pos)
{
	long lo, hi;
	if (parse_range(s, te, &lo, &hi, w->ctx, pos, w->err, w->errlen) != 0)
		return -1;
	for (long n = lo; n <= hi; n++) {
		if (check_mem_node(w->t, n, w->ctx, pos, w->err, w->errlen) != 0)
			return -1;
		nd_nodemask_set(w->mask, (int)n);
	}
	return 0;
}

/*
 * numactl node list in [s, e): "all", "0-3,5", "!1" (all memory nodes but).
 * base: 1-based position of s in the whole string (for messages). *m is
 * written only on success.
 */
static int mask_parse(const char *s, const char *e, nd_nodemask_t *out, const char *ctx, size_t base, char *err,
		      size_t errlen)
{
	const _nd_topo_t *t = _nd_topo();
	nd_nodemask_t m;
	nd_nodemask_zero(&m);
	const char *start = s;
	bool invert = false;
	if (s < e && *s == '+')
		return _nd_policy_fail(err, errlen, "%s: relative node lists ('+' at position %zu) are not supported", ctx, base);
	if (s < e && *s == '!') {
		invert = true;
		s++;
	}
	if (s == e)
		return _nd_policy_fail(err, errlen, "%s: empty node list at position %zu", ctx, base + (size_t)(s - start));
	if (e - s == 3 && s[0] == 'a' && s[1] == 'l' && s[2] == 'l') {
		for (int n = 0; n < t->node_limit; n++)
			if (_nd_topo_has_mem(t, n))
				nd_nodemask_set(&m, n);
	} else {
		list_walk_t w = { t, ctx, start, base, err, errlen, &m, NULL };
		if (each_entry(&w, s, e, mask_entry))
			return -1;
	}
	if (invert) {
		nd_nodemask_t all;
		nd_nodemask_zero(&all);
		for (int n = 0; n < t->node_limit; n++)
			if (_nd_topo_has_mem(t, n) && !nd_nodemask_isset(&m, n))
				nd_nodemask_set(&all, n);
		m = all;
	}
	if (nd_nodemask_count(&m) == 0)
		return _nd_policy_fail(err, errlen, "%s: '%.*s' selects no memory node", ctx, (int)(e - start), start);
	*out = m;
	return 0;
}

/* A failure leaves *m as it was and says why in err and errno (the
 * caller may pass no buffer: issue 14). */
int nd_nodemask_parse(const char *s, nd_nodemask_t *m, char *err, size_t errlen)
{
	int r = !s || !m ? _nd_policy_fail(err, errlen, "node list: missing argument")
			 : mask_parse(s, s + _nd_strlen(s), m, "node list", 1, err, errlen);
	if (r)
		errno = EINVAL;
	return r;
}

/* "0-3,5": the canonical node list. Returns the length it would have. */
static size_t mask_format(const nd_nodemask_t *m, char *buf, size_t len)
{
	size_t k = 0;
	int n = _nd_policy_mask_next(m, 0);
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
		n = hi + 1 < ND_MAX_NODES ? _nd_policy_mask_next(m, hi + 1) : -1;
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

void _nd_policy_zero(nd_policy_t *p)
{
	char *c = (char *)p;
	for (size_t i = 0; i < sizeof *p; i++)
		c[i] = 0;
}

int _nd_policy_granularity_shift(uint64_t bytes)
{
	for (int k = 0; k <= MAX_GRAN_SHIFT; k++)
		if (((uint64_t)ND_PAGE_SIZE << k) == bytes)
			return k;
	return -1;
}

/* "@2M" granularity in [s, e) into *shift; exact 4096 << k only. */
static int parse_gran(const char *s, const char *e, unsigned *shift, const char *ctx, size_t pos, char *err,
		      size_t errlen)
{
	char tmp[40];
	size_t n = (size_t)(e - s);
	if (n == 0)
		return _nd_policy_fail(err, errlen, "%s: empty granularity after '@' at position %zu", ctx, pos - 1);
	if (n >= sizeof tmp)
		return _nd_policy_fail(err, errlen, "%s: granularity '%.*s' at position %zu is not a size", ctx, (int)n, s, pos);
	for (size_t i = 0; i < n; i++)
		tmp[i] = s[i];
	tmp[n] = '\0';
	uint64_t v;
	if (_nd_opt_parse_size(tmp, &v) != 0)
		return _nd_policy_fail(err, errlen, "%s: granularity '%s' at position %zu is not a size (e.g. 4K, 64K, 2M)", ctx, tmp,
			    pos);
	int k = _nd_policy_granularity_shift(v);
	if (k >= 0) {
		*shift = (unsigned)k;
		return 0;
	}
	return _nd_policy_fail(err, errlen, "%s: granularity '%s' at position %zu must be 4K times a power of two, at most 1G", ctx,
		    tmp, pos);
}

/* "0=3" or "1-2" (weight 1): each node once. */
static int weight_entry(list_walk_t *w, const char *s, const char *te, size_t pos)
{
	const char *eq = find_char(s, te, '=');
	long lo, hi, wt = 1;
	if (parse_range(s, eq ? eq : te, &lo, &hi, w->ctx, pos, w->err, w->errlen) != 0)
		return -1;
	if (eq) {
		wt = parse_num(eq + 1, te);
		if (wt < 1 || wt > 255)
			return _nd_policy_fail(w->err, w->errlen, "%s: weight '%.*s' at position %zu is not a number 1-255",
					       w->ctx, (int)(te - eq - 1), eq + 1, w->base + (size_t)(eq + 1 - w->start));
	}
	for (long n = lo; n <= hi; n++) {
		if (check_mem_node(w->t, n, w->ctx, pos, w->err, w->errlen) != 0)
			return -1;
		if (w->pol->weights[n])
			return _nd_policy_fail(w->err, w->errlen, "%s: node %ld given twice (at position %zu)", w->ctx, n,
					       pos);
		w->pol->weights[n] = (uint8_t)wt;
		nd_nodemask_set(&w->pol->nodes, (int)n);
	}
	return 0;
}

/* weighted list "0=3,1-2=1,4" (no "=w" means weight 1) in [s, e). */
static int parse_weights(const char *s, const char *e, nd_policy_t *p, const char *ctx, size_t base, char *err,
			 size_t errlen)
{
	if (s == e)
		return _nd_policy_fail(err, errlen, "%s: empty node list at position %zu", ctx, base);
	list_walk_t w = { _nd_topo(), ctx, s, base, err, errlen, NULL, p };
	return each_entry(&w, s, e, weight_entry);
}

int nd_policy_parse(const char *s, nd_policy_t *out, char *err, size_t errlen)
{
	if (!s || !out)
		return _nd_policy_fail(err, errlen, "policy: missing argument");
	size_t len = _nd_strlen(s);
	char ctx[96]; /* names the string in every message (long ones cut) */
	_nd_msg_format(ctx, sizeof ctx, len > 64 ? "policy '%.60s...'" : "policy '%s'", s);
	nd_policy_t p;
	_nd_policy_zero(&p);
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
			return _nd_policy_fail(err, errlen, "%s: unknown flag '%.*s' at position %zu (only '+tier')", ctx,
				    (int)(e - plus), plus, (size_t)(plus - s) + 1);
		return _nd_policy_fail(err, errlen,
			    "%s: unknown mode '%.*s' (local, preferred, preferred-many, bind, interleave, weighted)", ctx,
			    (int)(me - s), s);
	}
	p.mode = mode_names[mi].mode;
	const char *a = colon ? colon + 1 : e; /* argument [a, e) */
	size_t apos = (size_t)(a - s) + 1;
	const char *plus = a < e ? find_char(a + 1, e, '+') : NULL;
	if (plus)
		return _nd_policy_fail(err, errlen, "%s: unknown flag '%.*s' at position %zu (only '+tier')", ctx, (int)(e - plus),
			    plus, (size_t)(plus - s) + 1);
	switch (p.mode) {
	case ND_POLICY_DEFAULT:
	case ND_POLICY_LOCAL:
		if (colon)
			return _nd_policy_fail(err, errlen, "%s: '%s' takes no node list (':%.*s' at position %zu)", ctx,
				    mode_names[mi].name, (int)(e - a), a, apos - 1);
		break;
	case ND_POLICY_PREFERRED:
	case ND_POLICY_PREFERRED_MANY:
	case ND_POLICY_BIND:
	case ND_POLICY_INTERLEAVE:
	case ND_POLICY_WEIGHTED: {
		if (!colon)
			return _nd_policy_fail(err, errlen, "%s: '%s' needs a node list, e.g. '%s:0-1'", ctx, mode_names[mi].name,
				    mode_names[mi].name);
		const char *at = NULL;
		if (_nd_policy_spreads(&p)) {
			at = find_char(a, e, '@');
			if (at && parse_gran(at + 1, e, &p.granularity_shift, ctx, (size_t)(at + 1 - s) + 1, err, errlen))
				return -1;
		} else if ((at = find_char(a, e, '@')) != NULL) {
			return _nd_policy_fail(err, errlen, "%s: granularity '%.*s' at position %zu is only for interleave and weighted",
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
				return _nd_policy_fail(err, errlen, "%s: preferred takes one node, '%.*s' has %d (use preferred-many)",
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
			for (int n = _nd_policy_mask_next(&p->nodes, 0); n >= 0; n = _nd_policy_mask_next(&p->nodes, n + 1)) {
				_nd_msg_format(tmp, sizeof tmp, "%s%d=%u", first ? "" : ",", n, p->weights[n]);
				put(buf, len, &k, tmp);
				first = false;
			}
		} else {
			/* the node list goes straight into buf at k */
			size_t room = k < len ? len - k : 0;
			k += mask_format(&p->nodes, room ? buf + k : tmp, room ? room : 1);
		}
		if (_nd_policy_spreads(p) && p->granularity_shift) {
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
int _nd_policy_normalize(const nd_policy_t *p, nd_policy_t *out, char *err, size_t errlen)
{
	const _nd_topo_t *t = _nd_topo();
	if ((unsigned)p->mode > ND_POLICY_WEIGHTED)
		return _nd_policy_fail(err, errlen, "policy: unknown mode %d", (int)p->mode);
	if (p->flags & ~ND_POLICY_F_TIER_ORDER)
		return _nd_policy_fail(err, errlen, "policy: unknown flags 0x%x", p->flags & ~ND_POLICY_F_TIER_ORDER);
	_nd_policy_zero(out);
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
		return _nd_policy_fail(err, errlen, "policy: empty node set");
	if (p->mode == ND_POLICY_PREFERRED && c != 1)
		return _nd_policy_fail(err, errlen, "policy: preferred takes exactly one node (%d given)", c);
	for (int n = _nd_policy_mask_next(&out->nodes, 0); n >= 0; n = _nd_policy_mask_next(&out->nodes, n + 1)) {
		if (!_nd_topo_valid_node(t, n))
			return _nd_policy_fail(err, errlen, "policy: node %d does not exist", n);
		if (!t->has_mem[n])
			return _nd_policy_fail(err, errlen, "policy: node %d has no memory", n);
	}
	if (_nd_policy_spreads(p)) {
		if (p->granularity_shift > MAX_GRAN_SHIFT)
			return _nd_policy_fail(err, errlen, "policy: granularity shift %u above %d (1G)", p->granularity_shift,
				    MAX_GRAN_SHIFT);
		out->granularity_shift = p->granularity_shift;
	}
	return 0;
}


int nd_policy_check(const nd_policy_t *p, char *err, size_t errlen)
{
	nd_policy_t n;
	if (!p)
		return _nd_policy_fail(err, errlen, "policy: missing argument");
	return _nd_policy_normalize(p, &n, err, errlen);
}

