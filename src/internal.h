/*
 * Internal cross-file interface of nodalloc, grouped by file in layer order.
 * A file may call only the sections above its own (see src/README.md).
 * Every function here is hidden (-fvisibility=hidden) and prefixed _nd_.
 */
#ifndef ND_INTERNAL_H
#define ND_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodalloc.h"

#define ND_PAGE_SHIFT 12
#define ND_PAGE_SIZE ((size_t)1 << ND_PAGE_SHIFT)
#define ND_HUGE_SHIFT 21
#define ND_HUGE_SIZE ((size_t)1 << ND_HUGE_SHIFT)
#define ND_CACHE_LINE 64

#define nd_likely(x) __builtin_expect(!!(x), 1)
#define nd_unlikely(x) __builtin_expect(!!(x), 0)
#define ND_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ND_TLS __thread __attribute__((tls_model("initial-exec")))

/* ======================================================================
 * src/os.c: the only file that makes system calls. Each wrapper returns
 * 0 (or a value >= 0) on success and a negative errno on failure; none
 * touches errno, none allocates.
 * ====================================================================== */

/* Kernel mempolicy modes (uapi/linux/mempolicy.h). */
#define ND_MPOL_DEFAULT 0
#define ND_MPOL_PREFERRED 1
#define ND_MPOL_BIND 2
#define ND_MPOL_INTERLEAVE 3
#define ND_MPOL_LOCAL 4
#define ND_MPOL_PREFERRED_MANY 5
#define ND_MPOL_WEIGHTED_INTERLEAVE 6
#define ND_MPOL_F_NODE (1 << 0)
#define ND_MPOL_F_ADDR (1 << 1)
#define ND_MPOL_MF_STRICT (1 << 0)
#define ND_MPOL_MF_MOVE (1 << 1)

/* Anonymous private read-write mapping; NULL on failure (*err = -errno).
 * noreserve: MAP_NORESERVE (reservation only, committed on touch). */
void *_nd_os_mmap(size_t len, bool noreserve, int *err);
/* As _nd_os_mmap but the result is aligned to align (a power of two). */
void *_nd_os_mmap_aligned(size_t len, size_t align, bool noreserve, int *err);
int _nd_os_munmap(void *p, size_t len);
int _nd_os_madvise(void *p, size_t len, int advice);
int _nd_os_mprotect(void *p, size_t len, int prot);
/* mask is a bitmap of maxnode bits (kernel convention: maxnode = bits+1
 * is handled inside). */
int _nd_os_mbind(void *p, size_t len, int mode, const uint64_t *mask, unsigned long maxnode_bits, unsigned flags);
int _nd_os_set_mempolicy(int mode, const uint64_t *mask, unsigned long maxnode_bits);
int _nd_os_get_mempolicy(int *mode, uint64_t *mask, unsigned long maxnode_bits, const void *addr, unsigned flags);
/* status[i] receives the node of pages[i] or a negative errno. */
int _nd_os_move_pages(int pid, unsigned long count, const void **pages, const int *nodes, int *status, int flags);
int _nd_os_getcpu(unsigned *cpu, unsigned *node);
/* mask of bytes bytes; returns the number of bytes the kernel wrote. */
int _nd_os_sched_getaffinity(int tid, size_t bytes, uint64_t *mask);
int _nd_os_sched_setaffinity(int tid, size_t bytes, const uint64_t *mask);
int _nd_os_gettid(void);
int _nd_os_getpid(void);
/* Whole-file read into buf (NUL-terminated, truncated to len-1 bytes).
 * Returns bytes read or a negative errno. */
long _nd_os_read_file(const char *path, char *buf, size_t len);
/* Write all of buf to fd (retries short writes). */
int _nd_os_write(int fd, const char *buf, size_t len);
int _nd_os_open(const char *path, int flags, int mode);
int _nd_os_close(int fd);
/* Directory listing: calls fn(name, arg) for each entry. */
int _nd_os_list_dir(const char *path, void (*fn)(const char *name, void *arg), void *arg);
/* Monotonic nanoseconds (vDSO clock_gettime; not a syscall on x86-64). */
uint64_t _nd_os_now_ns(void);
/* rseq area registered by glibc for the calling thread, or NULL. */
struct _nd_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;   /* kernel >= 6.3 */
	uint32_t mm_cid;    /* kernel >= 6.3 */
};
struct _nd_rseq_abi *_nd_os_rseq_area(void);
/* Size of the rseq area glibc registered (0 if none). */
unsigned _nd_os_rseq_size(void);
void _nd_os_abort(void) __attribute__((noreturn));
/* Shared file mapping (created and sized), for the live statistics export. */
void *_nd_os_map_shared_file(const char *path, size_t len, int *err);
int _nd_os_unlink(const char *path);
/* Futex wait/wake on a 32-bit word (private). */
int _nd_os_futex_wait(volatile uint32_t *addr, uint32_t val);
int _nd_os_futex_wake(volatile uint32_t *addr, int n);

