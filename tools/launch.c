// SPDX-License-Identifier: MIT
/*
 * nodactl's launcher: `nodactl [options] [--] program args` runs a program
 * the way numactl does, and more:
 *   - the KERNEL policy of the process (set_mempolicy before exec): stacks,
 *     mmap, shared memory, JIT code and static programs follow it;
 *   - nodalloc's heap policy (NODALLOC_POLICY, libnodalloc.so preloaded),
 *     with what the kernel cannot do: granules, weights, tier order;
 *   - the CPU binding (sched_setaffinity).
 * numactl's command line (docs/numactl.md): getopt_long, so options may be
 * abbreviated and come in any order until the program's name. Option
 * values are resolved after all options are read (so --topology may come
 * last), in command-line order (so `same` means the list just before).
 * Bad arguments exit 1 (numactl's usage exit) with the argument named.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

#define MPOL_F_NUMA_BALANCING_ (1 << 13) /* uapi: with MPOL_BIND, Linux 5.12 */
/* Node and CPU ids handled by the list parser: topology.c's MAX_CPUS
 * (8192, the kernel's largest NR_CPUS on x86-64), above ND_MAX_NODES. */
#define LIST_MAX 8192
/* The longest NODALLOC_* value the library takes (options.c's STR_MAX - 1):
 * a longer one composed here is refused by the option that made it, not
 * left to the program to refuse. */
#define ENV_VALUE_MAX 4095

/* An option as read, resolved in pass 2. */
typedef struct raw_opt {
	int code;
	const char *name; /* as the user would spell it, for messages */
	const char *val;
} raw_opt_t;

typedef struct launch {
	/* nodalloc's policy */
	nd_policy_mode_t mode;  /* ND_POLICY_DEFAULT: none given */
	const char *mode_opt;   /* the option that set it (messages) */
	uint8_t nodes[LIST_MAX];
	const char *granularity;
	const char *weights;
	bool tier;
	/* kernel-only */
	bool balancing, all;
	/* CPU binding: cpus[] valid when bind_opt != NULL */
	const char *bind_opt;
	uint8_t cpus[LIST_MAX];
	/* `same`: the last node list given */
	uint8_t last[LIST_MAX];
	bool have_last;
	/* the rest */
	const char *topology, *stats;
	bool stats_children, check, export_stats, show, dry_run;
} launch_t;

enum {
	O_GRANULARITY = 256, O_WEIGHTS, O_TOPOLOGY, O_TIER, O_STATS, O_STATS_CHILDREN,
	O_CHECK, O_EXPORT, O_DRY_RUN, O_VERSION, O_CPUBIND_OLD, O_SHM_ONLY,
};

static const struct option long_opts[] = {
	{ "interleave", required_argument, NULL, 'i' },
	{ "membind", required_argument, NULL, 'm' },
	{ "preferred", required_argument, NULL, 'p' },
	{ "preferred-many", required_argument, NULL, 'P' },
	{ "localalloc", no_argument, NULL, 'l' },
	{ "cpunodebind", required_argument, NULL, 'N' },
	{ "cpubind", required_argument, NULL, O_CPUBIND_OLD },
	{ "physcpubind", required_argument, NULL, 'C' },
	{ "all", no_argument, NULL, 'a' },
	{ "balancing", no_argument, NULL, 'b' },
	{ "show", no_argument, NULL, 's' },
	{ "hardware", no_argument, NULL, 'H' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ "granularity", required_argument, NULL, O_GRANULARITY },
	{ "weights", required_argument, NULL, O_WEIGHTS },
	{ "topology", required_argument, NULL, O_TOPOLOGY },
	{ "tier-order", no_argument, NULL, O_TIER },
	{ "stats", optional_argument, NULL, O_STATS },
	{ "stats-children", no_argument, NULL, O_STATS_CHILDREN },
	{ "check", no_argument, NULL, O_CHECK },
	{ "export", no_argument, NULL, O_EXPORT },
	{ "dry-run", no_argument, NULL, O_DRY_RUN },
	/* numactl's shared-memory and file policy options: named, refused
	 * (docs/numactl.md) */
	{ "length", required_argument, NULL, O_SHM_ONLY },
	{ "offset", required_argument, NULL, O_SHM_ONLY },
	{ "shmmode", required_argument, NULL, O_SHM_ONLY },
	{ "shmid", required_argument, NULL, O_SHM_ONLY },
	{ "shm", required_argument, NULL, O_SHM_ONLY },
	{ "file", required_argument, NULL, O_SHM_ONLY },
	{ "strict", no_argument, NULL, O_SHM_ONLY },
	{ "huge", no_argument, NULL, O_SHM_ONLY },
	{ "touch", no_argument, NULL, O_SHM_ONLY },
	{ "dump", no_argument, NULL, O_SHM_ONLY },
	{ "dump-nodes", no_argument, NULL, O_SHM_ONLY },
	{ "verify", no_argument, NULL, O_SHM_ONLY },
	{ NULL, 0, NULL, 0 },
};
/* '+': stop at the first word that is not an option (the program); ':'
 * first: a missing value is reported as such. The numactl-only short
 * options (L o M I S f t u T d D V) are refused by name. */
