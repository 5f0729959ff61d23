// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 6, the
 * policies. */
#ifndef ND_POLICY_H
#define ND_POLICY_H

/* ======================================================================
 * src/policy.c: memory policies and the choice of node.
 * ====================================================================== */

/* policy_parse.c: the checks every policy passes; its normal form in
 * *out (unused fields zeroed, the weighted set derived from the weights),
 * so equal policies compare equal byte for byte. 0, or -1 with err. */
int _nd_policy_normalize(const nd_policy_t *p, nd_policy_t *out, char *err, size_t errlen);
/* Formats into err (NULL allowed); returns -1. */
int _nd_policy_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void _nd_policy_zero(nd_policy_t *p);
/* policy.c: first node of m at or after from, or -1. */
int _nd_policy_mask_next(const nd_nodemask_t *m, int from);
/* A kernel mempolicy (mode with its flags, node mask of ND_MAX_NODES
 * bits) as nodalloc's policy, over the nodes of the live topology that
 * have memory. 0, or -1 when there is nothing to follow (default, local,
 * preferred without a node, no usable node). */
int _nd_policy_from_kernel(int kmode, const uint64_t *kmask, nd_policy_t *out);
/* The local policy (one object: slab.c and malloc.c pass it too). */
extern const nd_policy_t _nd_policy_local __attribute__((visibility("hidden")));

/* Reads NODALLOC_POLICY (a bad value is reported by name; local stays).
 * Without it, a kernel policy the process inherited (get_mempolicy: bind,
 * preferred, preferred-many, interleave, weighted interleave) becomes the
 * process default, so the heap follows `numactl -i all` or `-m 1`; the
 * kernel's default or local policy leaves nodalloc's local. */
int _nd_policy_init(void);
/* The policy in force for this thread (thread, else process, else local):
 * an interned, immutable policy that stays valid for the process's life. */
const nd_policy_t *_nd_policy_current(void);
/* True when the effective policy's mode is local. */
bool _nd_policy_is_local(void);
/* Every process default change adds 2 (even); the slab layer re-checks it
 * after it stored a key (internal.h, thread record). */
extern volatile uint32_t _nd_policy_gen __attribute__((visibility("hidden")));
/* The interned (immutable, process-lifetime) copy of a valid policy; NULL
 * with err and errno (EINVAL, ENOMEM). nd_malloc_policy's cache. */
const nd_policy_t *_nd_policy_intern(const nd_policy_t *p, char *err, size_t errlen);

/* Iterator over the nodes an allocation may use, in order. Lives on the
 * caller's stack; no allocation, no lock. */
typedef struct _nd_policy_iter {
	const nd_policy_t *pol; /* resolved: never NULL or mode DEFAULT */
	int want;        /* first choice = the intended node (statistics) */
	int cpu_node;    /* node of the allocating CPU (statistics local/other) */
	int pos;         /* position in the fallback list */
	const int *list; /* fallback list being walked */
	int len;
	bool interleave; /* want was chosen by interleave (interleave_hit) */
	uint8_t filter;  /* private: 0 all, 1 set only (bind), 2 set first */
	uint8_t phase;   /* private */
} _nd_policy_iter_t;

/* Start: pol NULL or mode DEFAULT = _nd_policy_current(). want_node >= 0
 * forces the first choice (a thread cache's node; for bind only if it is
 * in the set, else ignored); fallback then follows the policy's order seen
 * from want_node, and interleave's cursor does not move. Otherwise the
 * policy decides; interleave/weighted advance the thread's round-robin
 * cursor by npages (the node changes once it has had 2^k pages, times its
 * weight). Returns the first node (also it->want) or -1. */
int _nd_policy_first_n(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node, size_t npages);
/* = _nd_policy_first_n(it, pol, want_node, 1). */
int _nd_policy_first(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node);
/* Next node to try after the previous one was full, or -1. Never returns
 * want again. bind: only nodes of the set; preferred-many: the rest of the
 * set, then the other nodes; others: the whole fallback list. */
int _nd_policy_next(_nd_policy_iter_t *it);
/* After the allocation succeeded on got: counts it in the statistics
 * (_nd_stats_count(it->want, got, it->cpu_node, it->interleave)). */
void _nd_policy_count(const _nd_policy_iter_t *it, int got);
/* Interleave by offset inside one allocation: node of granule index g
 * (granule = ND_PAGE_SIZE << pol->granularity_shift; weighted: a node of
 * weight w has w consecutive granules per round). -1 if pol is not
 * interleave or weighted. pol NULL = current. */
int _nd_policy_node_for_granule(const nd_policy_t *pol, uint64_t g);
/* Granules in one round of an interleave (a granule per node of the set)
 * or weighted policy (one per unit of weight): granule g and g + round go
 * to the same node. 0 for any other mode or an empty set. */
uint64_t _nd_policy_round(const nd_policy_t *pol);
/* k with 4096 << k == bytes, k <= 18 (1 GiB); -1 for any other bytes:
 * the one rule of a granularity ("@gran", nd_malloc_interleaved,
 * nodactl --granularity). */
int _nd_policy_granularity_shift(uint64_t bytes);
/* Tests: forget this thread's interleave cursor (next pick = first node). */
void _nd_policy_reset_cursor(void);
/* Spread runs (interleave by offset): the granule index a run of
 * full_granules whole granules (plus a partial one if partial) starts at,
 * from this thread's spread cursor, which then advances by full_granules:
 * the node left with a partial granule starts the next run. When the
 * partial granule would otherwise come back to the same indexes (gcd of
 * whole granules and the round's length > 1), the start also moves by one
 * index per round of such runs. Granule i of the run is on
 * _nd_policy_node_for_granule(pol, start + i). docs/policy.md. */
uint64_t _nd_policy_spread_start(const nd_policy_t *pol, uint64_t full_granules, bool partial);
/* Tests: spread cursor back to 0 (next spread run starts at the first node). */
void _nd_policy_reset_spread_cursor(void);

/* Interleave or weighted: a mode that spreads memory over nodes. */
static inline bool _nd_policy_spreads(const nd_policy_t *p)
{
	return p->mode == ND_POLICY_INTERLEAVE || p->mode == ND_POLICY_WEIGHTED;
}

#endif /* ND_POLICY_H */
