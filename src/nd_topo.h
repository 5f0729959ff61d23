// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 4, the
 * topology (topo_impl.h is its private header). */
#ifndef ND_TOPO_H
#define ND_TOPO_H

/* ======================================================================
 * src/topology.c: nodes, CPUs, distances, fallback lists, CPU -> memory
 * node. Real (sysfs) or emulated (spec string, docs/topology.md).
 * Immutable once built; the live one is replaced (whole, by a pointer
 * swap) only by _nd_topo_emulate/_nd_topo_load_sysfs before
 * _nd_topo_freeze. A replaced topology is never unmapped (readers may
 * still hold its pointers), so replacing is for tests and startup only.
 * ====================================================================== */

typedef struct _nd_topo {
	int node_limit;         /* highest node id + 1 */
	int cpu_limit;          /* highest possible CPU id + 1 */
	bool emulated;
	const uint8_t *online;      /* [node_limit] */
	const uint8_t *has_mem;     /* [node_limit] (and allowed) */
	const uint8_t *has_cpu;     /* [node_limit] */
	const uint64_t *mem_total;  /* [node_limit] bytes */
	const uint8_t *distance;    /* [node_limit * node_limit], row = from */
	const int *cpu_node;        /* [cpu_limit], -1 if not possible */
	const int *cpu_mem_node;    /* [cpu_limit], effective memory node */
	bool one_cpu_node;          /* every possible CPU on one node, with one memory node */
	/* fallback[n] points to fallback_len[n] memory nodes, nearest first
	 * (both orders hold the same nodes, so one length serves both). */
	const int *const *fallback;      /* node order */
	const int *const *fallback_tier; /* tier order */
	const int *fallback_len;
	const int *tier;            /* [node_limit] tier index, 0 = nearest; -1 no memory */
	int tier_count;             /* tiers 0..tier_count-1 */
	const uint8_t *cpu_allowed; /* [cpu_limit] in the process's affinity at load */
	const uint8_t *mem_allowed; /* [node_limit] in Mems_allowed at load */
} _nd_topo_t;

/* node is an online node of t (the one test of a node id). */
static inline bool _nd_topo_valid_node(const _nd_topo_t *t, int node)
{
	return node >= 0 && node < t->node_limit && t->online[node];
}

/* node is an online node of t with memory the process may use. */
static inline bool _nd_topo_has_mem(const _nd_topo_t *t, int node)
{
	return _nd_topo_valid_node(t, node) && t->has_mem[node];
}

/* The page level keeps this much of a node's memory free under strict
 * binding (the watermark, docs/arenas.md): 1/64 of the node, at least
 * 32 MiB. */
#define ND_NODE_FLOOR_MIN ((uint64_t)32 << 20)
static inline uint64_t _nd_topo_floor(uint64_t mem_total)
{
	uint64_t f = mem_total / 64;
	return f < ND_NODE_FLOOR_MIN ? ND_NODE_FLOOR_MIN : f;
}

/* Init from NODALLOC_TOPOLOGY / NODALLOC_SYSFS_ROOT / /sys (a bad spec or
 * tree is reported and the next source is tried; a machine without NUMA
 * sysfs becomes one node). Idempotent. 0 or -1. */
int _nd_topo_init(void);
/* The live topology; never NULL (a one-node boot topology before init). */
const _nd_topo_t *_nd_topo(void);
/* Parse a spec into the live topology (before _nd_topo_freeze). 0, or -1
 * with err ("topology spec: node 2: mem: bad size 'x1G' at column 17");
 * on error the live topology is untouched. */
int _nd_topo_emulate(const char *spec, char *err, size_t errlen);
/* Read a sysfs-shaped tree rooted at root (the equivalent of /sys: files
 * at root/devices/system/node/...) into the live topology. 0 or -1. */
int _nd_topo_load_sysfs(const char *root, char *err, size_t errlen);
/* Build without installing (tests, nodactl); NULL with err on failure.
 * Not subject to the freeze. Release with _nd_topo_discard. */
const _nd_topo_t *_nd_topo_build_spec(const char *spec, char *err, size_t errlen);
const _nd_topo_t *_nd_topo_build_sysfs(const char *root, char *err, size_t errlen);
void _nd_topo_discard(const _nd_topo_t *t);
/* page.c calls this when it first commits to the topology (creating its
 * node arenas; do it lazily at the first page allocation, not at
 * _nd_page_init, so that programs and tests can still emulate after the
 * library's constructor). Afterwards replacing the topology fails, and
 * _nd_topo() read after it returns is final (it waits out a swap). */
void _nd_topo_freeze(void);
bool _nd_topo_frozen(void);
/* page.c: bytes taken (+) from or given back (-) to node's memory. In
 * emulation _nd_topo_node_free is the node's size minus this. Lock-free. */
void _nd_topo_account(int node, int64_t bytes);
/* Free memory of a node in bytes right now (sysfs MemFree, re-read at
 * most every 10 ms, or the emulated capacity minus use): for the
 * strict-binding watermark. 0 for a node without memory. */
uint64_t _nd_topo_node_free(int node);
/* The same for any built topology (nodactl). */
uint64_t _nd_topo_node_free_in(const _nd_topo_t *t, int node);
/* What each node can still give user pages (movable allocations) before
 * the kernel's low watermark, read now from /proc/zoneinfo (tens of us):
 * per zone of the node, free pages plus half its file cache, minus the
 * low watermark, its boost and the zone's lowmem reserve (protection)
 * against movable allocations; zones that cannot serve count 0.
 * avail[0..max) in bytes. 0, or -1 when it does not apply (emulated
 * topology, a sysfs root other than /sys: its nodes are not the
 * kernel's) or zoneinfo cannot be read. docs/arenas.md. */
int _nd_topo_node_avail(uint64_t *avail, int max);

/* Current CPU: rseq cpu_id (one TLS load), else getcpu; in emulation the
 * per-thread override set by nd_emulate_cpu() wins, and a real CPU id that
 * is not an emulated CPU is folded onto one. Always a valid index below
 * _nd_topo()->cpu_limit with cpu_node[cpu] >= 0. */
int _nd_topo_cpu_slow(void);
static inline int _nd_topo_cpu(void)
{
	int o = _nd_tls->cpu_override; /* the thread record's */
	if (nd_unlikely(o >= 0))
		return o;
	return _nd_topo_cpu_slow();
}

#endif /* ND_TOPO_H */
