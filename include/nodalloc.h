/*
 * nodalloc: a NUMA-aware memory allocator for Linux.
 *
 * Public API, prefix nd_. Everything else in the library is hidden.
 * The malloc family (malloc, free, calloc, ...) is also exported, so that
 * linking the library or LD_PRELOADing it replaces the C library's.
 *
 * Node numbers are the kernel's (they can have gaps). "Memory node" means a
 * node that has memory; a CPU's memory node is the first node of its node's
 * fallback list (the kernel's numa_mem_id()).
 */
#ifndef NODALLOC_H
#define NODALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ND_API __attribute__((visibility("default")))
#else
#define ND_API
#endif

#define ND_VERSION_MAJOR 0
#define ND_VERSION_MINOR 1

/* The kernel's MAX_NUMNODES on x86-64: node ids are below this. */
#define ND_MAX_NODES 1024

/* ---- node sets -------------------------------------------------------- */

typedef struct nd_nodemask {
	uint64_t bits[ND_MAX_NODES / 64];
} nd_nodemask_t;

ND_API void nd_nodemask_zero(nd_nodemask_t *m);
ND_API void nd_nodemask_set(nd_nodemask_t *m, int node);
ND_API int nd_nodemask_isset(const nd_nodemask_t *m, int node);
ND_API int nd_nodemask_count(const nd_nodemask_t *m);
/* numactl syntax: "0-3,5", "all", "!1", "+0-1" (relative not supported).
 * Returns 0, or -1 with a message in err naming the bad part. */
ND_API int nd_nodemask_parse(const char *s, nd_nodemask_t *m, char *err, size_t errlen);

/* ---- topology (src/topology.c) ---------------------------------------- */

/* Highest node id + 1 and highest CPU id + 1 (tables are sized by these). */
ND_API int nd_node_limit(void);
ND_API int nd_cpu_limit(void);
ND_API int nd_node_online(int node);
ND_API int nd_node_has_memory(int node);
ND_API int nd_node_has_cpus(int node);
ND_API int nd_node_distance(int from, int to);
/* Memory size of a node in bytes (0 for memoryless). */
ND_API uint64_t nd_node_mem_total(int node);
ND_API int nd_node_of_cpu(int cpu);
/* The effective local memory node of a CPU (numa_mem_id()). */
ND_API int nd_mem_node_of_cpu(int cpu);
/* The fallback list of a node: memory nodes, nearest first. Returns the
 * number of entries written (at most max). tier != 0 gives tier order. */
ND_API int nd_fallback_list(int node, int tier, int *out, int max);
/* The CPU the calling thread runs on (rseq, else getcpu; emulation seam). */
ND_API int nd_current_cpu(void);
/* Replace the topology by an emulated one before first allocation
 * (also NODALLOC_TOPOLOGY). Returns 0, or -1 with err naming the field. */
ND_API int nd_topology_emulate(const char *spec, char *err, size_t errlen);
/* Test seam: make this thread behave as if it ran on cpu (-1 = real). Only
 * honoured under an emulated topology. */
ND_API void nd_emulate_cpu(int cpu);

/* ---- memory policies (src/policy.c) ----------------------------------- */

typedef enum nd_policy_mode {
	ND_POLICY_DEFAULT = 0,   /* inherit: thread -> process -> local */
	ND_POLICY_LOCAL,         /* the CPU's memory node, then its fallback list */
	ND_POLICY_PREFERRED,     /* one node, then its fallback list */
	ND_POLICY_PREFERRED_MANY,/* nearest node of a set, then fallback list */
	ND_POLICY_BIND,          /* only nodes of the set, nearest first; else ENOMEM */
	ND_POLICY_INTERLEAVE,    /* round robin over the set, per granule */
	ND_POLICY_WEIGHTED,      /* weighted round robin over the set */
} nd_policy_mode_t;

#define ND_POLICY_F_TIER_ORDER 0x1u /* fall back in tier order, not node order */

typedef struct nd_policy {
	nd_policy_mode_t mode;
	unsigned flags;              /* ND_POLICY_F_* */
	unsigned granularity_shift;  /* interleave granule = 4096 << shift bytes */
	nd_nodemask_t nodes;         /* preferred node / set */
	uint8_t weights[ND_MAX_NODES]; /* weighted interleave; 0 = not in set */
} nd_policy_t;

/* Grammar (docs/policy.md): "local", "preferred:1", "preferred-many:0,2",
 * "bind:0-1", "interleave:0-3@2M", "weighted:0=3,1=1@64K", optional
 * "+tier" suffix flag. Returns 0, or -1 with err naming the bad part. */
ND_API int nd_policy_parse(const char *s, nd_policy_t *out, char *err, size_t errlen);
ND_API int nd_policy_format(const nd_policy_t *p, char *buf, size_t len);
/* Thread policy (NULL or mode DEFAULT = inherit the process policy). */
ND_API int nd_set_policy(const nd_policy_t *p);
ND_API int nd_get_policy(nd_policy_t *out);
/* Process default policy (also NODALLOC_POLICY). */
ND_API int nd_set_default_policy(const nd_policy_t *p);