static const char short_opts[] = "+:i:m:p:P:lN:C:absHhc:L:o:M:I:S:f:tuTdDV";

static const char *opt_name(int code)
{
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == code)
			return o->name;
	return "?";
}

/* Strings are sized from their input (nodactl is a tool: it may malloc):
 * no fixed buffer cuts a user's list, path or value. */
static char *xvprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0) {
		fprintf(stderr, "nodactl: out of memory\n");
		exit(1);
	}
	return s;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvprintf(fmt, ap);
	va_end(ap);
	return s;
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "nodactl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'nodactl --help'.\n");
	return 1;
}

/* ---- lists: "1-3,5", "all", "!2", "+0-1" (relative), "!+0" ------------- */

/* ids[0..n) of the entries of set (ascending). */
static int members(const uint8_t *set, int limit, int *ids)
{
	int n = 0;
	for (int i = 0; i < limit; i++)
		if (set[i])
			ids[n++] = i;
	return n;
}

/* "0-3,5": the list of set[0..limit), whole (a fresh string). */
static char *format_list(const uint8_t *set, int limit)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		fprintf(stderr, "nodactl: out of memory\n");
		exit(1);
	}
	bool first = true;
	for (int i = 0; i < limit; i++) {
		if (!set[i])
			continue;
		int j = i;
		while (j + 1 < limit && set[j + 1])
			j++;
		if (j > i)
			fprintf(f, "%s%d-%d", first ? "" : ",", i, j);
		else
			fprintf(f, "%s%d", first ? "" : ",", i);
		first = false;
		i = j;
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "nodactl: out of memory\n");
		exit(1);
	}
	return buf;
}

/*
 * Parses s into out[0..limit): entries of `universe` (the ids a list may
 * name: memory nodes, nodes with CPUs, allowed CPUs). `kind` ("node",
 * "cpu") and `why` ("has no memory") word the errors. "+" numbers the
 * universe's members from 0 (numactl's cpuset-relative lists). 0, or -1
 * with *err a fresh message.
 */
static int parse_list(const char *s, const uint8_t *exists, const uint8_t *universe, int limit, const char *kind,
		      const char *why, uint8_t *out, char **err)
{
	memset(out, 0, LIST_MAX);
	bool invert = false, relative = false;
	const char *p = s;
	if (*p == '!') {
		invert = true;
		p++;
	}
	if (*p == '+') {
		relative = true;
		p++;
	}
	static int ids[LIST_MAX];
	int nmem = members(universe, limit, ids);
	char *have = format_list(universe, limit); /* for the messages */
	if (strcmp(p, "all") == 0) {
		memcpy(out, universe, (size_t)limit);
	} else {
		if (!*p) {
			*err = xprintf("%s list: empty", kind);
			return -1;
		}
		while (*p) {
			const char *start = p;
			char *end;
			errno = 0;
			long a = strtol(p, &end, 10), b;
			if (end == p || *p == '-' || *p == '+') {
				*err = xprintf("%s list: expected a number at '%s'", kind, start);
				return -1;
			}
			b = a;
			p = end;
			if (*p == '-') {
				b = strtol(p + 1, &end, 10);
				if (end == p + 1 || p[1] == '-' || p[1] == '+') {
					*err = xprintf("%s list: expected a number after '-' in '%s'", kind, start);
					return -1;
				}
				p = end;
			}
			/* strtol's clamped LONG_MAX is no id the user typed */
			if (errno == ERANGE || a > INT_MAX || b > INT_MAX) {
				*err = xprintf("%s list: '%.*s' is out of range (%ss %s)", kind, (int)(p - start), start,
					       kind, have);
				return -1;
			}
			if (*p && *p != ',') {
				*err = xprintf("%s list: unexpected '%c' in '%s'", kind, *p, s);
				return -1;
			}
			/* numactl refuses "0," too: an empty entry */
			if (*p == ',' && !*++p) {
				*err = xprintf("%s list: '%s' ends with ','", kind, s);
				return -1;
			}
			if (b < a) {
				*err = xprintf("%s list: range %ld-%ld goes backwards", kind, a, b);
				return -1;
			}
			for (long i = a; i <= b; i++) {
				long id = i;
				if (relative) {
					if (i >= nmem) {
						*err = xprintf("%s list: relative %s +%ld, but only %d are allowed (%ss %s)",
							 kind, kind, i, nmem, kind, have);
						return -1;
					}
					id = ids[i];
				} else if (i >= limit || !exists[i]) {
					*err = xprintf("%s list: %s %ld does not exist (%ss %s)", kind, kind, i, kind, have);
					return -1;
				} else if (!universe[i]) {
					*err = xprintf("%s list: %s %ld %s (%ss %s)", kind, kind, i, why, kind, have);
					return -1;
				}
				out[id] = 1;
			}
		}
	}
	if (invert)
		for (int i = 0; i < limit; i++)
			out[i] = universe[i] && !out[i];
	free(have);
	for (int i = 0; i < limit; i++)
		if (out[i])
			return 0;
	*err = xprintf("%s list: '%s' leaves no %s", kind, s, kind);
	return -1;
}

