/*
 * Options: one table drives them all. Each row names an option, its kind,
 * default and help; the environment (NODALLOC_<NAME>, name case-insensitive)
 * and _nd_opt_set() fill the values. Unknown NODALLOC_* variables and bad
 * values are reported by name and leave the default in force.
 *
 * Values are read once, at init, before any thread of ours exists; after
 * that the table is read-only, so readers take no lock.
 */
#include "internal.h"

typedef enum { K_BOOL, K_INT, K_SIZE, K_STR } kind_t;

typedef struct opt_row {
	const char *name; /* without the NODALLOC_ prefix, lower case */
	kind_t kind;
	int64_t def;
	const char *def_str;
	const char *help;
} opt_row_t;

static const opt_row_t rows[ND_OPT__COUNT] = {
	[ND_OPT_TOPOLOGY] = { "topology", K_STR, 0, "", "emulated topology spec (docs/topology.md)" },
	[ND_OPT_POLICY] = { "policy", K_STR, 0, "", "process default policy, e.g. interleave:0-3@2M" },
	[ND_OPT_STATS] = { "stats", K_STR, 0, "", "print statistics at exit: 1 (table) or json" },
	[ND_OPT_CHECK] = { "check", K_BOOL, 0, NULL, "full validation of every free" },
	[ND_OPT_VERBOSE] = { "verbose", K_BOOL, 0, NULL, "informational messages" },
	[ND_OPT_TIER_ORDER] = { "tier_order", K_BOOL, 0, NULL, "fall back in tier order, not node order" },
	[ND_OPT_STRICT] = { "strict", K_BOOL, 1, NULL, "bind node memory with MPOL_BIND (0: MPOL_PREFERRED)" },
	[ND_OPT_PURGE] = { "purge", K_STR, 0, "dontneed", "how free memory goes back: dontneed or free" },
	[ND_OPT_PURGE_THRESHOLD] = { "purge_threshold", K_SIZE, 1 << 20, NULL, "free runs this large are returned to the OS" },
	[ND_OPT_ARENA_RESERVE] = { "arena_reserve", K_SIZE, 0, NULL, "virtual space per node (0: from its memory)" },
	[ND_OPT_SYSFS_ROOT] = { "sysfs_root", K_STR, 0, "", "read the topology from this sysfs-shaped tree" },
	[ND_OPT_MSG_FD] = { "msg_fd", K_INT, 2, NULL, "file descriptor for messages" },
	[ND_OPT_STATS_EXPORT] = { "stats_export", K_STR, 0, "", "publish live statistics to this file" },
	[ND_OPT_PERCPU_AREA] = { "percpu_area", K_SIZE, 2 << 20, NULL, "virtual span of each CPU's per-CPU area, a power of two (64K-1G)" },
	[ND_OPT_HUGE_SPREAD] = { "huge_spread", K_BOOL, 1, NULL, "ask for huge pages (MADV_HUGEPAGE) on interleaved runs with granules of 2 MiB or more" },
	[ND_OPT_LARGE_DECAY_MS] = { "large_decay_ms", K_INT, 1000, NULL, "keep freed large runs (>= purge_threshold) this many ms for reuse; 0: return them at once" },
};

#define STR_MAX 512

static struct {
	int64_t ival;
	bool user;
	char sval[STR_MAX];
} vals[ND_OPT__COUNT];

static volatile int opt_state; /* 0 none, 1 parsing, 2 done */

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive match of an option name against s up to len chars;
 * '-' matches '_' so that nodactl can take --purge-threshold. */
static bool name_eq(const char *name, const char *s, size_t len)
{
	size_t i = 0;
	for (; i < len && name[i]; i++) {
		char c = lower(s[i]);
		if (c == '-')
			c = '_';
		if (c != name[i])
			return false;
	}
	return i == len && name[i] == '\0';
}

