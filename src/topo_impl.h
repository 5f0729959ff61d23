// SPDX-License-Identifier: MIT
/*
 * Private to the topology layer (topology.c, topo_spec.c, topo_sysfs.c):
 * the writable form of a topology and the helpers the three share.
 * No other file includes this (tests/check_layers.sh).
 */
#ifndef ND_TOPO_IMPL_H
#define ND_TOPO_IMPL_H

#include "internal.h"

#define ND_TOPO_LOCAL_DIST 10
#define ND_TOPO_REMOTE_DIST 20
#define ND_TOPO_MAX_DIST 255
#define ND_TOPO_MAX_CPUS ND_MAX_CPU_BITS

typedef struct topo_impl {
	_nd_topo_t pub; /* first: &pub is what callers see */
	size_t map_len; /* bytes of the block (_nd_os_small) */
	/* writable views of pub's tables */
	uint8_t *online, *has_mem, *has_cpu, *dist, *cpu_allowed, *mem_allowed;
	uint64_t *mem_total;
	int *cpu_node, *cpu_mem_node, *fb_len, *tier;
	int **fb, **fbt;
	int *fb_store, *fbt_store; /* node_limit rows of node_limit entries */
	int *scratch;              /* node_limit ints: node_load while building */
	int64_t *mem_used;         /* emulation: bytes accounted by page.c */
	uint64_t *free_cache, *free_stamp; /* real: MemFree and when read */
	int *cpus;                 /* the possible CPUs, ascending */
	int ncpus;
	int dense_limit;           /* every id below is a possible CPU */
	char root[256];            /* sysfs root ("" in emulation) */
} topo_impl_t;

static inline bool _nd_topo_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static inline bool _nd_topo_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline char _nd_topo_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* topology.c: err (if any) gets the formatted message. */
void _nd_topo_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* One zeroed block (_nd_os_small) holding every table of a topology of L nodes and C
 * CPUs (distances 10 local, 20 remote). NULL on failure (err set). */
topo_impl_t *_nd_topo_alloc(int L, int C, char *err, size_t errlen);
void _nd_topo_free(topo_impl_t *t);
/* Fallback lists, tiers, each CPU's memory node, the dense CPU list, from
 * the filled tables. used: node_limit bytes of scratch. */
void _nd_topo_build_lists(topo_impl_t *t, uint8_t *used);
/* The live topology's implementation, or NULL before init. */
topo_impl_t *_nd_topo_live(void);

/* Kernel lists ("0-3,8"): one unsigned decimal (chars used, 0 if none;
 * values above max reported as max + 1), and a whole list calling fn for
 * each id (length consumed, or -1 - offset of the error with *why set). */
int _nd_topo_parse_uint(const char *s, long max, long *out);
typedef int (*_nd_topo_list_fn)(long id, void *arg, int at);
int _nd_topo_walk_list(const char *s, long max, _nd_topo_list_fn fn, void *arg, const char **why);

/* topo_sysfs.c: "Node 0 MemTotal:  16310880 kB" -> bytes; false if the
 * key is absent. */
bool _nd_topo_meminfo_value(const char *buf, const char *key, uint64_t *out);

/* Without NUMA sysfs: one node 0 with every CPU of the affinity mask and
 * MemTotal from /proc/meminfo. */
const _nd_topo_t *_nd_topo_build_flat(char *err, size_t errlen);

#endif /* ND_TOPO_IMPL_H */