/* The sets lists are checked against, from the (possibly emulated) topology. */
typedef struct universe {
	int nodes, cpus; /* limits */
	uint8_t node_online[LIST_MAX], node_mem[LIST_MAX], node_cpu[LIST_MAX];
	uint8_t cpu_possible[LIST_MAX], cpu_allowed[LIST_MAX];
} universe_t;

static void universe_of(const _nd_topo_t *t, universe_t *u)
{
	memset(u, 0, sizeof *u);
	u->nodes = t->node_limit < LIST_MAX ? t->node_limit : LIST_MAX;
	u->cpus = t->cpu_limit < LIST_MAX ? t->cpu_limit : LIST_MAX;
	for (int n = 0; n < u->nodes; n++) {
		u->node_online[n] = t->online[n];
		u->node_mem[n] = t->online[n] && t->has_mem[n] && t->mem_allowed[n];
	}
	for (int c = 0; c < u->cpus; c++) {
		int n = t->cpu_node[c];
		u->cpu_possible[c] = n >= 0;
		u->cpu_allowed[c] = n >= 0 && t->cpu_allowed[c];
		if (n >= 0 && n < u->nodes && t->cpu_allowed[c])
			u->node_cpu[n] = 1;
	}
}

/* ---- pass 2: resolving the options -------------------------------------- */

/* A node list option's value into out; `same` repeats the last list. */
static int node_list(launch_t *l, const universe_t *u, const raw_opt_t *r, bool cpu_nodes, uint8_t *out)
{
	char *err;
	if (strcmp(r->val, "same") == 0) {
		if (!l->have_last)
			return usage_error("--%s=same: no node list before it to repeat", r->name);
		memcpy(out, l->last, LIST_MAX);
	} else if (parse_list(r->val, u->node_online, cpu_nodes ? u->node_cpu : u->node_mem, u->nodes, "node",
			      cpu_nodes ? "has no CPUs" : "has no memory", out, &err) != 0) {
		fprintf(stderr, "nodactl: --%s: %s\n", r->name, err);
		return 1;
	}
	memcpy(l->last, out, LIST_MAX);
	l->have_last = true;
	return 0;
}

static int set_policy(launch_t *l, const universe_t *u, const raw_opt_t *r, nd_policy_mode_t mode)
{
	if (l->mode != ND_POLICY_DEFAULT) {
		fprintf(stderr, "nodactl: Conflicting policies: --%s after --%s (give one policy option)\n", r->name,
			l->mode_opt);
		return 1;
	}
	l->mode = mode;
	l->mode_opt = r->name;
	if (mode == ND_POLICY_LOCAL)
		return 0;
	if (node_list(l, u, r, false, l->nodes))
		return 1;
	if (mode == ND_POLICY_PREFERRED) {
		int count = 0;
		for (int i = 0; i < u->nodes; i++)
			count += l->nodes[i];
		if (count != 1)
			return usage_error("--preferred expects one node, got '%s' (--preferred-many takes a set)", r->val);
	}
	return 0;
}

static int resolve(launch_t *l, const raw_opt_t *raw, int nraw, const universe_t *u)
{
	char *err;
	for (int k = 0; k < nraw; k++) {
		const raw_opt_t *r = &raw[k];
		switch (r->code) {
		case 'i': if (set_policy(l, u, r, ND_POLICY_INTERLEAVE)) return 1; break;
		case 'm': if (set_policy(l, u, r, ND_POLICY_BIND)) return 1; break;
		case 'p': if (set_policy(l, u, r, ND_POLICY_PREFERRED)) return 1; break;
		case 'P': if (set_policy(l, u, r, ND_POLICY_PREFERRED_MANY)) return 1; break;
		case 'l': if (set_policy(l, u, r, ND_POLICY_LOCAL)) return 1; break;
		case 'N':
		case O_CPUBIND_OLD: {
			uint8_t nodes[LIST_MAX];
			if (node_list(l, u, r, true, nodes))
				return 1;
			memset(l->cpus, 0, sizeof l->cpus);
			for (int c = 0; c < u->cpus; c++)
				if (u->cpu_allowed[c] && nodes[_nd_topo()->cpu_node[c]])
					l->cpus[c] = 1;
			l->bind_opt = r->name;
			break;
		}
		case 'C':
			if (parse_list(r->val, u->cpu_possible, u->cpu_allowed, u->cpus, "cpu", "is not allowed (cpuset)",
				       l->cpus, &err) != 0) {
				fprintf(stderr, "nodactl: --%s: %s\n", r->name, err);
				return 1;
			}
			l->bind_opt = r->name;
			break;
		default: break;
		}
	}
	return 0;
}

/* ---- the kernel's policy --------------------------------------------------- */

typedef struct kpol {
	int mode;            /* ND_MPOL_*; -1: leave the inherited policy */
	unsigned flags;      /* MPOL_F_NUMA_BALANCING */
	uint64_t mask[LIST_MAX / 64];
	char *what;          /* "bind 1", for --dry-run and notes (NULL: none) */
	char note[300];      /* what was changed to fit this kernel */
} kpol_t;

