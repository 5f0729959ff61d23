// SPDX-License-Identifier: MIT
/*
 * Options: one table drives them all. Each row names an option, its kind,
 * default and help; the environment (NODALLOC_<NAME>, name case-insensitive)
 * and _nd_opt_set() fill the values. Unknown NODALLOC_* variables (with
 * the nearest known name) and bad values are reported by name, spelled as
 * users type them (NODALLOC_PURGE_THRESHOLD), and leave the default in
 * force; NODALLOC_ABORT_ON_CONFIG_ERROR=1 makes them fatal instead.
 * NODALLOC_VERBOSE=1 lists every option, its value and its source.
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
	[ND_OPT_PURGE_THRESHOLD] = { "purge_threshold", K_SIZE, 512 << 10, NULL, "free runs this large are returned to the OS" },
	[ND_OPT_ARENA_RESERVE] = { "arena_reserve", K_SIZE, 0, NULL, "virtual space per node (0: from its memory)" },
	[ND_OPT_SYSFS_ROOT] = { "sysfs_root", K_STR, 0, "", "read the topology from this sysfs-shaped tree" },
	[ND_OPT_MSG_FD] = { "msg_fd", K_INT, 2, NULL, "file descriptor for messages" },
	[ND_OPT_STATS_EXPORT] = { "stats_export", K_STR, 0, "", "publish live statistics to this file" },
	[ND_OPT_PERCPU_AREA] = { "percpu_area", K_SIZE, 2 << 20, NULL, "virtual span of each CPU's per-CPU area, a power of two (64K-1G)" },
	[ND_OPT_HUGE_SPREAD] = { "huge_spread", K_BOOL, 1, NULL, "ask for huge pages (MADV_HUGEPAGE) on interleaved runs with granules of 2 MiB or more" },
	[ND_OPT_ABORT_ON_CONFIG_ERROR] = { "abort_on_config_error", K_BOOL, 0, NULL, "a bad option name or value is fatal (abort) instead of a warning" },
	[ND_OPT_LARGE_DECAY_MS] = { "large_decay_ms", K_INT, 1000, NULL, "keep freed large runs (>= purge_threshold) this many ms for reuse; 0: return them at once" },
	[ND_OPT_PURGE_DECAY_MS] = { "purge_decay_ms", K_INT, 1000, NULL, "return free pages of small runs to the OS once free this many ms; 0: only past the dirty limit or on malloc_trim" },
	[ND_OPT_THP] = { "thp", K_STR, 0, "madvise", "transparent huge pages for node memory: never, madvise (big runs, when the system's mode is madvise) or always" },
	[ND_OPT_THP_SLOW_US] = { "thp_slow_us", K_INT, 1500, NULL, "a big run's huge page slower to fault (CPU us): no huge pages for a while; 0: no probe" },
};

/* Longest string value + 1: a 16-node distance matrix spec is ~830
 * characters (docs/topology.md); a longer value is refused by name. */
#define STR_MAX 4096

enum { SRC_DEFAULT, SRC_ENV, SRC_PROGRAM };
/* Arrays, not pointers: no relocation, so not in the relro pages (a row
 * more in rows took them over a page boundary: test_init_footprint). */
static const char src_names[][20] = { "default", "environment", "set by the program" };

/* The values: a compact record per option; a string points at its
 * default (the table's) or at its own buffer in sbuf, which only a set
 * string writes: the defaults touch no page of sbuf (76 KiB of .bss that
 * every process would otherwise fault in at init). */
static struct {
	int64_t ival;
	bool user;
	unsigned char src;
	const char *sval;
} vals[ND_OPT__COUNT];
static ND_BIG_TABLE char sbuf[ND_OPT__COUNT][STR_MAX];

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

/* "NODALLOC_PURGE_THRESHOLD": the variable of row i, as users type it. */
static const char *env_name(int i, char *buf, size_t len)
{
	static const char prefix[] = "NODALLOC_";
	size_t k = 0;
	for (; prefix[k] && k + 1 < len; k++)
		buf[k] = prefix[k];
	for (const char *n = rows[i].name; *n && k + 1 < len; n++, k++)
		buf[k] = (*n >= 'a' && *n <= 'z') ? (char)(*n - 'a' + 'A') : *n;
	buf[k] = '\0';
	return buf;
}

static bool abort_on_error(void);

