// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 3,
 * options.c. */
#ifndef ND_OPTIONS_H
#define ND_OPTIONS_H

/* ======================================================================
 * src/options.c: one table drives every option. Read once from the
 * environment (NODALLOC_<NAME>, name case-insensitive); unknown NODALLOC_*
 * variables and bad values are warned about by name.
 * ====================================================================== */

typedef enum _nd_opt {
	ND_OPT_TOPOLOGY,       /* string: emulated topology spec */
	ND_OPT_POLICY,         /* string: process default policy */
	ND_OPT_STATS,          /* string: "" off, 1/text, json: print at exit */
	ND_OPT_CHECK,          /* bool: full validation of frees */
	ND_OPT_VERBOSE,        /* bool: informational messages */
	ND_OPT_TIER_ORDER,     /* bool: fall back in tier order by default */
	ND_OPT_STRICT,         /* bool: bind node slots with MPOL_BIND (else preferred) */
	ND_OPT_PURGE,          /* string: "dontneed" or "free" */
	ND_OPT_PURGE_THRESHOLD,/* size: free run size returned to the OS at once */
	ND_OPT_ARENA_RESERVE,  /* size: virtual space per node (0 = from memory) */
	ND_OPT_SYSFS_ROOT,     /* string: read topology from this tree instead of /sys */
	ND_OPT_MSG_FD,         /* int: descriptor for messages (default 2) */
	ND_OPT_STATS_EXPORT,   /* string: file path the live statistics are published to */
	ND_OPT_PERCPU_AREA,    /* size: virtual span of each CPU's per-CPU area (power of two) */
	ND_OPT_HUGE_SPREAD,    /* bool: MADV_HUGEPAGE on spread runs with granules >= 2 MiB */
	ND_OPT_LARGE_DECAY_MS, /* int: ms a freed large run stays cached for reuse (0: off) */
	ND_OPT_ABORT_ON_CONFIG_ERROR, /* bool: a bad option name or value is fatal */
	ND_OPT_PURGE_DECAY_MS, /* int: ms dirty free pages wait before they are purged (0: off) */
	ND_OPT_THP,            /* string: never, madvise or always (huge pages for node memory) */
	ND_OPT_THP_SLOW_US,    /* int: a fresh huge page faulting slower than this (CPU us) drops the advice for a while (0: never) */
	ND_OPT__COUNT
} _nd_opt_t;

/* Parse the environment once (idempotent, thread-safe enough for init). */
void _nd_opt_init(void);
/* Values; strings are never NULL ("" when unset). */
const char *_nd_opt_str(_nd_opt_t o);
int64_t _nd_opt_int(_nd_opt_t o);   /* bools are 0/1, sizes in bytes */
bool _nd_opt_set_by_user(_nd_opt_t o);
/* Parsers shared with the CLI and the policy grammar. 0 or -1. */
int _nd_opt_parse_bool(const char *s, bool *out);
int _nd_opt_parse_size(const char *s, uint64_t *out); /* 4096, 64K, 2M, 1G */
/* Override an option programmatically before init (tests, nodactl). */
int _nd_opt_set(const char *name, const char *value);
/* A bad configuration value found by another layer (a policy, a topology
 * spec): warned about, or fatal under NODALLOC_ABORT_ON_CONFIG_ERROR=1. */
void _nd_opt_config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Every option with its value and where it came from (NODALLOC_VERBOSE=1
 * prints this at start), one line each, to fd. */
void _nd_opt_print(int fd);
/* Edit distance of typed[0..len) (case-insensitive, '-' = '_') and a
 * lower-case name: the "did you mean" of options and nodactl's commands. */
int _nd_opt_distance(const char *typed, size_t len, const char *name);

#endif /* ND_OPTIONS_H */