static const char *mpol_name(int mode)
{
	static const char *const names[] = { "default", "preferred", "bind", "interleave",
					     "local", "preferred-many", "weighted-interleave" };
	return mode >= 0 && mode < 7 ? names[mode] : "unknown";
}

/* The kernel mode closest to nodalloc's policy, and its node mask. */
static void kernel_policy_of(const launch_t *l, const nd_policy_t *p, int limit, kpol_t *k)
{
	memset(k, 0, sizeof *k);
	k->mode = -1;
	if (l->mode == ND_POLICY_DEFAULT && !l->weights)
		return;
	switch (p->mode) {
	case ND_POLICY_LOCAL: k->mode = ND_MPOL_LOCAL; break;
	case ND_POLICY_PREFERRED: k->mode = ND_MPOL_PREFERRED; break;
	case ND_POLICY_PREFERRED_MANY: k->mode = ND_MPOL_PREFERRED_MANY; break;
	case ND_POLICY_BIND: k->mode = ND_MPOL_BIND; break;
	case ND_POLICY_INTERLEAVE: k->mode = ND_MPOL_INTERLEAVE; break;
	case ND_POLICY_WEIGHTED: k->mode = ND_MPOL_WEIGHTED_INTERLEAVE; break;
	default: return;
	}
	uint8_t set[LIST_MAX] = { 0 };
	for (int n = 0; n < limit; n++)
		if (nd_nodemask_isset(&p->nodes, n) || (p->mode == ND_POLICY_WEIGHTED && p->weights[n])) {
			set[n] = 1;
			k->mask[n / 64] |= 1ull << (n % 64);
		}
	if (l->balancing && k->mode == ND_MPOL_BIND)
		k->flags = MPOL_F_NUMA_BALANCING_;
	char *list = format_list(set, limit);
	k->what = xprintf("%s%s%s%s", mpol_name(k->mode), k->mode == ND_MPOL_LOCAL ? "" : " ",
			  k->mode == ND_MPOL_LOCAL ? "" : list, k->flags ? " +balancing" : "");
	free(list);
}

/*
 * set_mempolicy for this process (inherited through exec). Where the
 * kernel lacks the mode (EINVAL), the nearest it has, with a note:
 * preferred-many -> preferred on the set's first node, weighted
 * interleave -> interleave, bind with balancing -> bind.
 */
static int apply_kernel_policy(kpol_t *k, int limit)
{
	if (k->mode < 0)
		return 0;
	int rc = _nd_os_set_mempolicy(k->mode | (int)k->flags, k->mode == ND_MPOL_LOCAL ? NULL : k->mask,
				      (unsigned long)limit);
	if (rc == -EINVAL && k->flags) {
		snprintf(k->note, sizeof k->note, "this kernel has no NUMA balancing for bound memory (Linux 5.12+): --balancing ignored");
		k->flags = 0;
		rc = _nd_os_set_mempolicy(k->mode, k->mask, (unsigned long)limit);
	} else if (rc == -EINVAL && k->mode == ND_MPOL_PREFERRED_MANY) {
		int first = 0;
		while (first < limit && !(k->mask[first / 64] >> (first % 64) & 1))
			first++;
		memset(k->mask, 0, sizeof k->mask);
		k->mask[first / 64] = 1ull << (first % 64);
		k->mode = ND_MPOL_PREFERRED;
		snprintf(k->note, sizeof k->note,
			 "this kernel has no MPOL_PREFERRED_MANY (Linux 5.15+): memory outside the heap prefers node %d", first);
		rc = _nd_os_set_mempolicy(k->mode, k->mask, (unsigned long)limit);
	} else if (rc == -EINVAL && k->mode == ND_MPOL_WEIGHTED_INTERLEAVE) {
		k->mode = ND_MPOL_INTERLEAVE;
		snprintf(k->note, sizeof k->note,
			 "this kernel has no MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+): memory outside the heap is interleaved evenly");
		rc = _nd_os_set_mempolicy(k->mode, k->mask, (unsigned long)limit);
	}
	if (rc != 0) {
		fprintf(stderr, "nodactl: set_mempolicy(%s): %s\n", k->what, strerror(-rc));
		return 1;
	}
	if (k->note[0]) {
		const char *sp = strchr(k->what, ' ');
		char *what = xprintf("%s%s", mpol_name(k->mode), sp ? sp : "");
		free(k->what);
		k->what = what;
	}
	return 0;
}

/* ---- the program ---------------------------------------------------------- */

/* Finds the library next to the nodactl binary, or in ../lib (installed),
 * by its soname first (libnodalloc.so.MAJOR: a runtime-only install has no
 * unversioned .so, which is the development symlink). */
static int find_library(char *out, size_t len)
{
	const char *env = getenv("NODALLOC_LIBRARY");
	if (env && *env) {
		if (strlen(env) >= len) {
			fprintf(stderr, "nodactl: NODALLOC_LIBRARY: path longer than %zu characters\n", len - 1);
			return -1;
		}
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0 || n >= (ssize_t)sizeof exe - 1)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	*slash = '\0';
	static const char *const rel[] = { "/", "/../lib/", "/../lib/x86_64-linux-gnu/", "/../lib64/" };
#define ND_STR_(x) #x
#define ND_STR(x) ND_STR_(x)
	static const char *const names[] = { "libnodalloc.so." ND_STR(ND_VERSION_MAJOR), "libnodalloc.so" };
	for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
		for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
			if ((size_t)snprintf(out, len, "%s%s%s", exe, rel[i], names[j]) < len && access(out, R_OK) == 0)
				return 0;
	return -1;
}

