// SPDX-License-Identifier: MIT
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

/* The version of this header; nd_version() gives the library's, so a
 * program can check at run time that it got what it was built against
 * (same major, minor at least this). CMake reads these lines. */
#define ND_VERSION_MAJOR 0
#define ND_VERSION_MINOR 1
#define ND_VERSION_PATCH 0
#define ND_VERSION ((ND_VERSION_MAJOR << 16) | (ND_VERSION_MINOR << 8) | ND_VERSION_PATCH)

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
/* The kernel's distance (10 local); -1 if either node does not exist. */
ND_API int nd_node_distance(int from, int to);
/* Memory size of a node in bytes (0 for memoryless). */
ND_API uint64_t nd_node_mem_total(int node);
/* The node of a CPU; -1 for an id that is not a CPU. */
ND_API int nd_node_of_cpu(int cpu);
/* The effective local memory node of a CPU (numa_mem_id()). */
ND_API int nd_mem_node_of_cpu(int cpu);
/* The fallback list of a node: memory nodes, nearest first. Returns the
 * number of entries written (at most max), or -1 if node does not exist.
 * tier != 0 gives tier order (docs/topology.md). */
ND_API int nd_fallback_list(int node, int tier, int *out, int max);
/* The CPU the calling thread runs on (rseq, else getcpu; emulation seam). */
ND_API int nd_current_cpu(void);
/* Replace the topology by an emulated one before first allocation
 * (also NODALLOC_TOPOLOGY). Returns 0, or -1 with err naming the field. */
ND_API int nd_topology_emulate(const char *spec, char *err, size_t errlen);
/* Test seam: make this thread behave as if it ran on cpu (-1 = real). Only
 * honoured under an emulated topology (a warning otherwise, or for a CPU
 * the emulated topology does not have). */
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
/* Writes p in that grammar into buf (len bytes, NUL-terminated, cut to
 * fit); returns the full length, or -1 for a NULL or invalid policy or a
 * NULL buf with len > 0. */
ND_API int nd_policy_format(const nd_policy_t *p, char *buf, size_t len);
/* Validates p against the topology (nodes exist and have memory, the set
 * fits the mode, granularity_shift <= 18). 0, or -1 with err naming it. */
ND_API int nd_policy_check(const nd_policy_t *p, char *err, size_t errlen);
/* Thread policy (NULL or mode DEFAULT = inherit the process policy).
 * -1 with errno EINVAL if p fails nd_policy_check. nd_get_policy gives
 * the thread's own policy: mode DEFAULT when it inherits. */
ND_API int nd_set_policy(const nd_policy_t *p);
ND_API int nd_get_policy(nd_policy_t *out);
/* Process default policy (also NODALLOC_POLICY); every thread without a
 * policy of its own sees a change at its next allocation. */
ND_API int nd_set_default_policy(const nd_policy_t *p);
ND_API int nd_get_default_policy(nd_policy_t *out);

/* ---- allocation (src/malloc.c) ---------------------------------------- */

ND_API void *nd_malloc(size_t size);
ND_API void *nd_calloc(size_t n, size_t size);
ND_API void *nd_realloc(void *p, size_t size);
ND_API void nd_free(void *p);
ND_API void *nd_aligned_alloc(size_t align, size_t size);
ND_API size_t nd_usable_size(const void *p);
/* Every call below that takes a node also takes ND_NODE_LOCAL: the
 * calling CPU's memory node (nd_heap_new: the creating CPU's, kept). A
 * node that does not exist is EINVAL. */
#define ND_NODE_LOCAL (-1)
/* Memory on one node (falls back along the node's list if it is full). */
ND_API void *nd_malloc_onnode(size_t size, int node);
/* Memory on the calling CPU's memory node. */
ND_API void *nd_malloc_local(size_t size);
/* One allocation interleaved over nodes, switching node every granularity
 * bytes: 4K times a power of two, at most 1G (as "@gran" of the policy
 * grammar), or 0 for one page. Any other granularity: NULL with errno
 * EINVAL (the message, under NODALLOC_VERBOSE, names it). */
ND_API void *nd_malloc_interleaved(size_t size, const nd_nodemask_t *nodes, size_t granularity);
/* One allocation under an explicit policy. */
ND_API void *nd_malloc_policy(size_t size, const nd_policy_t *p);
/* The node the memory at p belongs to, or -1 if nodalloc did not allocate p. */
ND_API int nd_node_of(const void *p);

/* ND_VERSION of the library (not of the header the caller was built with). */
ND_API int nd_version(void);

