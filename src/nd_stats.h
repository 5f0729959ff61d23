// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 5,
 * stats.c. */
#ifndef ND_STATS_H
#define ND_STATS_H

/* ======================================================================
 * src/stats.c: per-node NUMA counters with the kernel's meanings, counted
 * once per page-run allocation (like the kernel, once per allocation).
 * ====================================================================== */

int _nd_stats_init(void);
/* A snapshot of every possible node (72 KiB: static, never on a stack),
 * for the printers, the export readers and the tools; also the layout of
 * nd_stats_t version 1 (ND_STATS_V1), which nd_stats_get still fills. */
#define ND_STATS_V1 1
typedef struct _nd_stats_all {
	unsigned version;        /* ND_STATS_V1 */
	int node_limit;
	nd_node_stats_t nodes[ND_MAX_NODES];
} _nd_stats_all_t;
/* want: the node the policy intended; got: the node that served; cpu_node:
 * the node of the allocating CPU (not its memory node); interleave: the
 * policy was an interleave one. */
void _nd_stats_count(int want, int got, int cpu_node, bool interleave);
/* Takes back what _nd_stats_count(same arguments) counted (a placement
 * undone: large.c's spread runs placed again). */
void _nd_stats_uncount(int want, int got, int cpu_node, bool interleave);
/* Byte accounting per node; delta may be negative. */
void _nd_stats_in_use(int node, int64_t delta);
void _nd_stats_committed(int node, int64_t delta);
void _nd_stats_reserved(int node, int64_t delta);
/* Live export (NODALLOC_STATS_EXPORT): the child of a fork stops counting
 * into the parent's file; readers decode an export. */
void _nd_stats_fork_child(void);
/* Makes room for a fresh export file at path: nothing there, or a stale
 * export of this user (its process gone, or its pid now another process;
 * or nodactl's zeroed file whose program never published), which is
 * removed. Links, others' files and live exports are left. 0, or -1 with
 * why. */
int _nd_stats_clear_export(const char *path, char *why, size_t len);
/* Bytes of an export (nodactl sizes the file or memfd it hands over). */
size_t _nd_stats_export_size(void);
/* The counters' private mapping and its bytes (NULL: an export, or none;
 * tests). */
const void *_nd_stats_private_map(size_t *len);
/* Decodes a mapped export: counters, the exporting pid, and the
 * process-wide peak of bytes in use (may be NULL). 0, or -1 if map is
 * not an export of this layout (or nothing was published yet). */
int _nd_stats_from_export(const void *map, size_t len, _nd_stats_all_t *out, int *pid, uint64_t *peak_in_use);
/* Who a report is about: each table and JSON object names its process. */
typedef struct _nd_stats_label {
	int pid, ppid;
	char program[64];     /* comm; "" unknown */
	int role;             /* ND_ROLE_* */
	int root;             /* the launched program's pid (descendants) */
	uint64_t peak_in_use; /* bytes, process-wide peak of in use */
	uint64_t rss, rss_peak; /* bytes; 0 = unknown */
	const char *ended;    /* how it ended ("exited with status 0"), or NULL */
} _nd_stats_label_t;
#define ND_ROLE_PROCESS 0    /* not started by nodactl */
#define ND_ROLE_LAUNCHED 1   /* the program nodactl started */
#define ND_ROLE_DESCENDANT 2 /* a process it started */
/* Print a snapshot (e.g. another process's export) as table or JSON,
 * headed by its label (NULL: none). */
void _nd_stats_print_snapshot(int fd, const _nd_stats_all_t *st, const _nd_stats_label_t *label, bool json);
/* Reads the export file open at fd (by pread: a file cut meanwhile is an
 * error, not a SIGBUS) into *out, the writer's pid and its peak in use
 * (may be NULL). Refuses (-1, err says why) anything but a whole,
 * consistent export of a running process (pid and start time) owned by
 * that process's user (or root), not writable by others; -2 (err set)
 * when the process has exited. For files anyone could have put at a path;
 * _nd_stats_from_export is for a mapping the caller made itself. */
int _nd_stats_read_export(int fd, _nd_stats_all_t *out, int *pid, uint64_t *peak_in_use, char *err, size_t errlen);
/* The library's destructor (exit or dlclose): removes the export file,
 * gives SIGTERM back, prints if NODALLOC_STATS asks (1/yes/text: the
 * table, json: JSON; to the message descriptor). */
void _nd_stats_at_exit(void);
/* That report now, labelled with this process (malloc_stats). */
void _nd_stats_print_self(int fd, bool json);
/* The live printers append the size classes from fn (the top layer
 * registers nd_stats_classes at init: the slab layer is above this one). */
void _nd_stats_set_classes(int (*fn)(nd_class_stats_t *out, int max));
/* Tests: zero every counter. */
void _nd_stats_reset(void);

#endif /* ND_STATS_H */