/* execvp's search, to say what would run: the path (a fresh string), or
 * NULL. Whole names only: a name cut to fit could be another file. */
static char *find_program(const char *name)
{
	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? xprintf("%s", name) : NULL;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char *out = xprintf("%.*s%s%s", (int)n, path, n ? "/" : "", name);
		struct stat st;
		if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
			return out;
		free(out);
		path += n + (path[n] == ':');
	}
	return NULL;
}

/* 1: an ELF executable without an interpreter (static: LD_PRELOAD cannot
 * reach it), 0: anything else (dynamic, a script, unreadable). */
static int is_static_elf(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf64_Ehdr eh;
	int result = 0;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
		result = 1;
		for (int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph ||
			    ph.p_type == PT_INTERP) {
				result = 0;
				break;
			}
		}
	}
	close(fd);
	return result;
}

/* "set-user-ID" or "set-group-ID" if exec would run path in secure
 * mode (it changes our effective ids): the dynamic loader then ignores
 * LD_PRELOAD (a path with a '/'), and the library the environment. NULL
 * otherwise. File capabilities are not looked at. */
static const char *secure_exec_of(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return NULL;
	if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
		return "set-user-ID";
	if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getegid())
		return "set-group-ID";
	return NULL;
}

/* The environment the program gets, set or printed: at most one entry
 * per env_add call in nodactl_launch (6). */
typedef struct env_set {
	int n;
	struct { const char *name; const char *value; } e[8];
} env_set_t;

static void env_add(env_set_t *s, const char *name, const char *value)
{
	s->e[s->n].name = name;
	s->e[s->n].value = value;
	s->n++;
}

/* ---- --show ------------------------------------------------------------------ */

/* numactl --show's lines, from the kernel's view of this process (after
 * the options were applied to it), then nodalloc's. */
static void show(const launch_t *l, const env_set_t *env, const kpol_t *k, bool emulated)
{
	const _nd_topo_t *t = _nd_topo();
	int limit = t->node_limit;
	int mode = 0;
	uint64_t mask[LIST_MAX / 64] = { 0 };
	if (_nd_os_get_mempolicy(&mode, mask, LIST_MAX, NULL, 0) != 0)
		mode = 0;
	int flags = mode & ~0xff;
	mode &= 0xff;
	int first = -1;
	for (int n = 0; n < limit && first < 0; n++)
		if (mask[n / 64] >> (n % 64) & 1)
			first = n;
	printf("policy: %s%s\n", mpol_name(mode), flags & MPOL_F_NUMA_BALANCING_ ? " (balancing)" : "");
	switch (mode) {
	case ND_MPOL_PREFERRED:
	case ND_MPOL_BIND: printf("preferred node: %d\n", first); break;
	case ND_MPOL_PREFERRED_MANY: printf("preferred node: %d (preferred-many)\n", first); break;
	case ND_MPOL_INTERLEAVE:
	case ND_MPOL_WEIGHTED_INTERLEAVE: {
		int next = 0;
		if (_nd_os_get_mempolicy(&next, NULL, 0, NULL, 4 /* MPOL_F_NODE */) != 0)
			next = first;
		printf("preferred node: %d (interleave next)\n", next);
		printf("interleavemask: ");
		for (int n = 0; n < limit; n++)
			if (mask[n / 64] >> (n % 64) & 1)
				printf("%d ", n);
		printf("\ninterleavenode: %d\n", next);
		break;
	}
	default: printf("preferred node: current\n"); break;
	}
	uint64_t aff[LIST_MAX / 64] = { 0 };
	int got = _nd_os_sched_getaffinity(0, sizeof aff, aff);
	uint8_t run_nodes[LIST_MAX] = { 0 };
	printf("physcpubind: ");
	for (int c = 0; got > 0 && c < got * 8 && c < LIST_MAX; c++)
		if (aff[c / 64] >> (c % 64) & 1) {
			printf("%d ", c);
			if (c < t->cpu_limit && t->cpu_node[c] >= 0)
				run_nodes[t->cpu_node[c]] = 1;
		}
	printf("\ncpubind: ");
	for (int n = 0; n < limit; n++)
		if (run_nodes[n])
			printf("%d ", n);
	printf("\nnodebind: ");
	for (int n = 0; n < limit; n++)
		if (run_nodes[n])
			printf("%d ", n);
	printf("\nmembind: ");
	for (int n = 0; n < limit; n++)
		if (mode == ND_MPOL_BIND ? (mask[n / 64] >> (n % 64) & 1) : (t->has_mem[n] && t->mem_allowed[n]))
			printf("%d ", n);
	printf("\npreferred: ");
	if (mode != ND_MPOL_DEFAULT && mode != ND_MPOL_LOCAL)
		for (int n = 0; n < limit; n++)
			if (mask[n / 64] >> (n % 64) & 1)
				printf("%d ", n);
	printf("\n");
	/* nodalloc's part */
	const char *pol = NULL;
	for (int i = 0; i < env->n; i++)
		if (strcmp(env->e[i].name, "NODALLOC_POLICY") == 0)
			pol = env->e[i].value;
	if (!pol)
		pol = getenv("NODALLOC_POLICY");
	printf("nodalloc policy: %s\n", pol && *pol ? pol : "local (default)");
	if (emulated)
		printf("nodalloc topology: emulated (%s); the kernel policy is left alone\n",
		       l->topology ? l->topology : getenv("NODALLOC_TOPOLOGY"));
	if (k->note[0])
		printf("nodalloc note: %s\n", k->note);
	for (int i = 0; i < env->n; i++)
		printf("nodalloc environment: %s=%s\n", env->e[i].name, env->e[i].value);
}