int _nd_opt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };
	size_t n = 0;
	while (s[n])
		n++;
	for (unsigned i = 0; i < 4; i++) {
		if (name_eq(yes[i], s, n)) {
			*out = true;
			return 0;
		}
		if (name_eq(no[i], s, n)) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

int _nd_opt_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -1;
	uint64_t v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return -1;
	unsigned shift = 0;
	switch (lower(*p)) {
	case '\0': break;
	case 'k': shift = 10; p++; break;
	case 'm': shift = 20; p++; break;
	case 'g': shift = 30; p++; break;
	case 't': shift = 40; p++; break;
	default: return -1;
	}
	if (shift && (lower(*p) == 'b' || lower(*p) == 'i')) { /* 2MB, 2MiB */
		if (lower(*p) == 'i')
			p++;
		if (lower(*p) == 'b')
			p++;
	}
	if (*p != '\0')
		return -1;
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

static int parse_int(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	const char *p = s + neg;
	if (!*p)
		return -1;
	int64_t v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* Store value for row i; on a bad value warn by name and keep the old one. */
static int set_row(int i, const char *value, const char *origin)
{
	const opt_row_t *r = &rows[i];
	switch (r->kind) {
	case K_BOOL: {
		bool b;
		if (_nd_opt_parse_bool(value, &b) != 0) {
			_nd_msg_warn("%s%s: bad value '%s' (expected 1/0, yes/no, on/off)", origin, r->name, value);
			return -1;
		}
		vals[i].ival = b;
		break;
	}
	case K_SIZE: {
		uint64_t v;
		if (_nd_opt_parse_size(value, &v) != 0 || v > INT64_MAX) {
			_nd_msg_warn("%s%s: bad size '%s' (expected a number with optional K, M, G or T)", origin, r->name, value);
			return -1;
		}
		vals[i].ival = (int64_t)v;
		break;
	}
	case K_INT: {
		int64_t v;
		if (parse_int(value, &v) != 0) {
			_nd_msg_warn("%s%s: bad number '%s'", origin, r->name, value);
			return -1;
		}
		vals[i].ival = v;
		break;
	}
	case K_STR: {
		size_t n = 0;
		while (value[n])
			n++;
		if (n >= STR_MAX) {
			_nd_msg_warn("%s%s: value longer than %d characters", origin, r->name, STR_MAX - 1);
			return -1;
		}
		for (size_t k = 0; k <= n; k++)
			vals[i].sval[k] = value[k];
		break;
	}
	}
	vals[i].user = true;
	return 0;
}

static void set_defaults(void)
{
	for (int i = 0; i < ND_OPT__COUNT; i++) {
		vals[i].ival = rows[i].def;
		vals[i].user = false;
		const char *d = rows[i].def_str ? rows[i].def_str : "";
		size_t k = 0;
		for (; d[k] && k < STR_MAX - 1; k++)
			vals[i].sval[k] = d[k];
		vals[i].sval[k] = '\0';
	}
}

static int find_row(const char *name, size_t len)
{
	for (int i = 0; i < ND_OPT__COUNT; i++)
		if (name_eq(rows[i].name, name, len))
			return i;
	return -1;
}

extern char **environ;

static void ensure_defaults(void)
{
	if (opt_state == 0) {
		opt_state = 1;
		set_defaults();
	}
}

void _nd_opt_init(void)
{
	if (opt_state == 2)
		return;
	ensure_defaults();
	static const char prefix[] = "NODALLOC_";
	for (char **e = environ; e && *e; e++) {
		const char *s = *e;
		size_t k = 0;
		while (prefix[k] && lower(s[k]) == lower(prefix[k]))
			k++;
		if (prefix[k])
			continue;
		const char *name = s + k;
		size_t len = 0;
		while (name[len] && name[len] != '=')
			len++;
		if (name[len] != '=')
			continue;
		int i = find_row(name, len);
		if (i < 0 && name_eq("library", name, len))
			continue; /* nodactl's: the library it preloads */
		if (i < 0) {
			_nd_msg_warn("unknown option NODALLOC_%.*s (ignored)", (int)len, name);
			continue;
		}
		/* Values set programmatically before init win over the environment. */
		if (vals[i].user)
			continue;
		set_row(i, name + len + 1, "NODALLOC_");
	}
	opt_state = 2;
}

int _nd_opt_set(const char *name, const char *value)
{
	ensure_defaults();
	size_t len = 0;
	while (name[len])
		len++;
	int i = find_row(name, len);
	if (i < 0) {
		_nd_msg_warn("unknown option '%s'", name);
		return -1;
	}
	return set_row(i, value, "option ");
}

const char *_nd_opt_str(_nd_opt_t o)
{
	if (opt_state == 0)
		return rows[o].def_str ? rows[o].def_str : "";
	return vals[o].sval;
}

int64_t _nd_opt_int(_nd_opt_t o)
{
	if (opt_state == 0)
		return rows[o].def;
	return vals[o].ival;
}

bool _nd_opt_set_by_user(_nd_opt_t o)
{
	return opt_state != 0 && vals[o].user;
}