/* ---- allocation (src/malloc.c) ---------------------------------------- */

ND_API void *nd_malloc(size_t size);
ND_API void *nd_calloc(size_t n, size_t size);
ND_API void *nd_realloc(void *p, size_t size);
ND_API void nd_free(void *p);
ND_API void *nd_aligned_alloc(size_t align, size_t size);
ND_API size_t nd_usable_size(const void *p);
/* Memory on one node (falls back along the node's list if it is full). */
ND_API void *nd_malloc_onnode(size_t size, int node);
/* Memory on the calling CPU's memory node. */
ND_API void *nd_malloc_local(size_t size);
/* One allocation interleaved over nodes, switching node every granularity
 * bytes (rounded to pages; 0 = one page). */
ND_API void *nd_malloc_interleaved(size_t size, const nd_nodemask_t *nodes, size_t granularity);
/* One allocation under an explicit policy. */
ND_API void *nd_malloc_policy(size_t size, const nd_policy_t *p);
/* The node the memory at p belongs to, or -1 if nodalloc did not allocate p. */
ND_API int nd_node_of(const void *p);

/* ---- per-CPU areas (src/percpu.c) ------------------------------------- */

typedef uintptr_t nd_percpu_t; /* an offset into every CPU's area; 0 = none */

ND_API nd_percpu_t nd_percpu_alloc(size_t size, size_t align);
ND_API void nd_percpu_free(nd_percpu_t h);
ND_API void *nd_percpu_ptr(nd_percpu_t h, int cpu);
ND_API void *nd_this_cpu_ptr(nd_percpu_t h);
/* 64-bit counter operations on the current CPU's copy, without atomics when
 * rseq is available. */
ND_API void nd_percpu_add(nd_percpu_t h, int64_t v);
ND_API int64_t nd_percpu_sum(nd_percpu_t h);
/* Bytes of per-CPU area in use, over all CPUs (the seed's cpu_bytes). */
ND_API size_t nd_percpu_bytes(void);
/* 1 if per-CPU operations use rseq, 0 if the atomic fallback. */
ND_API int nd_percpu_uses_rseq(void);

/* ---- large tables (src/table.c) --------------------------------------- */

#define ND_TABLE_ZERO       0x1u /* zero-fill */
#define ND_TABLE_LOCAL      0x2u /* on the caller's memory node, not spread */
#define ND_TABLE_DISTRIBUTE 0x4u /* spread over the memory nodes (default) */

typedef struct nd_table_desc {
	const char *name;
	size_t bucket_size;   /* bytes per entry */
	uint64_t entries;     /* 0 = size from memory with scale */
	unsigned scale;       /* one entry per 2^scale bytes of memory */
	uint64_t low_limit;   /* minimum entries (0 = none) */
	uint64_t high_limit;  /* maximum entries (0 = 1/16 of memory) */
	unsigned flags;       /* ND_TABLE_* */
} nd_table_desc_t;

typedef struct nd_table {
	void *base;
	uint64_t entries;     /* a power of two */
	unsigned shift;       /* log2(entries) */
	uint64_t mask;        /* entries - 1 */
	size_t bytes;
} nd_table_t;

/* Returns 0 and fills *out, or -1 with errno set. */
ND_API int nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out);
ND_API void nd_table_free(nd_table_t *t);

/* ---- statistics (src/stats.c) ----------------------------------------- */

#define ND_STATS_VERSION 1

typedef struct nd_node_stats {
	uint64_t numa_hit;       /* allocated here, intended here */
	uint64_t numa_miss;      /* allocated here, intended elsewhere */
	uint64_t numa_foreign;   /* intended here, allocated elsewhere */
	uint64_t interleave_hit; /* interleave intended here and got it */
	uint64_t local_node;     /* allocated here by a CPU of this node */
	uint64_t other_node;     /* allocated here by a CPU of another node */
	uint64_t bytes_in_use;   /* handed out to the program (page runs) */
	uint64_t bytes_committed;/* touched and not returned to the OS */
	uint64_t bytes_reserved; /* virtual space reserved for this node */
} nd_node_stats_t;

typedef struct nd_stats {
	unsigned version;        /* ND_STATS_VERSION */
	int node_limit;          /* entries in nodes[] that are valid */
	nd_node_stats_t nodes[ND_MAX_NODES];
} nd_stats_t;

/* Fills *out (set out->version = ND_STATS_VERSION first). 0 or -1. */
ND_API int nd_stats_get(nd_stats_t *out);
/* Print the per-node table (numastat layout) or JSON to a file descriptor. */
ND_API void nd_stats_print(int fd);
ND_API void nd_stats_print_json(int fd);

#ifdef __cplusplus
}
#endif
#endif /* NODALLOC_H */