/* ---- main ------------------------------------------------------------------ */

static int read_options(int argc, char **argv, raw_opt_t *raw, int *nraw, launch_t *l)
{
	opterr = 0;
	optind = 1;
	int c, idx;
	while ((c = getopt_long(argc, argv, short_opts, long_opts, &idx)) != -1) {
		const char *bad = argv[optind - 1];
		switch (c) {
		case '?':
			/* getopt_long does not say why: unknown, ambiguous, or a
			 * value given to an option that takes none (optopt is then
			 * that option's code, not a character: not for a message) */
			if (bad[0] == '-' && bad[1] == '-') {
				size_t len = strcspn(bad + 2, "=");
				int matches = 0;
				const struct option *match = NULL;
				char *list = xprintf("%s", "");
				for (const struct option *o = long_opts; len && o->name; o++)
					if (strncmp(o->name, bad + 2, len) == 0) {
						if (strlen(o->name) == len) { /* exact: never ambiguous */
							matches = 1;
							match = o;
							break;
						}
						matches++;
						match = o;
						char *more = xprintf("%s '--%s'", list, o->name);
						free(list);
						list = more;
					}
				if (matches > 1) {
					fprintf(stderr, "nodactl: option '%.*s' is ambiguous; possibilities:%s\nTry 'nodactl --help'.\n",
						(int)len + 2, bad, list);
					return 1;
				}
				if (matches == 1 && match->has_arg == no_argument && bad[2 + len] == '=')
					return usage_error("option '--%s' takes no value", match->name);
				return usage_error("unrecognized option '%s'", bad);
			}
			if (optopt > 0 && optopt < 128)
				return usage_error("invalid option '-%s'", (char[]){ (char)optopt, 0 });
			return usage_error("unrecognized option '%s'", bad);
		case ':':
			return usage_error("option '%s' needs a value", bad);
		case 'h':
			nodactl_usage(stdout);
			exit(0);
		case O_SHM_ONLY:
		case 'L': case 'o': case 'M': case 'I': case 'S': case 'f':
		case 't': case 'u': case 'T': case 'd': case 'D': case 'V':
			return usage_error("%s is numactl's policy for shared memory and files, which nodactl does not "
					   "do: use numactl for it (docs/numactl.md)",
					   c == O_SHM_ONLY ? xprintf("--%s", long_opts[idx].name) : xprintf("-%c", c));
		case O_VERSION:
			printf("nodactl (nodalloc) %d.%d\n", ND_VERSION_MAJOR, ND_VERSION_MINOR);
			exit(0);
		case 'H':
			return usage_error("%s", "--hardware is a command of its own: nodactl --hardware [--topology=SPEC]");
		case 'a': l->all = true; break;
		case 'b': l->balancing = true; break;
		case 's': l->show = true; break;
		case O_TIER: l->tier = true; break;
		case O_CHECK: l->check = true; break;
		case O_EXPORT: l->export_stats = true; break;
		case O_DRY_RUN: l->dry_run = true; break;
		case O_STATS_CHILDREN:
			l->stats_children = true;
			if (!l->stats)
				l->stats = "1";
			break;
		case O_STATS:
			if (!optarg || strcmp(optarg, "text") == 0)
				l->stats = "1";
			else if (strcmp(optarg, "json") == 0)
				l->stats = "json";
			else
				return usage_error("--stats takes text or json, got '%s'", optarg);
			break;
		case O_GRANULARITY: {
			uint64_t g;
			if (_nd_opt_parse_size(optarg, &g) != 0 || _nd_policy_granularity_shift(g) < 0)
				return usage_error("--granularity expects a power-of-two size from 4K to 1G (e.g. 2M), got '%s'",
						   optarg);
			l->granularity = optarg;
			break;
		}
		case O_WEIGHTS:
			if (!*optarg)
				return usage_error("%s expects node=weight pairs such as 0=3,1=1", "--weights");
			l->weights = optarg;
			break;
		case O_TOPOLOGY: l->topology = optarg; break;
		default:
			if (c == 'c') /* numactl's old -c: --cpubind, as --cpunodebind */
				c = O_CPUBIND_OLD;
			raw[(*nraw)++] = (raw_opt_t){ c, opt_name(c), optarg };
			if (c == 'C' || c == 'N' || c == O_CPUBIND_OLD || c == 'i' || c == 'm' || c == 'p' || c == 'P')
				if (!optarg || !*optarg)
					return usage_error("--%s expects a list such as 0-3,5 or all", opt_name(c));
			break;
		}
	}
	return 0;
}

