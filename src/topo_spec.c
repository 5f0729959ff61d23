// SPDX-License-Identifier: MIT
/*
 * The topology spec (NODALLOC_TOPOLOGY, nd_topology_emulate): a parser
 * that builds an emulated topology from a string (docs/topology.md).
 * Two passes: the first validates and measures, the second fills a
 * topology of that size; the core (topology.c) then builds its lists.
 */
#include "topo_impl.h"

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
	uint64_t cpus_seen[ND_TOPO_MAX_CPUS / 64];
} spec_parse_t;


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
	_nd_topo_err(sp->err, sp->errlen, "topology spec: %s%s%s%s at column %d", where,
		sp->field ? sp->field : "", sp->field ? ": " : "", what, (int)(at - sp->s) + 1);
	return -1;
}

static void skip_ws(spec_parse_t *sp)
{
	while (_nd_topo_is_space(*sp->p))
		sp->p++;
}

/* Copies the token at the cursor (up to whitespace, ',', ';', '/') for a
 * message. */
static const char *token(const char *p, char *buf, size_t len)
{
	size_t i = 0;
	while (p[i] && !_nd_topo_is_space(p[i]) && p[i] != ';' && p[i] != ',' && p[i] != '/' && i + 1 < len) {
		buf[i] = p[i];
		i++;
	}
	buf[i] = '\0';
	return buf;
}