/* ---- placement with alignment and zeroing (docs/malloc.md) ------------
 * The x calls take flags: ND_MALLOCX_ZERO, and an alignment as
 * ND_MALLOCX_ALIGN(a) (a a power of two) or ND_MALLOCX_LG_ALIGN(lg).
 * Alignment up to 4 KiB and zeroing stay on the fast path. node may be
 * ND_NODE_LOCAL (the calling CPU's memory node). Errors: NULL with errno
 * EINVAL (node does not exist, bad flags, invalid policy) or ENOMEM. */
#define ND_MALLOCX_LG_ALIGN(lg) ((unsigned)(lg))   /* lg <= 30 */
#if defined(__GNUC__)
#define ND_MALLOCX_ALIGN(a) ((unsigned)__builtin_ctzll((unsigned long long)(a)))
#endif
#define ND_MALLOCX_ZERO 0x40u

ND_API void *nd_mallocx_onnode(size_t size, int node, unsigned flags);
/* p: a policy (NULL = the thread's), as for nd_malloc_policy. */
ND_API void *nd_mallocx_policy(size_t size, const nd_policy_t *p, unsigned flags);
/* The usual names for the common cases (calloc checks n * size). */
ND_API void *nd_calloc_onnode(size_t n, size_t size, int node);
ND_API void *nd_aligned_alloc_onnode(size_t align, size_t size, int node);
ND_API void *nd_calloc_policy(size_t n, size_t size, const nd_policy_t *p);
ND_API void *nd_aligned_alloc_policy(size_t align, size_t size, const nd_policy_t *p);

/* An immutable copy of p (equal policies share one), valid for the life
 * of the process and usable wherever a policy is. nd_malloc_policy and
 * nd_mallocx_policy recognise it by its address alone, without reading
 * it: the fastest way to allocate under a policy object used again and
 * again. NULL with errno EINVAL if p fails nd_policy_check. */
ND_API const nd_policy_t *nd_policy_prepare(const nd_policy_t *p);

/* Sized free: size is what was asked (malloc, calloc's n * size, or the
 * last realloc); nd_free_aligned_sized for the aligned calls. Same as
 * nd_free, except that NODALLOC_CHECK=1 reports a size that cannot be
 * the block's (fatal, like an invalid free). */
ND_API void nd_free_sized(void *p, size_t size);
ND_API void nd_free_aligned_sized(void *p, size_t align, size_t size);
/* The usable size malloc(size) gives (nd_usable_size of the result, at
 * least: a large block reused from the cache, or an object of a slab a
 * bigger class lent, may be bigger); 0 if size is too big to allocate. */
ND_API size_t nd_good_size(size_t size);

/* ---- where memory really is (docs/malloc.md) --------------------------
 * The kernel's view (move_pages), next to nd_node_of (nodalloc's record).
 * Both work on the whole pages [p, p+size) touches, on any memory of the
 * process, not only nodalloc's. Under an emulated topology the kernel's
 * nodes are the real ones. */

/* counts[n] (n < max, zeroed first) = pages of the range on node n.
 * Returns the pages counted (pages never touched are on no node), or -1
 * with errno EINVAL (NULL, max < 1) or the kernel's. */
ND_API long nd_where(const void *p, size_t size, uint64_t *counts, int max);
/* Moves the range's pages that are present to node (ND_NODE_LOCAL: the
 * calling CPU's memory node; the neighbours that share its first and
 * last page move too). nodalloc's record is not
 * changed: nd_node_of still gives the node the block was allocated on,
 * and pages freed and faulted in again come back there. 0, or -1 with
 * errno EINVAL (node missing or without memory, NULL) or the first
 * failing page's (EBUSY, ENOMEM, EACCES). */
ND_API int nd_move(void *p, size_t size, int node);

/* ---- heaps (src/heap_api.c, docs/malloc.md) ----------------------------
 * Memory of one node or one policy that a program allocates from and then
 * destroys as a whole (like mimalloc's mi_heap). Objects obey the heap's
 * placement (a node heap falls back along the node's list when it is
 * full; an interleave policy heap chooses each slab's node, as malloc
 * does) and are ordinary blocks for free, realloc, nd_usable_size and
 * nd_node_of.
 * Thread safety: the thread that created a heap allocates from it (and
 * reallocs into it); any thread may free its objects, also while the
 * owner allocates. nd_heap_destroy frees every object still live: call it
 * when no other thread uses the heap's objects any more (any thread may
 * call it then). realloc by another thread than the owner moves the block
 * out of the heap (to an ordinary block on the same node).
 * nd_heap_new(ND_NODE_LOCAL): a heap of the creating CPU's memory node.
 * Errors: NULL with errno EINVAL (node missing, invalid policy, not a
 * heap, bad alignment) or ENOMEM. */