int nodactl_launch(int argc, char **argv)
{
	static launch_t l;
	/* At most one per argument. Not malloc: nothing may allocate before
	 * --topology is installed (nd_topology_emulate). */
	raw_opt_t *raw = mmap(NULL, (size_t)argc * sizeof *raw, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int nraw = 0;
	if (raw == MAP_FAILED) {
		fprintf(stderr, "nodactl: out of memory\n");
		return 1;
	}
	if (read_options(argc, argv, raw, &nraw, &l))
		return 1;
	int prog = optind; /* getopt_long skipped a "--" already */
	if (prog >= argc && !l.show && !l.dry_run)
		return usage_error("%s", "no program to run (nodactl [options] -- program args)");

	/* The topology first: node lists are checked against it. */
	if (l.topology) {
		if (strlen(l.topology) > ENV_VALUE_MAX) {
			fprintf(stderr, "nodactl: --topology: the spec is %zu characters, more than the %d NODALLOC_TOPOLOGY "
				"takes\n", strlen(l.topology), ENV_VALUE_MAX);
			return 1;
		}
		char err[ENV_VALUE_MAX + 256]; /* the parser quotes the spec; not malloc (above) */
		if (nd_topology_emulate(l.topology, err, sizeof err) != 0) {
			fprintf(stderr, "nodactl: --topology: %s\n", err);
			return 1;
		}
	}
	_nd_ensure_init();
	const _nd_topo_t *t = _nd_topo();
	static universe_t u;
	universe_of(t, &u);
	if (resolve(&l, raw, nraw, &u))
		return 1;

	/* nodalloc's policy string (whole, however long the lists), checked
	 * by the library's own parser. */
	char *policy = xprintf("%s", "");
	char *list = format_list(l.nodes, u.nodes);
	if (l.weights) {
		if (l.mode != ND_POLICY_DEFAULT && l.mode != ND_POLICY_INTERLEAVE)
			return usage_error("--weights goes with --interleave, not --%s", l.mode_opt);
		policy = xprintf("weighted:%s", l.weights);
	} else if (l.mode == ND_POLICY_LOCAL) {
		policy = xprintf("local");
	} else if (l.mode != ND_POLICY_DEFAULT) {
		static const char *const words[] = { [ND_POLICY_PREFERRED] = "preferred",
						     [ND_POLICY_PREFERRED_MANY] = "preferred-many",
						     [ND_POLICY_BIND] = "bind", [ND_POLICY_INTERLEAVE] = "interleave" };
		policy = xprintf("%s:%s", words[l.mode], list);
	}
	if (l.granularity) {
		if (strncmp(policy, "interleave", 10) != 0 && strncmp(policy, "weighted", 8) != 0)
			return usage_error("%s goes with --interleave or --weights", "--granularity");
		policy = xprintf("%s@%s", policy, l.granularity);
	}
	if (l.tier)
		policy = xprintf("%s+tier", policy[0] ? policy : "local");
	/* The program's library takes values up to ENV_VALUE_MAX: refused
	 * here, by the options that made them, rather than there (and before the parser, whose
	 * complaint would be about a part). */
	if (strlen(policy) > ENV_VALUE_MAX) {
		fprintf(stderr, "nodactl: --%s%s: the policy '%.40s...' is %zu characters, more than the %d "
			"NODALLOC_POLICY takes\n", l.weights ? "weights" : l.mode_opt ? l.mode_opt : "tier-order",
			l.granularity ? " with --granularity" : "", policy, strlen(policy), ENV_VALUE_MAX);
		return 1;
	}
	nd_policy_t p = { 0 };
	if (policy[0]) {
		size_t errlen = strlen(policy) + 256; /* the parser quotes the policy */
		char *err = xprintf("%*s", (int)errlen, "");
		if (nd_policy_parse(policy, &p, err, errlen) != 0 || nd_policy_check(&p, err, errlen) != 0) {
			/* the parser's message names the policy; its check's says "policy:" */
			fprintf(stderr, "nodactl: --%s: %s\n",
				l.weights ? "weights" : l.mode_opt ? l.mode_opt : "tier-order", err);
			return 1;
		}
		free(err);
	}
	if (l.balancing && l.mode != ND_POLICY_BIND)
		fprintf(stderr, "nodactl: warning: --balancing goes with --membind: ignored\n");

	/* The environment. */
	static env_set_t env;
	char lib[PATH_MAX];
	bool have_lib = find_library(lib, sizeof lib) == 0;
	if (have_lib) {
		const char *old = getenv("LD_PRELOAD");
		env_add(&env, "LD_PRELOAD", xprintf("%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : ""));
	}
	if (policy[0])
		env_add(&env, "NODALLOC_POLICY", policy);
	if (l.topology)
		env_add(&env, "NODALLOC_TOPOLOGY", l.topology);
	/* --stats: nodactl reports the launched program itself (collect.c);
	 * the library prints for descendants only with --stats-children. */
	if (l.stats_children)
		env_add(&env, "NODALLOC_STATS", l.stats);
	if (l.check)
		env_add(&env, "NODALLOC_CHECK", "1");
	if (l.export_stats && !l.stats)
		env_add(&env, "NODALLOC_STATS_EXPORT", "1");

	/* The kernel's policy and the CPU binding, applied to this process
	 * (exec keeps both). Not under an emulated topology: its node and
	 * CPU numbers are not the machine's. */
	static kpol_t k;
	kernel_policy_of(&l, &p, u.nodes, &k);
	bool emulated = t->emulated;
	if (!emulated && apply_kernel_policy(&k, u.nodes))
		return 1;
	if (emulated && l.bind_opt && !l.dry_run && !l.show)
		fprintf(stderr, "nodactl: warning: --%s ignored under an emulated topology\n", l.bind_opt);
	if (!emulated && l.bind_opt) {
		/* sized for every CPU the list may name: a fixed cpu_set_t
		 * (1024) would drop the CPUs above it */
		cpu_set_t *set = CPU_ALLOC((size_t)u.cpus);
		size_t setsize = CPU_ALLOC_SIZE((size_t)u.cpus);
		if (!set) {
			fprintf(stderr, "nodactl: out of memory\n");
			return 1;
		}
		CPU_ZERO_S(setsize, set);
		for (int c = 0; c < u.cpus; c++)
			if (l.cpus[c])
				CPU_SET_S((size_t)c, setsize, set);
		if (sched_setaffinity(0, setsize, set) != 0) {
			fprintf(stderr, "nodactl: --%s: sched_setaffinity: %s\n", l.bind_opt, strerror(errno));
			return 1;
		}
	}
	if (k.note[0] && !l.show && !l.dry_run)
		fprintf(stderr, "nodactl: note: %s\n", k.note);

	if (l.show) {
		show(&l, &env, &k, emulated);
		return 0;
	}

	char *path = prog < argc ? find_program(argv[prog]) : NULL;
	bool found = path != NULL;
	bool is_static = found && is_static_elf(path);
	const char *secure = found && !is_static ? secure_exec_of(path) : NULL;
	if (l.dry_run) {
		if (prog < argc)
			printf("program: %s%s%s%s\n", found ? path : argv[prog],
			       !found ? " (not found)" : is_static ? " (static: only the kernel policy and CPU binding apply)" : "",
			       secure ? " (" : "", secure ? xprintf("%s: only the kernel policy and CPU binding apply)", secure) : "");
		printf("kernel policy: %s\n", emulated ? "unchanged (emulated topology)"
					   : k.mode < 0 ? "inherited (no policy option)" : k.what);
		if (k.note[0])
			printf("note: %s\n", k.note);
		printf("nodalloc policy: %s\n", policy[0] ? policy : "inherited (NODALLOC_POLICY, else local)");
		char *cpus = format_list(l.cpus, u.cpus);
		printf("cpu binding: %s\n", !l.bind_opt ? "inherited" : emulated ? "none (emulated topology)" : cpus);
		for (int i = 0; i < env.n; i++)
			printf("environment: %s=%s\n", env.e[i].name, env.e[i].value);
		if (l.stats)
			printf("statistics: %s of the launched program, reported by nodactl when it ends%s%s\n",
			       strcmp(l.stats, "json") == 0 ? "JSON" : "table",
			       l.stats_children ? "; each descendant reports its own at exit" : "; descendants: none",
			       l.export_stats ? "; live in /dev/shm/nodalloc-PID.stats" : "");
		if (!have_lib)
			printf("warning: libnodalloc.so not found (set NODALLOC_LIBRARY): only the kernel policy applies\n");
		return 0;
	}

	if (!have_lib) {
		fprintf(stderr, "nodactl: cannot find libnodalloc.so next to nodactl or in ../lib (set NODALLOC_LIBRARY)\n");
		return 1;
	}
	/* What only nodalloc can do does not reach a static program. */
	if (is_static && (l.granularity || l.weights || l.tier || l.stats || l.check || l.export_stats))
		fprintf(stderr, "nodactl: note: %s is statically linked: it gets the kernel policy%s; nodalloc's "
			"granularity, weights, tier order, statistics and checks do not apply\n",
			path, l.bind_opt ? " and CPU binding" : "");
	if (secure && (l.granularity || l.weights || l.tier || l.stats || l.check || l.export_stats))
		fprintf(stderr, "nodactl: note: %s is %s: the dynamic loader ignores LD_PRELOAD in it (secure execution); "
			"it gets the kernel policy%s; nodalloc's granularity, weights, tier order, statistics and checks "
			"do not apply\n", path, secure, l.bind_opt ? " and CPU binding" : "");
	for (int i = 0; i < env.n; i++)
		setenv(env.e[i].name, env.e[i].value, 1);
	if (l.stats)
		return nodactl_run_collected(argv + prog, strcmp(l.stats, "json") == 0, l.stats_children, l.export_stats);
	execvp(argv[prog], argv + prog);
	fprintf(stderr, "nodactl: execution of '%s': %s\n", argv[prog], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