/* ======================================================================
 * src/msg.c: the one message path. Formats into a stack buffer, writes
 * "nodalloc: warning: ..." to stderr (fd 2, or NODALLOC_MSG_FD), no malloc.
 * ====================================================================== */

void _nd_msg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void _nd_msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "nodalloc: fatal: ..." and aborts (invalid free and the like). */
void _nd_msg_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Formats into buf like snprintf; returns the length it would have had. */
int _nd_msg_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int _nd_msg_vformat(char *buf, size_t len, const char *fmt, va_list ap);
/* Writes text to fd as it is (for printers). */
void _nd_msg_out(int fd, const char *text);

/* A small spin-then-futex lock (no allocation, fork-resettable). */
typedef struct _nd_lock {
	volatile uint32_t v; /* 0 free, 1 locked, 2 locked with waiters */
} _nd_lock_t;
#define ND_LOCK_INIT { 0 }
void _nd_lock(_nd_lock_t *l);
void _nd_unlock(_nd_lock_t *l);
bool _nd_trylock(_nd_lock_t *l);

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

/* ======================================================================
 * src/topology.c: nodes, CPUs, distances, fallback lists, CPU -> memory
 * node. Real (sysfs) or emulated (spec string). Immutable after init
 * except by _nd_topo_emulate before the first allocation.
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
	/* fallback[n] points to fallback_len[n] memory nodes, nearest first. */
	const int *const *fallback;      /* node order */
	const int *const *fallback_tier; /* tier order */
	const int *fallback_len;
	const int *tier;            /* [node_limit] tier index, 0 = nearest */
} _nd_topo_t;

/* Init from NODALLOC_TOPOLOGY / NODALLOC_SYSFS_ROOT / /sys. 0 or -1. */
int _nd_topo_init(void);
const _nd_topo_t *_nd_topo(void);
/* Parse a spec into the live topology (before the first allocation). */
int _nd_topo_emulate(const char *spec, char *err, size_t errlen);
/* Read a sysfs-shaped tree rooted at root (fixtures). */
int _nd_topo_load_sysfs(const char *root, char *err, size_t errlen);
/* Free memory of a node in bytes right now (sysfs meminfo, or the
 * emulated capacity minus use): for the strict-binding watermark. */
uint64_t _nd_topo_node_free(int node);

/* Current CPU: rseq cpu_id (one TLS load), else getcpu; in emulation the
 * per-thread override set by nd_emulate_cpu() wins. */
extern ND_TLS int _nd_topo_cpu_override;
int _nd_topo_cpu_slow(void);
static inline int _nd_topo_cpu(void)
{
	if (nd_unlikely(_nd_topo_cpu_override >= 0))
		return _nd_topo_cpu_override;
	return _nd_topo_cpu_slow();
}

/* ======================================================================
 * src/stats.c: per-node NUMA counters with the kernel's meanings, counted
 * once per page-run allocation (like the kernel, once per allocation).
 * ====================================================================== */

int _nd_stats_init(void);
/* want: the node the policy intended; got: the node that served; cpu_node:
 * the node of the allocating CPU (not its memory node); interleave: the
 * policy was an interleave one. */
void _nd_stats_count(int want, int got, int cpu_node, bool interleave);
/* Byte accounting per node; delta may be negative. */
void _nd_stats_in_use(int node, int64_t delta);
void _nd_stats_committed(int node, int64_t delta);
void _nd_stats_reserved(int node, int64_t delta);
/* Print at exit if NODALLOC_STATS asks. */
void _nd_stats_at_exit(void);

/* ======================================================================
 * src/policy.c: memory policies and the choice of node.
 * ====================================================================== */

int _nd_policy_init(void);
/* The policy in force for this thread (thread, else process, else local). */
const nd_policy_t *_nd_policy_current(void);
/* True when the effective policy is plain local (the malloc fast path). */
bool _nd_policy_is_local(void);

/* Iterator over the nodes an allocation may use, in order. */
typedef struct _nd_policy_iter {
	const nd_policy_t *pol;
	int want;        /* first choice (the intended node, for statistics) */
	int pos;         /* position in the fallback list */
	const int *list; /* fallback list being walked */
	int len;
	bool interleave;
} _nd_policy_iter_t;

/* Start: want_node >= 0 forces the first choice (a thread cache's node);
 * otherwise the policy decides (interleave advances the thread's
 * round-robin cursor). Returns the first node or -1. */