typedef struct nd_heap_api nd_heap_t;
ND_API nd_heap_t *nd_heap_new(int node);
ND_API nd_heap_t *nd_heap_new_policy(const nd_policy_t *p);
ND_API void *nd_heap_malloc(nd_heap_t *h, size_t size);
ND_API void *nd_heap_calloc(nd_heap_t *h, size_t n, size_t size);
ND_API void *nd_heap_aligned_alloc(nd_heap_t *h, size_t align, size_t size);
ND_API void nd_heap_destroy(nd_heap_t *h);

/* ---- per-CPU areas (src/percpu.c) ------------------------------------- */

/* An offset into every CPU's area; 0 = none. The copy of CPU c lives at
 * base + (c << area_shift) + h: one address computation, no pointer array.
 * Areas are dense (allocations of different users share a cache line of one
 * CPU, never a line across CPUs), committed on demand, and each is bound to
 * its CPU's memory node. docs/percpu.md. */
typedef uintptr_t nd_percpu_t;

/* size bytes in every possible CPU's area, zeroed, aligned to align (a
 * power of two; 0 = natural: the largest power of two <= 16 dividing size;
 * at least 4). Returns 0 with errno EINVAL (bad size/align, message names
 * it) or ENOMEM (area full or commit failed). */
ND_API nd_percpu_t nd_percpu_alloc(size_t size, size_t align);
/* 0 is ignored; a handle that is not from nd_percpu_alloc is reported. */
ND_API void nd_percpu_free(nd_percpu_t h);
/* The operations below report handle 0 (nd_percpu_alloc's failure value)
 * and do nothing with it: pointers are NULL, values 0, nd_percpu_cmpxchg returns
 * expect + 1 (no store). */
/* CPU cpu's copy; NULL if cpu is not below nd_cpu_limit() or not possible. */
ND_API void *nd_percpu_ptr(nd_percpu_t h, int cpu);
/* The current CPU's copy (the thread may migrate right after: use the
 * operations below for updates that must land on one CPU's copy). */
ND_API void *nd_this_cpu_ptr(nd_percpu_t h);
/* 64-bit counter operations on the current CPU's copy (h must be an
 * allocation of >= 8 bytes aligned to 8): restartable sequences without
 * atomics or locks when rseq is available, else atomic instructions.
 * Correct under preemption, migration and signals. */
ND_API void nd_percpu_add(nd_percpu_t h, int64_t v);
ND_API void nd_percpu_inc(nd_percpu_t h);
/* Adds v and returns the new value of the current CPU's copy. */
ND_API int64_t nd_percpu_add_return(nd_percpu_t h, int64_t v);
/* If the current CPU's copy equals expect, store newv; returns the value
 * the copy had (== expect means the store happened). */
ND_API int64_t nd_percpu_cmpxchg(nd_percpu_t h, int64_t expect, int64_t newv);
/* Sum of the 64-bit counter at h over all possible CPUs. */
ND_API int64_t nd_percpu_sum(nd_percpu_t h);
/* Bytes of per-CPU area in use, over all CPUs (the seed's cpu_bytes). */
ND_API size_t nd_percpu_bytes(void);
/* 1 if per-CPU operations use rseq, 0 if the atomic fallback. */
ND_API int nd_percpu_uses_rseq(void);

/* ---- large tables (src/table.c) --------------------------------------- */
/* The kernel's alloc_large_system_hash for programs (docs/tables.md): a
 * power-of-two table sized from memory and spread evenly over the memory
 * nodes, for big start-up hashes and arrays that every CPU uses. */

#define ND_TABLE_ZERO       0x1u /* zero-fill */
#define ND_TABLE_LOCAL      0x2u /* on the caller's memory node, not spread */
#define ND_TABLE_DISTRIBUTE 0x4u /* spread over the memory nodes (default) */

typedef struct nd_table_desc {
	const char *name;     /* for the report line, e.g. "Dentry cache" */
	size_t bucket_size;   /* bytes per entry (> 0) */
	uint64_t entries;     /* wanted entries (rounded up to a power of two);
	                       * 0 = size from memory with scale */
	unsigned scale;       /* one entry per 2^scale bytes of memory; raised by
	                       * one per 4x of memory above 64 GiB unless high_limit */
	uint64_t low_limit;   /* minimum entries (0 = none) */
	uint64_t high_limit;  /* maximum entries (0 = 1/16 of memory); never above 2^31 */
	unsigned flags;       /* ND_TABLE_* */
	uint64_t memory;      /* bytes to size from (0 = the allowed memory nodes' total) */
	const nd_nodemask_t *nodes; /* spread over these only (NULL = every allowed
	                       * memory node; e.g. the DRAM nodes, not a slow tier).
	                       * Sizing still counts all memory. Not with LOCAL. */
} nd_table_desc_t;