void _nd_opt_config_error(const char *fmt, ...)
{
	char buf[700];
	va_list ap;
	va_start(ap, fmt);
	_nd_msg_vformat(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (abort_on_error())
		_nd_msg_fatal("%s (NODALLOC_ABORT_ON_CONFIG_ERROR=1)", buf);
	_nd_msg_warn("%s", buf);
}

int _nd_opt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };
	size_t n = _nd_strlen(s);
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
		/* exact: INT64_MAX itself is a number (a "never" decay) */
		if (*p < '0' || *p > '9' || v > (INT64_MAX - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* The message path sits below this file: it learns the options it needs
 * from here (one direction only). */
static void push_down(int i)
{
	if (i == ND_OPT_MSG_FD)
		_nd_msg_set_fd((int)vals[i].ival);
	else if (i == ND_OPT_VERBOSE)
		_nd_msg_set_verbose(vals[i].ival != 0);
}

/* Store value for row i; on a bad value report it by name and keep the
 * old one. origin: "" (environment) or " (set by the program)". */
static int set_row(int i, const char *value, const char *origin, int src)
{
	const opt_row_t *r = &rows[i];
	char name[64];
	env_name(i, name, sizeof name);
	switch (r->kind) {
	case K_BOOL: {
		bool b;
		if (_nd_opt_parse_bool(value, &b) != 0) {
			_nd_opt_config_error("%s%s: bad value '%s' (expected 1/0, yes/no, on/off)", name, origin, value);
			return -1;
		}
		vals[i].ival = b;
		break;
	}
	case K_SIZE: {
		uint64_t v;
		if (_nd_opt_parse_size(value, &v) != 0 || v > INT64_MAX) {
			_nd_opt_config_error("%s%s: bad size '%s' (expected a number with optional K, M, G or T)", name, origin,
					     value);
			return -1;
		}
		vals[i].ival = (int64_t)v;
		break;
	}
	case K_INT: {
		int64_t v;
		if (parse_int(value, &v) != 0) {
			_nd_opt_config_error("%s%s: bad number '%s'", name, origin, value);
			return -1;
		}
		/* a descriptor is an int: a value that would wrap is refused */
		if (i == ND_OPT_MSG_FD && (v < 0 || v > INT32_MAX)) {
			_nd_opt_config_error("%s%s: descriptor %s out of range (0-%d)", name, origin, value, INT32_MAX);
			return -1;
		}
		vals[i].ival = v;
		break;
	}
	case K_STR: {
		size_t n = _nd_strlen(value);
		if (n >= STR_MAX) {
			_nd_opt_config_error("%s%s: value longer than %d characters", name, origin, STR_MAX - 1);
			return -1;
		}
		for (size_t k = 0; k <= n; k++)
			sbuf[i][k] = value[k];
		vals[i].sval = sbuf[i];
		break;
	}
	}
	vals[i].user = true;
	vals[i].src = (unsigned char)src;
	push_down(i);
	return 0;
}

static void set_defaults(void)
{
	for (int i = 0; i < ND_OPT__COUNT; i++) {
		vals[i].ival = rows[i].def;
		vals[i].user = false;
		vals[i].src = SRC_DEFAULT;
		vals[i].sval = rows[i].def_str ? rows[i].def_str : "";
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

/* The environment's NODALLOC_* entries, one at a time: name (without the
 * prefix, len chars) and value. Returns the next position, or NULL. */
static char **next_env(char **e, const char **name, size_t *len, const char **value)
{
	static const char prefix[] = "NODALLOC_";
	for (; e && *e; e++) {
		const char *s = *e;
		size_t k = 0;
		while (prefix[k] && lower(s[k]) == lower(prefix[k]))
			k++;
		if (prefix[k])
			continue;
		const char *n = s + k;
		size_t l = 0;
		while (n[l] && n[l] != '=')
			l++;
		if (n[l] != '=')
			continue;
		*name = n;
		*len = l;
		*value = n + l + 1;
		return e + 1;
	}
	return NULL;
}

/* NODALLOC_ABORT_ON_CONFIG_ERROR, read first: it governs the errors of
 * every other variable, wherever it stands in the environment. */
static bool abort_on_error(void)
{
	if (opt_state == 2 || vals[ND_OPT_ABORT_ON_CONFIG_ERROR].user)
		return vals[ND_OPT_ABORT_ON_CONFIG_ERROR].ival != 0;
	const char *name, *value;
	size_t len;
	for (char **e = environ; (e = next_env(e, &name, &len, &value));) {
		bool on;
		if (name_eq(rows[ND_OPT_ABORT_ON_CONFIG_ERROR].name, name, len))
			return _nd_opt_parse_bool(value, &on) == 0 && on;
	}
	return false;
}

/* Edit distance of a typed name (case-insensitive, '-' = '_') and a known
 * lower-case name; 40 for names of 40 characters or more. */
int _nd_opt_distance(const char *typed, size_t tl, const char *name)
{
	enum { MAXL = 40 };
	size_t nl = _nd_strlen(name);
	if (tl >= MAXL || nl >= MAXL)
		return MAXL;
	int d[MAXL + 1][MAXL + 1];
	for (size_t a = 0; a <= tl; a++)
		d[a][0] = (int)a;
	for (size_t b = 0; b <= nl; b++)
		d[0][b] = (int)b;
	for (size_t a = 1; a <= tl; a++)
		for (size_t b = 1; b <= nl; b++) {
			char c = lower(typed[a - 1]);
			if (c == '-')
				c = '_';
			int best = d[a - 1][b - 1] + (c != name[b - 1]);
			if (d[a - 1][b] + 1 < best)
				best = d[a - 1][b] + 1;
			if (d[a][b - 1] + 1 < best)
				best = d[a][b - 1] + 1;
			d[a][b] = best;
		}
	return d[tl][nl];
}

/* "unknown option NODALLOC_PURGE_TRESHOLD (ignored; did you mean
 * NODALLOC_PURGE_THRESHOLD?)": the nearest name within a third of its
 * length (at least 2 edits). */
static void unknown(const char *typed, size_t len, const char *how)
{
	int best = -1, bd = 0;
	for (int i = 0; i < ND_OPT__COUNT; i++) {
		int d = _nd_opt_distance(typed, len, rows[i].name);
		if (best < 0 || d < bd) {
			best = i;
			bd = d;
		}
	}
	char name[64];
	int limit = (int)len / 3 > 2 ? (int)len / 3 : 2;
	if (best >= 0 && bd <= limit)
		_nd_opt_config_error("unknown option %s%.*s (%s; did you mean %s?)", how, (int)len, typed,
				     "ignored", env_name(best, name, sizeof name));
	else
		_nd_opt_config_error("unknown option %s%.*s (ignored)", how, (int)len, typed);
}

void _nd_opt_init(void)
{
	if (opt_state == 2)
		return;
	ensure_defaults();
	const char *name, *value;
	size_t len;
	/* Secure execution (setuid, setgid, file capabilities: AT_SECURE):
	 * the environment is the caller's, not the program's. Every
	 * NODALLOC_* variable is ignored, silently (a message naming them
	 * would already tell the caller something), as secure_getenv does. */
	char **env = _nd_os_secure() ? NULL : environ;
	for (char **e = env; (e = next_env(e, &name, &len, &value));) {
		int i = find_row(name, len);
		if (i < 0 && name_eq("library", name, len))
			continue; /* nodactl's: the library it preloads */
		if (i < 0) {
			unknown(name, len, "NODALLOC_");
			continue;
		}
		/* Values set programmatically before init win over the environment. */
		if (vals[i].user)
			continue;
		set_row(i, value, "", SRC_ENV);
	}
	opt_state = 2;
	push_down(ND_OPT_MSG_FD);
	push_down(ND_OPT_VERBOSE);
	if (vals[ND_OPT_VERBOSE].ival)
		_nd_opt_print(_nd_msg_fd());
}

int _nd_opt_set(const char *name, const char *value)
{
	ensure_defaults();
	size_t len = _nd_strlen(name);
	int i = find_row(name, len);
	if (i < 0) {
		unknown(name, len, "");
		return -1;
	}
	return set_row(i, value, " (set by the program)", SRC_PROGRAM);
}

/* One line per option: "nodalloc: option NODALLOC_PURGE_THRESHOLD=1M
 * (default): free runs this large are returned to the OS". */
void _nd_opt_print(int fd)
{
	ensure_defaults();
	for (int i = 0; i < ND_OPT__COUNT; i++) {
		char name[64], val[64], line[STR_MAX + 300];
		const char *v = val;
		int64_t x = vals[i].ival;
		switch (rows[i].kind) {
		case K_STR: v = vals[i].sval; break;
		case K_BOOL: v = x ? "1" : "0"; break;
		case K_INT: _nd_msg_format(val, sizeof val, "%lld", (long long)x); break;
		case K_SIZE: {
			static const char units[] = "KMGT";
			int u = -1;
			while (u < 3 && x && (x & 1023) == 0) {
				x >>= 10;
				u++;
			}
			if (u >= 0)
				_nd_msg_format(val, sizeof val, "%lld%c", (long long)x, units[u]);
			else
				_nd_msg_format(val, sizeof val, "%lld", (long long)x);
			break;
		}
		}
		_nd_msg_format(line, sizeof line, "nodalloc: option %s=%s (%s): %s\n", env_name(i, name, sizeof name), v,
			       src_names[vals[i].src], rows[i].help);
		_nd_msg_out(fd, line);
	}
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