int _nd_policy_first(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node);
/* Next node to try after the previous one was full, or -1 (bind: only
 * nodes of the set; others: the fallback list of want). */
int _nd_policy_next(_nd_policy_iter_t *it);
/* Interleave by offset inside one allocation: node of granule index g. */
int _nd_policy_node_for_granule(const nd_policy_t *pol, uint64_t g);

/* ======================================================================
 * src/page.c: node arenas. One virtual slot per node (bound to the node
 * with mbind before first touch) plus one "mixed" slot for allocations that
 * span nodes. A buddy allocator of 4 KiB pages in each slot; a page
 * descriptor per page (struct page) gives O(1) address -> node/run/owner.
 * ====================================================================== */

enum {
	ND_PG_TAIL = 0,   /* inside a free block or a run: not a head */
	ND_PG_FREE = 1,   /* head of a free buddy block */
	ND_PG_RUN = 2,    /* head of an allocated run */
};
enum {
	ND_USE_NONE = 0,
	ND_USE_SLAB,      /* user = slab header address, set on every page */
	ND_USE_LARGE,     /* head only: user = requested size */
	ND_USE_META,      /* internal metadata */
	ND_USE_PERCPU,
	ND_USE_TABLE,
};

typedef struct _nd_pagedesc {
	uint8_t state;     /* ND_PG_*: owned by page.c */
	uint8_t order;     /* buddy order of a free block head */
	uint8_t use;       /* ND_USE_*: owned by the layer that allocated */
	uint8_t flags;
	int32_t node;      /* serving node (meaningful in the mixed slot) */
	uint64_t npages;   /* run length, on a run head */
	uintptr_t user;    /* owned by the layer that allocated */
	uint32_t next, prev; /* buddy free list links (page.c) */
} _nd_pagedesc_t;

int _nd_page_init(void);
/* A run of npages on exactly node (no fallback, no statistics); aligned to
 * align_pages pages (a power of two). NULL when the node is full. */
void *_nd_page_alloc_exact(int node, size_t npages, size_t align_pages);
/* A run under a policy: first choice want_node (>= 0) or the policy's,
 * fallback by the policy, statistics counted. *got_node = serving node.
 * NULL with errno = ENOMEM when every allowed node is full. */
void *_nd_page_alloc(size_t npages, size_t align_pages, const nd_policy_t *pol, int want_node, int *got_node);
/* One contiguous run whose granules are spread over nodes by pol
 * (interleave or weighted, by offset), from the mixed slot. */
void *_nd_page_alloc_spread(size_t npages, const nd_policy_t *pol);
/* Free a run (p must be a run head from this file). Returns 0, or -1 if p
 * is not a run head (the caller reports the invalid free). */
int _nd_page_free(void *p);
/* Descriptor of the page containing p, or NULL if p is not in any slot. */
_nd_pagedesc_t *_nd_page_desc(const void *p);
/* Node of any address inside a slot, -1 otherwise. */
int _nd_page_node_of(const void *p);
/* Fork: take/release every arena lock. */
void _nd_page_fork_prepare(void);
void _nd_page_fork_parent(void);
void _nd_page_fork_child(void);

/* ======================================================================
 * src/slab.c: size classes, per-thread caches keyed by memory node,
 * per-node partial lists, remote frees.
 * ====================================================================== */

int _nd_slab_init(void);
/* Largest size served by slabs; larger goes to large.c. */
#define ND_SLAB_MAX ((size_t)32 << 10)
/* Small allocation on node (-1 = the thread's current memory node). */
void *_nd_slab_alloc(size_t size, int node);
void _nd_slab_free(void *p, _nd_pagedesc_t *d);
size_t _nd_slab_usable(const void *p, const _nd_pagedesc_t *d);
void _nd_slab_fork_prepare(void);
void _nd_slab_fork_parent(void);
void _nd_slab_fork_child(void);

/* ======================================================================
 * src/large.c: allocations above ND_SLAB_MAX, straight from page runs.
 * ====================================================================== */

void *_nd_large_alloc(size_t size, size_t align, const nd_policy_t *pol, int want_node);
void _nd_large_free(void *p, _nd_pagedesc_t *d);
size_t _nd_large_usable(const void *p, const _nd_pagedesc_t *d);

/* ======================================================================
 * src/percpu.c and src/table.c expose only the public API.
 * src/malloc.c: init order, the public allocation API and the override.
 * ====================================================================== */

/* Library init (idempotent, lazy on first use): options, topology, stats,
 * policy, page, slab. Returns false if the library cannot work. */
bool _nd_init(void);
extern volatile int _nd_initialized;
static inline bool _nd_ensure_init(void)
{
	return nd_likely(_nd_initialized > 0) || _nd_init();
}

#endif /* ND_INTERNAL_H */