typedef struct nd_table {
	void *base;
	uint64_t entries;     /* a power of two */
	unsigned shift;       /* log2(entries) */
	uint64_t mask;        /* entries - 1 */
	size_t bytes;         /* bucket_size * entries */
	/* How it was obtained (read by nd_table_format). */
	uint64_t wanted;      /* entries the sizing asked for, before halving */
	unsigned flags;       /* as placed: ND_TABLE_LOCAL or ND_TABLE_DISTRIBUTE, | ZERO */
	unsigned granule_shift; /* spread: nodes switch every 4096 << shift bytes */
	char name[48];        /* copy of desc->name (truncated) */
} nd_table_t;

/* Returns 0 and fills *out, or -1 with errno set (EINVAL with a message
 * naming the bad field; ENOMEM when not even one page could be had). When
 * memory is short the table is halved until it fits (out->entries <
 * out->wanted, with a warning). The report line is printed when
 * NODALLOC_VERBOSE is set. */
ND_API int nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out);
ND_API void nd_table_free(nd_table_t *t);
/* Bytes of the table on each node: bytes[node] for node < max (zeroed
 * first). Returns the number of entries written, or -1. */
ND_API int nd_table_node_bytes(const nd_table_t *t, uint64_t *bytes, int max);
/* The report line, like the kernel's boot message (without "nodalloc: "):
 * "Dentry cache hash table entries: 262144 (order: 9, 2097152 bytes,
 * spread over nodes 0-15: 131072 bytes each)". Returns its length. */
ND_API int nd_table_format(const nd_table_t *t, char *buf, size_t len);

/* ---- statistics (src/stats.c) ----------------------------------------- */

#define ND_STATS_VERSION 2

/* The kernel's numastat meanings (docs/policy.md). The six counts are
 * page-run allocations (one per run, whatever its length, as the kernel
 * counts once per allocation), not pages and not malloc calls. */
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

/* ND_STATS_NODES nodes (4.6 KiB, fine on a stack); the machine's
 * node_limit can be larger: nd_stats_get then fills the first
 * ND_STATS_NODES and fails with ERANGE, and nd_stats_get_nodes reads the
 * rest into a caller's array. (Version 1 of this struct had ND_MAX_NODES
 * entries, 72 KiB, with the same fields before them: nd_stats_get still
 * fills it for programs built against it.) */
#define ND_STATS_NODES 64
typedef struct nd_stats {
	unsigned version;        /* ND_STATS_VERSION */
	int node_limit;          /* the machine's highest node id + 1 */
	nd_node_stats_t nodes[ND_STATS_NODES]; /* valid below node_limit */
} nd_stats_t;

/* Fills *out (set out->version = ND_STATS_VERSION first): 0, or -1 with
 * errno EINVAL (NULL, unknown version) or ERANGE (node_limit above
 * ND_STATS_NODES: the first ND_STATS_NODES are filled). */
ND_API int nd_stats_get(nd_stats_t *out);
/* Nodes first .. first+count-1 into nodes[0..count): returns the entries
 * for existing nodes (the rest zeroed), or -1 with EINVAL. */
ND_API int nd_stats_get_nodes(nd_node_stats_t *nodes, int first, int count);
/* One small-object size class, a snapshot taken without stopping other
 * threads (exact for a quiescent process). Nothing is counted on the
 * malloc/free fast paths: objects and slabs come from the slab headers,
 * remote frees and refills from the slow paths. */
typedef struct nd_class_stats {
	uint64_t size;         /* object size of the class, bytes */
	uint64_t slabs;        /* live slabs */
	uint64_t slab_bytes;   /* bytes of their page runs (pages given back excluded) */
	uint64_t capacity;     /* objects those slabs hold (less those lost with them) */
	uint64_t objects;      /* objects in use (remote frees not yet collected count) */
	uint64_t remote_frees; /* frees by a thread that did not own the slab */
	uint64_t refills;      /* malloc slow paths of the class (free list empty) */
} nd_class_stats_t;
/* Fills out[0 .. min(max, classes)); returns the number of classes (call
 * with max 0 to size the array), or -1 with EINVAL (max < 0, or NULL with
 * max > 0). */
ND_API int nd_stats_classes(nd_class_stats_t *out, int max);
/* Print the per-node table (numastat layout) or JSON to a file descriptor,
 * followed by the size classes in use (JSON: "classes"). */
ND_API void nd_stats_print(int fd);
ND_API void nd_stats_print_json(int fd);

#ifdef __cplusplus
}
#endif
#endif /* NODALLOC_H */