static bool keyword(spec_parse_t *sp, const char *kw)
{
	size_t n = _nd_strlen(kw);
	for (size_t i = 0; i < n; i++)
		if (_nd_topo_lower(sp->p[i]) != kw[i])
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
	if (_nd_bit_get(sp->cpus_seen, cpu)) {
		if (sp->t && sp->t->cpu_node[cpu] >= 0)
			return sp_fail(sp, at, "CPU %ld is already on node %d", cpu, sp->t->cpu_node[cpu]);
		return sp_fail(sp, at, "CPU %ld is already on another node", cpu);
	}
	_nd_bit_set(sp->cpus_seen, cpu);
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

/* A node's field (cpus/ncpus share *seen): named for messages, once. */
static int field_once(spec_parse_t *sp, const char *name, bool *seen, const char *at, const char *twice)
{
	sp->field = name;
	if (*seen)
		return sp_fail(sp, at, "%s", twice);
	*seen = true;
	return 0;
}

static int parse_node_clause(spec_parse_t *sp)
{
	const char *at = sp->p;
	long first, last;
	int n = _nd_topo_parse_uint(sp->p, ND_MAX_NODES - 1, &first);
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
		n = _nd_topo_parse_uint(sp->p + 1, ND_MAX_NODES - 1, &last);
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
		if (_nd_bit_get(sp->nodes_seen, node))
			return sp_fail(sp, at, "defined twice");
		_nd_bit_set(sp->nodes_seen, node);
		if (node > sp->max_node)
			sp->max_node = (int)node;
		if (sp->t)
			sp->t->online[node] = 1;
		bool have_mem = false, have_cpus = false;
		for (;;) {
			while (_nd_topo_is_space(*sp->p) || *sp->p == ',')
				sp->p++;
			if (*sp->p == '\0' || *sp->p == ';')
				break;
			const char *fat = sp->p;
			const char *fname = NULL;
			if (keyword(sp, "cpus=")) {
				if (field_once(sp, fname = "cpus", &have_cpus, fat, "given twice"))
					return -1;
				struct cpu_arg a = { sp, sp->p };
				const char *why = "";
				int r = _nd_topo_walk_list(sp->p, ND_TOPO_MAX_CPUS - 1, cpu_cb, &a, &why);
				if (sp->failed)
					return -1;
				if (r < 0) {
					char tok[40];
					return sp_fail(sp, sp->p - 1 - r, "%s in '%s' (CPU ids 0-%d)", why,
						       token(sp->p, tok, sizeof tok), ND_TOPO_MAX_CPUS - 1);
				}
				sp->p += r;
			} else if (keyword(sp, "ncpus=")) {
				if (field_once(sp, fname = "ncpus", &have_cpus, fat, "given twice (or with cpus=)"))
					return -1;
				long cnt;
				int k = _nd_topo_parse_uint(sp->p, ND_TOPO_MAX_CPUS, &cnt);
				if (k == 0 || cnt == 0 || cnt > ND_TOPO_MAX_CPUS) {
					char tok[40];
					return sp_fail(sp, sp->p, "bad count '%s' (1-%d)", token(sp->p, tok, sizeof tok), ND_TOPO_MAX_CPUS);
				}
				/* The cnt lowest CPU ids not taken so far. */
				for (long i = 0; i < cnt; i++) {
					while (sp->next_cpu < ND_TOPO_MAX_CPUS && _nd_bit_get(sp->cpus_seen, sp->next_cpu))
						sp->next_cpu++;
					if (sp->next_cpu >= ND_TOPO_MAX_CPUS)
						return sp_fail(sp, sp->p, "more than %d CPUs", ND_TOPO_MAX_CPUS);
					add_cpu(sp, sp->next_cpu, sp->p);
				}
				sp->p += k;
			} else if (keyword(sp, "mem=")) {
				if (field_once(sp, fname = "mem", &have_mem, fat, "given twice"))
					return -1;
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
				sp->p += _nd_strlen(tok);
			} else {
				char tok[40];
				sp->field = NULL;
				return sp_fail(sp, fat, "unknown field '%s' (expected cpus=, ncpus= or mem=)",
					       token(sp->p, tok, sizeof tok));
			}
			sp->field = NULL;
			if (*sp->p && !_nd_topo_is_space(*sp->p) && *sp->p != ',' && *sp->p != ';') {
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
	int n = _nd_topo_parse_uint(sp->p, 255, &d);
	if (n == 0) {
		char tok[40];
		return sp_fail(sp, at, "expected a distance, got '%s'", token(sp->p, tok, sizeof tok));
	}
	sp->p += n;
	if (from == to && d != ND_TOPO_LOCAL_DIST)
		return sp_fail(sp, at, "node %d to itself must be %d, not %ld", from, ND_TOPO_LOCAL_DIST, d);
	if (from != to && (d <= ND_TOPO_LOCAL_DIST || d > 255))
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
	int n = _nd_topo_parse_uint(sp->p, ND_MAX_NODES - 1, out);
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
			while (_nd_topo_is_space(*sp->p) || *sp->p == ',')
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
				while (_nd_topo_is_space(*sp->p) || *sp->p == ',')
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
					int n = _nd_topo_parse_uint(sp->p, 255, &d);
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
	for (size_t i = 0; i < ND_TOPO_MAX_CPUS / 64; i++)
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
		_nd_topo_err(err, errlen, "topology spec: none given");
		return NULL;
	}
	/* ~1.2 KiB of bitmaps: static would not be thread-safe, and the
	 * caller's stack is fine for this size. */
	spec_parse_t sp = { .s = spec, .err = err, .errlen = errlen };
	if (spec_pass(&sp))
		return NULL;
	topo_impl_t *t = _nd_topo_alloc(sp.max_node + 1, sp.max_cpu + 1, err, errlen);
	if (!t)
		return NULL;
	t->pub.emulated = true;
	sp.t = t;
	sp.failed = false;
	if (spec_pass(&sp)) {
		_nd_topo_free(t);
		return NULL;
	}
	bool any_mem = false;
	for (int n = 0; n < t->pub.node_limit; n++)
		any_mem |= t->has_mem[n] != 0;
	if (!any_mem) {
		_nd_topo_err(err, errlen, "topology spec: no node has memory (give one node mem=SIZE above 0)");
		_nd_topo_free(t);
		return NULL;
	}
	uint8_t used[ND_MAX_NODES];
	_nd_topo_build_lists(t, used);
	return &t->pub;
}

