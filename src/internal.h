// SPDX-License-Identifier: MIT
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
#define ND_MAX_CPU_BITS 8192 /* CPU masks: the kernel's largest NR_CPUS on x86-64 */

#define nd_likely(x) __builtin_expect(!!(x), 1)
#define nd_unlikely(x) __builtin_expect(!!(x), 0)
#define ND_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ND_TLS __thread __attribute__((tls_model("initial-exec")))

/* A relaxed atomic load on a hot path. Under ThreadSanitizer it is one
 * (__atomic_load_n); otherwise a plain load, which x86-64 performs as a
 * single atomic access anyway: GCC does not fold __atomic loads into an
 * instruction's memory operand, which costs the free fast path three
 * instructions. Only for loads whose protocol is "relaxed" (a stale
 * value is harmless, internal.h says why at each field). */
#if defined(__SANITIZE_THREAD__)
#define ND_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ND_TSAN 1
#endif
#endif
#ifdef ND_TSAN
#define ND_LOAD_RELAXED(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#else
#define ND_LOAD_RELAXED(x) (x)
#endif

/* Executable invariants, active in ND_DEBUG builds (cmake -DND_DEBUG=ON):
 * ND_ASSERT(cond, "what must hold"). Release builds compile them out (the
 * condition is still type-checked, never evaluated). */
#ifdef ND_DEBUG
#define ND_ASSERT(cond, what)                                                        \
	do {                                                                          \
		if (nd_unlikely(!(cond)))                                             \
			_nd_assert_fail(__FILE__, __LINE__, #cond, what);              \
	} while (0)
#else
#define ND_ASSERT(cond, what) ((void)sizeof(!(cond)))
#endif
void _nd_assert_fail(const char *file, int line, const char *cond, const char *what)
	__attribute__((noreturn, cold));

/* Small helpers every layer uses (one copy each). */
static inline size_t _nd_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}
/* Bit i of a bitmap of 64-bit words. */
static inline bool _nd_bit_get(const uint64_t *m, size_t i)
{
	return (m[i >> 6] >> (i & 63)) & 1;
}
static inline void _nd_bit_set(uint64_t *m, size_t i)
{
	m[i >> 6] |= (uint64_t)1 << (i & 63);
}
/* floor(log2(v)) for v > 0; ceil(log2(v)) for v > 0 (0 for v <= 1). */
static inline unsigned _nd_log2_floor(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}
static inline unsigned _nd_log2_ceil(uint64_t v)
{
	return v <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(v - 1);
}

/* Raises the counter *v to at least to (relaxed; lock-free): the "highest
 * node index used + 1" counters the fork handlers read for lock arrays. */
static inline void _nd_atomic_raise(int *v, int to)
{
	int u = __atomic_load_n(v, __ATOMIC_RELAXED);
	while (to > u && !__atomic_compare_exchange_n(v, &u, to, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

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
/* Mode flags get_mempolicy returns OR-ed into the mode. */
#define ND_MPOL_F_STATIC_NODES (1 << 15)
#define ND_MPOL_F_RELATIVE_NODES (1 << 14)
#define ND_MPOL_F_NUMA_BALANCING (1 << 13)
#define ND_MPOL_MODE_FLAGS (ND_MPOL_F_STATIC_NODES | ND_MPOL_F_RELATIVE_NODES | ND_MPOL_F_NUMA_BALANCING)
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
/* Fresh mapping over [p, p+len) (MAP_FIXED): pages, page tables, policy
 * dropped. 0 or -errno. */
int _nd_os_mmap_fixed(void *p, size_t len, bool noreserve);
/* A new mapping at exactly p, never over another one: 0, -EEXIST, -errno. */
int _nd_os_mmap_at(void *p, size_t len, bool noreserve);
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
int _nd_os_getppid(void);
/* Secure execution (AT_SECURE: setuid/setgid/capabilities): the
 * environment must not steer the library. */
bool _nd_os_secure(void);
/* Whole-file read into buf (NUL-terminated, truncated to len-1 bytes).
 * Returns bytes read or a negative errno. */
long _nd_os_read_file(const char *path, char *buf, size_t len);
/* Write all of buf to fd (retries short writes). */
int _nd_os_write(int fd, const char *buf, size_t len);
int _nd_os_open(const char *path, int flags, int mode);
/* Bytes of address space RLIMIT_AS still allows (UINT64_MAX: no limit). */
uint64_t _nd_os_as_room(void);
/* read(2): bytes read (0 at the end) or -errno; EINTR retried. */
long _nd_os_read(int fd, void *buf, size_t len);
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
/* The live statistics export's files: lstat/fstat (the fields used),
 * pread (loops until len bytes or end of file: returns bytes read),
 * shared read-write mapping of an open file. */
typedef struct _nd_file_info {
	uint64_t dev, ino, size;
	uint32_t mode; /* S_IFMT type and permission bits */
	uint32_t uid;
} _nd_file_info_t;
int _nd_os_fstat(int fd, _nd_file_info_t *out);
int _nd_os_lstat(const char *path, _nd_file_info_t *out);
long _nd_os_pread(int fd, void *buf, size_t len, uint64_t off);
int _nd_os_ftruncate(int fd, uint64_t len);
void *_nd_os_map_shared_fd(int fd, size_t len, int *err);
int _nd_os_unlink(const char *path);
int _nd_os_getcwd(char *buf, size_t len);
unsigned _nd_os_geteuid(void);
/* pid's start time (/proc/PID/stat field 22) and owner (of /proc/PID):
 * pid and start time name one process. -ESRCH when it is gone. */
int _nd_os_proc_identity(int pid, uint64_t *start, unsigned *uid);
/* Run fn (async-signal-safe) when SIGTERM kills the process, then die of
 * it as before; only if SIGTERM has its default action now (never takes
 * over a handler of the program). 0, or -EBUSY if the program has one. */
int _nd_os_on_sigterm(void (*fn)(void));
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
/* Formats into buf like snprintf (msg.c's own formatter: flags - 0 #,
 * width and precision, lengths hh h l ll z j t, d i u x X o c s p %);
 * returns the length it would have had. */
int _nd_msg_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int _nd_msg_vformat(char *buf, size_t len, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* An error of an API call (bad argument, no such node): the caller hears
 * of it by errno or the return value; the line is printed only under
 * NODALLOC_VERBOSE=1 (issue 14). Configuration errors use _nd_msg_error. */
void _nd_msg_api(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "nodalloc: info: ..." under NODALLOC_VERBOSE=1 only (what the library
 * decided on its own, e.g. following an inherited kernel policy). */
void _nd_msg_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* options.c pushes these down once it has read them (msg.c never calls
 * up): the message descriptor (NODALLOC_MSG_FD; <= 0 means stderr) and
 * NODALLOC_VERBOSE. Before that: stderr, not verbose. */
void _nd_msg_set_fd(int fd);
int _nd_msg_fd(void);
void _nd_msg_set_verbose(bool on);
bool _nd_msg_verbose(void);
/* Writes text to fd as it is (for printers). */
void _nd_msg_out(int fd, const char *text);


/* ======================================================================
 * src/lock.c: the library's lock and the registry of every lock.
 * ====================================================================== */

/* A small spin-then-futex lock (no allocation, fork-resettable). */
typedef struct _nd_lock {
	volatile uint32_t v; /* 0 free, 1 locked, 2 locked with waiters */
} _nd_lock_t;
#define ND_LOCK_INIT { 0 }
void _nd_lock(_nd_lock_t *l);
void _nd_unlock(_nd_lock_t *l);
bool _nd_trylock(_nd_lock_t *l);

/* Lock order: a thread holding a lock takes only locks of a higher rank
 * (arrays: ascending index). Fork takes them all in this order. Every
 * lock of the library is declared with ND_LOCK_DEFINE / ND_LOCK_ARRAY /
 * ND_LOCK_DYN_ARRAY / ND_LOCK_FIELD below (tests/check_locks.sh refuses
 * any other, and checks that each rank here names exactly one registered
 * lock class and each class a rank here). The 14 locks, by rank:
 * file: variable (what it protects; what it may take while held). */
typedef enum _nd_lock_rank {
	ND_RANK_TABLE_FMT = 10,   /* table.c: fmt_lock (nd_table_format's per-node buffer) */
	ND_RANK_STATS_SNAP = 20,  /* stats.c: snap_lock (the printers' snapshot) */
	ND_RANK_PERCPU = 30,      /* percpu.c: pc_lock (setup, alloc, free; takes page, topology swap) */
	ND_RANK_INIT = 40,        /* malloc.c: init_lock (the init sequence; takes everything below) */
	ND_RANK_POLICY_POOL = 50, /* policy.c: pool_lock (interned policies) */
	ND_RANK_POLICY_PROC = 51, /* policy.c: proc_lock (process default; then thread) */
	ND_RANK_THREAD = 55,      /* thread.c: thread_lock (thread records: pool, list) */
	ND_RANK_SLAB_THREADS = 60,/* heap.c: pheap_lock (the parked policy heaps' pool) */
	ND_RANK_SLAB_NODE = 61,   /* meta.c: nodes[].lock (per node: parked heaps, metadata, slab map creation; then page) */
	ND_RANK_LARGE_CACHE = 65, /* large.c: lnodes[].lock (one per node, its cached runs; takes nothing) */
	ND_RANK_PAGE_SETUP = 70,  /* page.c: g.lock (reservation setup; takes topology swap for the freeze) */
	ND_RANK_PAGE_ARENA = 71,  /* page.c: g.arenas[].lock (one per slot: buddy lists, descriptors) */
	ND_RANK_PAGE_WMARK = 72,  /* room.c: wm.lock (reading the kernel's watermarks; takes no other lock) */
	ND_RANK_TOPO_SWAP = 80,   /* topology.c: swap_lock (replacing the live topology, freeze) */
} _nd_lock_rank_t;

/* One registry entry: a static lock, a static array of structs holding a
 * lock, or an array whose address is stored in *dyn (set at run time). */
typedef struct _nd_lock_class {
	const char *name;
	int rank;
	_nd_lock_t *lock;     /* static: the lock, or the first element's */
	void *const *dyn;     /* dynamic: where the array's address is (else NULL) */
	size_t dyn_off;       /* dynamic: offset of the lock in an element */
	const int *count;     /* elements in use now (NULL: fixed) */
	int fixed;            /* elements when count is NULL */
	size_t stride;        /* bytes between elements */
} _nd_lock_class_t;

#define ND_LOCK_CLASS_(id, ...)                                                        \
	static const _nd_lock_class_t id __attribute__((used, section("nd_lock_classes"), \
							 aligned(8))) = { __VA_ARGS__ }
/* static _nd_lock_t var, registered. */
#define ND_LOCK_DEFINE(var, rank_)                                                  \
	static _nd_lock_t var = ND_LOCK_INIT;                                       \
	ND_LOCK_CLASS_(var##_lock_class, .name = #var, .rank = (rank_), .lock = &var, .fixed = 1)
/* arr[i].field for i < *count_ptr (or n when count_ptr is NULL). */
#define ND_LOCK_ARRAY(id, arr, field, n, count_ptr, rank_)                          \
	ND_LOCK_CLASS_(id, .name = #arr "[]." #field, .rank = (rank_), .lock = &(arr)[0].field, \
		       .count = (count_ptr), .fixed = (n), .stride = sizeof((arr)[0]))
/* One lock inside a static object (a field of a struct variable). */
#define ND_LOCK_FIELD(id, lvalue, rank_) \
	ND_LOCK_CLASS_(id, .name = #lvalue, .rank = (rank_), .lock = &(lvalue), .fixed = 1)
/* (*base_ptr)[i] of type T, lock at field, for i < *count_ptr. */
#define ND_LOCK_DYN_ARRAY(id, base_ptr, T, field, count_ptr, rank_)                  \
	ND_LOCK_CLASS_(id, .name = #base_ptr "[]." #field, .rank = (rank_),           \
		       .dyn = (void *const *)(base_ptr), .dyn_off = offsetof(T, field), \
		       .count = (count_ptr), .stride = sizeof(T))

/* The registered classes sorted by rank (tests, lock-order listing). */
int _nd_lock_classes(const _nd_lock_class_t **out, int max);
/* malloc.c's pthread_atfork handlers: take every registered lock in rank
 * order / release them / reset them in the child. */
void _nd_lock_fork_prepare(void);
void _nd_lock_fork_parent(void);
void _nd_lock_fork_child(void);

/* ======================================================================
 * src/thread.c: the thread record. The library's only initial-exec TLS is
 * one pointer, _nd_tls, to the calling thread's record (so the library can
 * be dlopen'ed: static TLS has room for a pointer, not for kilobytes).
 * Each layer keeps its per-thread state in its part of the record.
 * ====================================================================== */

struct _nd_slab_hot;
struct nd_heap;
/* The slab layer's key that no CPU pair ever equals (rseq's cpu_id_start
 * always holds a real CPU number). */
#define ND_KEY_NONE UINT64_MAX
#define ND_SLAB_DIRECT 256 /* malloc sizes 0..ND_SLAB_DIRECT index dir[] */
/* dir[] is offset so that every class's sizes (16k+1 .. 16m) start at an
 * index that is a multiple of 16: changing a class's slab is a few aligned
 * 16-byte stores. */
#define ND_SLAB_DIR0 15
#define ND_PCACHE 4 /* nd_malloc_policy's cache: policy objects remembered */
/* Size classes (docs/malloc.md): 16..128 by 16, then 4 per power of two. */
#define ND_SLAB_CLASSES 40

/* slab.c's remote-free buffer, one entry per size class: objects freed by
 * this thread into one slab it does not own, chained through word 0 (each
 * already marked free), sent home as one splice onto the slab's tfree when
 * n reaches max, when a free of another slab of the class takes the entry,
 * when the thread takes a new slab or exits, and at fork. Owner: the
 * record's thread only (no other thread reads it). While an object waits
 * here its slab counts it as out (used), so the slab cannot be released. */
typedef struct _nd_rfree {
	struct _nd_slab_hot *slab; /* NULL: entry empty */
	void *head, *tail;         /* newest and oldest object of the chain */
	uint32_t n, max;           /* objects on the chain; flush at max */
} _nd_rfree_t;

/* Owner and synchronisation: every field belongs to the record's thread,
 * except those marked "atomic": key, lkey and pc[].key may be set to
 * ND_KEY_NONE by any thread (relaxed stores; thread.c's invalidation, for
 * a process policy change), so the owner reads them with relaxed loads
 * and re-checks after it stores a fresh one (_nd_thread_key_store). */
typedef struct _nd_thread {
	/* ---- slab.c: the malloc fast path (docs/malloc.md) ---- */
	/* dir[ND_SLAB_DIR0 + size]: the resolved heap's current slab of
	 * size's class (meaningful only while key matches) */
	struct _nd_slab_hot *dir[ND_SLAB_DIR0 + ND_SLAB_DIRECT + 1];
	const uint64_t *cpu64;  /* the CPU twice (rseq cpu_id_start:cpu_id, or cpu_pair) */
	uint64_t key;           /* atomic: *cpu64 when heap was resolved, else NONE */
	uint64_t lkey;          /* atomic: the same for lheap (nd_malloc_local) */
	struct nd_heap *heap;   /* the thread policy's heap (dir mirrors it) */
	struct nd_heap *lheap;  /* the CPU's memory node's heap */
	struct nd_heap **heaps; /* [nheaps]: node heaps by wanted node */
	int nheaps;
	int nfast;              /* nheaps, 0 in check mode: nd_malloc_onnode's bound */
	_Alignas(8) int32_t cpu_pair[2]; /* emulated CPU, or the CPU without rseq */
	const nd_policy_t *hpol;/* policy heap's refills use (interned) */
	struct _nd_pcache {     /* nd_malloc_policy: a caller's object -> heap */
		const nd_policy_t *user; /* the caller's pointer, NULL = unused */
		uint64_t key;            /* atomic: *cpu64 when resolved, else NONE */
		uint64_t mode_flags;     /* user's mode and flags then (8 bytes) */
		uint64_t bits0;          /* user's nodes.bits[0] then */
		uint64_t w0;             /* user's weights[0..7] then (weighted) */
		uint32_t gran;           /* user's granularity_shift then */
		uint32_t max;            /* largest size served from the heap */
		struct nd_heap *heap;
		const nd_policy_t *pol;  /* interned copy (refills) */
	} pc[ND_PCACHE];
	unsigned pc_next;       /* next entry to replace */
	uint64_t slow;          /* malloc slow paths taken (tests) */
	uint64_t rf_sent;       /* remote-free splices sent (tests) */
	/* per class, for _nd_slab_class_stats (written by this thread with
	 * relaxed stores, read by a snapshot with relaxed loads; folded into
	 * slab.c's totals when the thread exits) */
	uint64_t cls_remote[ND_SLAB_CLASSES]; /* frees into slabs of other threads */
	uint64_t cls_refill[ND_SLAB_CLASSES]; /* malloc slow paths (free list empty, or a new heap) */
	_nd_rfree_t rf[ND_SLAB_CLASSES]; /* remote frees waiting to go home */
	struct nd_heap *ph[8];  /* policy heaps (bind, interleave, weighted) */
	int nph;
	/* ---- policy.c ---- */
	const nd_policy_t *pol_thr; /* NULL = inherit the process's */
	const nd_policy_t *pol_eff; /* cached effective policy */
	uint32_t pol_gen;           /* generation pol_eff is from */
	int il_node;                /* interleave cursor: node in turn (-1 none) */
	int32_t il_credit[64];      /* pages each node (id mod 64) may still have */
	uint64_t spread_cursor, spread_partials;
	/* ---- topology.c ---- */
	int32_t cpu_override;       /* nd_emulate_cpu, -1 = real */
	struct _nd_rseq_abi *rseq;  /* NULL = not looked up, (void *)1 = none */
	/* ---- percpu.c ---- */
	int fb_cpu;
	unsigned fb_count;
	/* ---- thread.c ---- */
	struct _nd_thread *pool_next; /* free records (thread lock) */
	struct _nd_thread *all_next;  /* every record ever made (append only) */
} _nd_thread_t;

/* The shared read-only record of a thread that has none yet: every key
 * NONE, cpu_override -1. Never written: writers call _nd_thread_self(). */
extern const _nd_thread_t _nd_thread_boot __attribute__((visibility("hidden")));
extern ND_TLS _nd_thread_t *_nd_tls __attribute__((visibility("hidden")));
/* The calling thread's record, made on first use (NULL only if no memory). */
_nd_thread_t *_nd_thread_make(void);
static inline _nd_thread_t *_nd_thread_self(void)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(t != &_nd_thread_boot))
		return t;
	return _nd_thread_make();
}
/* Force every thread's slab keys to NONE (a process policy change): each
 * thread's next allocation re-resolves. */
void _nd_thread_invalidate_all(void);
/* The same for one record (the thread's own policy or CPU changed). */
void _nd_thread_invalidate(_nd_thread_t *t);
/* Every record ever made (in use or pooled), under the thread lock:
 * fn(record, arg) (statistics: it must not allocate or take a lock of a
 * lower rank). */
void _nd_thread_each(void (*fn)(_nd_thread_t *t, void *arg), void *arg);
/* Thread exit: fn(record) runs first (heap.c parks the heaps), then the
 * record goes back to the pool and the thread's pointer to the boot one. */
void _nd_thread_set_exit_hook(void (*fn)(_nd_thread_t *));
/* What the thread-exit destructor does, for the calling thread (tests). */
void _nd_thread_exit_now(void);
/* The library is unloaded (its destructor): the thread-exit destructor is
 * unregistered, records stay as they are. */
void _nd_thread_fini(void);

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
/* Byte accounting per node; delta may be negative. */
void _nd_stats_in_use(int node, int64_t delta);
void _nd_stats_committed(int node, int64_t delta);
void _nd_stats_reserved(int node, int64_t delta);
/* Live export (NODALLOC_STATS_EXPORT): the child of a fork stops counting
 * into the parent's file; readers decode an export. */
void _nd_stats_fork_child(void);
/* Bytes of an export (nodactl sizes the file or memfd it hands over). */
size_t _nd_stats_export_size(void);
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
/* Print at exit if NODALLOC_STATS asks (1/yes/text: the table, json:
 * JSON; to the message descriptor). */
void _nd_stats_at_exit(void);
/* Tests: zero every counter. */
void _nd_stats_reset(void);

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
/* Smallest k with 4096 << k >= bytes (at most 18 = 1 GiB): for
 * nd_malloc_interleaved's granularity argument. */
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
	ND_PG_HOLE = 3,   /* first page of a slot's part not mapped (yet): npages */
};
enum {
	ND_USE_NONE = 0,
	ND_USE_SLAB,      /* user = slab header address, set on every page */
	ND_USE_LARGE,     /* head only: user = requested size */
	ND_USE_META,      /* internal metadata */
	ND_USE_PERCPU,
	ND_USE_TABLE,
	ND_USE_HEAP,      /* heap_api.c (nd_heap_t): every page, user = chunk header */
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
/* Descriptor ownership (docs/arenas.md): state, order, flags, next/prev
 * belong to page.c; on a free head npages counts its committed pages.
 * node is set on every run head, and on every page of a mixed-slot run.
 * use/user belong to the allocating layer: page.c clears them on the head
 * when it frees a run; the layer clears those it set on other pages. */
#define ND_PGF_DIRTY 0x01  /* page.c: page counted as committed */
#define ND_PGF_PLACED 0x02 /* page.c: mixed-slot page, node is valid */
#define ND_PGF_KIL 0x04    /* page.c: mixed-slot run head, interleaved by the kernel */

/* ---- buddy.c: the buddy allocator of one slot over its descriptors.
 * Pure (no system call, no lock, no global): the caller holds the slot's
 * lock. Page indexes are relative to the slot. ---- */
#define ND_BUDDY_NIL UINT32_MAX
#define ND_BUDDY_MAX_ORDER 28  /* 1 TiB slot of 4 KiB pages: indexes fit uint32 */
#define ND_BUDDY_SCAN_ORDER 17 /* _nd_buddy_check counts dirty flags below this order */
typedef struct _nd_buddy {
	_nd_pagedesc_t *desc;  /* the slot's descriptors, 2^order_max of them */
	uint64_t free_pages;   /* pages in free blocks */
	uint64_t dirty_free;   /* committed pages in free blocks (written under the slot lock, read lock-free: atomic) */
	uint64_t nblocks;      /* free blocks */
	unsigned order_max;    /* the slot holds 2^order_max pages */
	unsigned purge_order;  /* free blocks of this order or more are clean (invariant I) */
	uint32_t head[ND_BUDDY_MAX_ORDER + 1]; /* free lists by order (ND_BUDDY_NIL: empty) */
} _nd_buddy_t;
/* An empty slot (no free block: the caller gives the usable range). */
void _nd_buddy_init(_nd_buddy_t *b, _nd_pagedesc_t *desc, unsigned order_max, unsigned purge_order);
/* Link block i of order o (dirty: 0 or 2^o committed pages) / unlink it
 * (its head becomes a TAIL). */
void _nd_buddy_push(_nd_buddy_t *b, uint32_t i, unsigned o, uint64_t dirty);
void _nd_buddy_del(_nd_buddy_t *b, uint32_t i);
/* Takes a free block of order >= k split down to k: its index (NIL if
 * none) and its dirty page count in *dirty. */
uint32_t _nd_buddy_take(_nd_buddy_t *b, unsigned k, uint64_t *dirty);
/* Tail of a taken block (index i, 2^k pages, d dirty) after a run of n
 * pages back to the free lists, unmerged. Returns the tail's dirty pages. */
uint64_t _nd_buddy_give_tail(_nd_buddy_t *b, uint64_t i, unsigned k, uint64_t d, uint64_t n);
/* [s, s+len) back as aligned blocks, all clean or all dirty; merge: with
 * free buddies (a freed run), else not (their buddies are in use). */
void _nd_buddy_give(_nd_buddy_t *b, uint64_t s, uint64_t len, bool dirty, bool merge);
/* Head i of a run of n pages served by node. */
void _nd_buddy_mark_run(_nd_buddy_t *b, uint32_t i, uint64_t n, int node);
/* After a purge pass: merge clean free buddies (one pass per order). */
void _nd_buddy_merge_clean(_nd_buddy_t *b);
uint64_t _nd_buddy_count_dirty(const _nd_buddy_t *b, uint64_t i, uint64_t n);
void _nd_buddy_clear_dirty(_nd_buddy_t *b, uint64_t i, uint64_t n);
/* Largest free order, -1 if none. */
int _nd_buddy_largest(const _nd_buddy_t *b);
/* Walk the slot and check every descriptor invariant; 0 or -1 with err. */
int _nd_buddy_check(const _nd_buddy_t *b, char *err, size_t errlen);

/* ---- the page level's shared state (page.c owns it; room.c, purge.c
 * and spread.c work on it). One per slot: ---- */
typedef struct _nd_arena {
	_nd_lock_t lock;  /* protects bd (free lists, free-block descriptors) and mapped */
	int node;         /* node id, -1 for the mixed slot: fixed at setup */
	bool usable;      /* fixed at setup */
	bool mixed;       /* fixed at setup */
	char *base;       /* fixed at setup */
	_nd_buddy_t bd;
	uint64_t mapped;  /* pages of the slot mapped (lazy reservation, page.c); lock */
	/* Atomics (no lock). For the mixed slot only cap is meaningful. */
	uint64_t used;       /* pages in runs served by this node (node and mixed slots) */
	uint64_t cap;        /* hard capacity in pages (emulated memory size) */
	uint64_t committed;  /* pages this node has counted in _nd_stats_committed */
	uint64_t floor;      /* no zoneinfo: bytes kept free (max(MemTotal/64, 32 MiB)) */
	/* Headroom (room.c; atomics written under its lock): what the node
	 * could still give at the last /proc/zoneinfo read, and `committed`
	 * at the last two reads. */
	uint64_t wm_avail;   /* pages */
	uint64_t wm_c_last, wm_c_prev;
	/* Decay (purge.c; atomic): ns when the slot's oldest dirty free pages
	 * were freed, 0 when it holds none. */
	uint64_t dirty_since;
} __attribute__((aligned(ND_CACHE_LINE))) _nd_arena_t;

typedef struct _nd_page_global {
	_nd_lock_t lock;      /* setup; taken first at fork */
	volatile int ready;
	int failed;           /* setup failed (reported once, never retried) */
	uintptr_t base;       /* reservation start (0 before setup) */
	uintptr_t total;      /* bytes of all slots (0 before setup) */
	unsigned slot_shift;
	uintptr_t slot_mask;
	unsigned order_max;   /* slot_shift - ND_PAGE_SHIFT */
	int node_limit;       /* node slots; the mixed slot has index node_limit */
	int nslots;
	_nd_pagedesc_t *desc;
	size_t desc_bytes;
	_nd_arena_t *arenas;
	size_t arenas_bytes;
	bool lazy;            /* slots mapped on demand (address space limit) */
	bool bind;            /* real topology: mbind slots and granules */
	bool strict;          /* MPOL_BIND (else MPOL_PREFERRED) */
	bool check_free;      /* real topology: headroom check before committing */
	bool huge_spread;     /* MADV_HUGEPAGE on spreads with granules >= 2 MiB */
	int thp;              /* ND_THP_*: NODALLOC_THP */
	bool thp_runs;        /* MADV_HUGEPAGE on the 2 MiB pages of big node runs */
	int advice;           /* MADV_DONTNEED or MADV_FREE */
	uint64_t purge_pages; /* runs of at least this many pages are purged on free */
	unsigned purge_order; /* free blocks of this order or more are clean */
	uint64_t dirty_limit; /* dirty free pages a slot keeps before a purge pass */
	uint64_t decay_ns;    /* dirty free pages older than this are purged (0: off) */
} _nd_page_global_t;
extern _nd_page_global_t _nd_page_g __attribute__((visibility("hidden")));
#define ND_THP_NEVER 0
#define ND_THP_MADVISE 1  /* MADV_HUGEPAGE when the system's mode is madvise or always */
#define ND_THP_ALWAYS 2   /* MADV_HUGEPAGE always */

/* Smallest k with 2^k >= x (0 for x <= 1): buddy orders. */
static inline unsigned _nd_page_ceil_log2(uint64_t x)
{
	return x <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(x - 1);
}

/* ---- reserve.c: the reservation (page.c's setup calls these under its
 * lock). ---- */
/* The page level's settings (g) from the options: binding mode, purge
 * threshold and advice, dirty limit, decay, THP. */
void _nd_reserve_read_options(void);
/* The layout: *res (slot 0's start), *desc (descriptors), *shift (slot
 * size). Sets g.lazy. 0, or -1 reported once ("initialization failed"). */
int _nd_reserve_layout(const _nd_topo_t *t, int nslots, void **res, void **desc, unsigned *shift);
/* Slot s of the layout in g: node, capacity, binding, free space. */
void _nd_reserve_slot_init(_nd_arena_t *a, int s, const _nd_topo_t *t);

/* ---- room.c: a node's room: hard capacity, the kernel's watermarks
 * (headroom), committed pages, binding a range to the node. ---- */
void _nd_room_stats(void (*fn)(int, int64_t), int node, int64_t pages);
/* Pages counted as committed for na's node (+/-; never below 0). */
void _nd_room_committed(_nd_arena_t *na, int64_t pages);
/* Charges n pages to na: capacity, and on a real node the headroom for
 * check_pages fresh pages (0: no check). false: no room (nothing charged). */
bool _nd_room_take(_nd_arena_t *na, uint64_t n, uint64_t check_pages);
void _nd_room_give(_nd_arena_t *na, uint64_t n);
/* A newly mapped range [i, i+n) of slot a's pages: bound to its node,
 * huge page advice (NODALLOC_THP=always/never). */
void _nd_room_fresh(_nd_arena_t *a, uint64_t i, uint64_t n);
/* Lazy reservation: map more of slot a (lock held) so that a free block
 * of order k exists; false if the slot is full or the mapping fails. */
bool _nd_room_grow(_nd_arena_t *a, unsigned k);
/* mbind [p, p+len) to node (bind or preferred, NODALLOC_STRICT). */
int _nd_room_bind(void *p, size_t len, int node);

/* ---- purge.c: giving memory back to the OS. ---- */
/* [p, p+len) of slot a back to the OS; it reads as zero afterwards
 * whatever the kernel says. true when it kept its mapping (and policy). */
bool _nd_purge_range(const _nd_arena_t *a, void *p, size_t len, int advice);
/* Every dirty free block of a node slot purged (merged madvise calls),
 * then merged. Slot lock held. Returns pages purged. */
uint64_t _nd_purge_slot(_nd_arena_t *a);
/* After a free put dirty pages back (slot lock held): the dirty limit,
 * and the decay clock started. */
void _nd_purge_after_free(_nd_arena_t *a);
/* Decay: purge slots whose dirty pages have been free for decay_ns
 * (called on page-level calls; no thread). */
void _nd_purge_decay(void);

/* ---- spread.c: runs whose granules are spread over nodes (the mixed
 * slot). The caller (page.c) has checked the arguments and set up. ---- */
void *_nd_spread_alloc(size_t npages, const nd_policy_t *pol, bool fixed, uint64_t first);
/* Free of a mixed-slot run already claimed (head made a TAIL). */
void _nd_spread_free(_nd_arena_t *m, uint32_t i, uint64_t n, bool kil);

int _nd_page_init(void);
/* A run of npages on exactly node (no fallback, no statistics); aligned to
 * align_pages pages (a power of two). NULL when the node is full. */
void *_nd_page_alloc_exact(int node, size_t npages, size_t align_pages);
/* A run under a policy: first choice want_node (>= 0) or the policy's,
 * fallback by the policy, statistics counted. *got_node = serving node.
 * NULL with errno = ENOMEM when every allowed node is full. */
void *_nd_page_alloc(size_t npages, size_t align_pages, const nd_policy_t *pol, int want_node, int *got_node);
/* One contiguous run whose granules are spread over nodes by pol
 * (interleave or weighted, by offset), from the mixed slot. Granule i is
 * on the node of granule index start + i, start from the thread's spread
 * cursor (_nd_policy_spread_start): granules stay aligned, the first node
 * rotates from run to run. */
void *_nd_page_alloc_spread(size_t npages, const nd_policy_t *pol);
/* The same with granule i on the node of index first + i, the spread
 * cursor untouched (tables: a fixed, reported layout). */
void *_nd_page_alloc_spread_from(size_t npages, const nd_policy_t *pol, uint64_t first);
/* Free a run (p must be a run head from this file). Returns 0, or -1 if p
 * is not a run head (the caller reports the invalid free). */
int _nd_page_free(void *p);
/* Resize a node-slot run in place (realloc). grow: take the free pages
 * right after it (node capacity and watermark as for a new run); shrink:
 * give its tail back as a free would. 0, or -1 with nothing changed (not
 * a node-slot run head, neighbours in use, slot end, node full). */
int _nd_page_grow(void *run, size_t new_npages);
int _nd_page_shrink(void *run, size_t new_npages);
/* Zero the first bytes of a run from this file, skipping pages that
 * already read as zero (fresh or purged): calloc, zero-filled tables. */
void _nd_page_zero(void *run, size_t bytes);
/* Descriptor of the page containing p, or NULL if p is not in any slot. */
_nd_pagedesc_t *_nd_page_desc(const void *p);
/* Node of any address inside a slot, -1 otherwise. */
int _nd_page_node_of(const void *p);
/* Return committed free pages of node's slot (-1: every slot) to the OS
 * now (malloc_trim). Returns bytes purged. */
size_t _nd_page_trim(int node);
/* Introspection for tests, tools and benchmarks. node -1 = mixed slot. */
typedef struct _nd_page_info {
	bool usable;
	void *base;               /* slot start */
	size_t slot_bytes;
	uint64_t slot_pages;
	uint64_t mapped_pages;    /* of the slot (lazy reservation: what it grew to) */
	uint64_t free_pages;      /* in free buddy blocks of this slot */
	uint64_t dirty_pages;     /* committed pages inside free blocks */
	uint64_t free_blocks;
	int largest_order;        /* largest free block, -1 if none */
	uint64_t used_pages;      /* in runs served by this node (both slots) */
	uint64_t capacity_pages;  /* hard capacity (emulation), else UINT64_MAX */
	uint64_t committed_pages; /* counted in bytes_committed for this node */
	uint64_t purge_pages;     /* runs this large are purged when freed */
	unsigned purge_order;     /* free blocks this large are always clean */
} _nd_page_info_t;
int _nd_page_info(int node, _nd_page_info_t *out);
/* Walk a slot and check every descriptor invariant; 0 or -1 with err. */
int _nd_page_check(int node, char *err, size_t errlen);

/* ======================================================================
 * src/slab.c: size classes, slabs and their free lists, remote frees,
 * every free (the structures of meta.c, slab.c and heap.c are below).
 * ====================================================================== */

int _nd_slab_init(void);
/* Largest size served by slabs; larger goes to large.c. */
#define ND_SLAB_MAX ((size_t)32 << 10)
unsigned _nd_slab_class_of(size_t size);   /* size <= ND_SLAB_MAX */
size_t _nd_slab_class_size(unsigned c);
/* True if a class serves size bytes aligned to align. */
bool _nd_slab_fits(size_t size, size_t align);
/* d = _nd_page_desc(p) with d->use == ND_USE_SLAB. Reports (fatal) an
 * interior pointer, a never-allocated object and a double free. */
void _nd_slab_free(void *p, _nd_pagedesc_t *d);
size_t _nd_slab_usable(const void *p, const _nd_pagedesc_t *d);
/* NULL if p is the start of an object of its slab, else why not. */
const char *_nd_slab_invalid(const void *p, const _nd_pagedesc_t *d);
/* What the thread-exit destructor does: the calling thread's heaps give
 * their slabs with nothing live back and are parked for adoption (tests). */
void _nd_slab_thread_exit(void);
/* Times this thread's malloc left the fast path (tests). */
uint64_t _nd_slab_slow_count(void);
/* The calling thread's remote-free buffer (_nd_rfree_t) goes home now
 * (fork's prepare handler; tests). */
void _nd_slab_flush_remote(void);
/* Objects waiting in the calling thread's remote-free buffer, and the
 * splices it has sent since its record was made (tests). */
unsigned _nd_slab_remote_pending(void);
uint64_t _nd_slab_remote_sent(void);
/* Per size class figures (issue 13), with no cost on the fast paths:
 * derived from the slab headers and from counters kept on the slow and
 * remote paths only. A snapshot: read without stopping the threads that
 * change them (each figure is exact for a quiescent process). */
typedef struct _nd_slab_class_stats {
	uint32_t size;         /* object size of the class */
	uint64_t slabs;        /* live slabs */
	uint64_t slab_bytes;   /* bytes of their page runs */
	uint64_t capacity;     /* objects those slabs hold */
	uint64_t objects;      /* objects out (handed out, or freed by another
				* thread and not collected by the owner yet) */
	uint64_t remote_frees; /* frees by a thread (with a record) that did not own the slab */
	uint64_t refills;      /* malloc slow paths of the class (free list empty) */
} _nd_slab_class_stats_t;
/* Fills out[0 .. ND_SLAB_CLASSES) (n entries at most); returns the count. */
int _nd_slab_class_stats(_nd_slab_class_stats_t *out, int n);

/* ---- the malloc/free fast paths (docs/malloc.md). The hot structures
 * and the one pop and push live here, used by malloc.c's inlined paths
 * and slab.c's and heap.c's alike. slab.c owns every field.
 *
 * Owner and synchronisation of the hot fields: free, used: the owner
 * thread of the slab's heap (or whoever took a parked heap out of its
 * pool). start, mul: fixed while the slab exists. lim, tp: written by the
 * owner, read by any thread's free (relaxed atomics: a stale value only
 * sends that free to its slow path, which rechecks under the page
 * descriptor; lim only grows while the slab lives, tp changes only when
 * the heap is parked or adopted). */
#define ND_SLAB_HOT_FIELDS                                                         \
	void *free;      /* private free list (owner only) */                         \
	char *start;     /* first object (page-aligned run) */                        \
	uint64_t mul;    /* (size's odd part)^-1 << (15 - tz) mod 2^64: see below */  \
	uint64_t lim;    /* atomic: objects carved; 0 in check mode: frees validate */ \
	uintptr_t tp;    /* atomic: owner thread's pointer (%fs:0); 0 while parked */ \
	uint32_t used;   /* objects out; while on the full list, lowered by fbias */
typedef struct _nd_slab_hot {
	ND_SLAB_HOT_FIELDS
} _nd_slab_hot_t;

/* A heap starts with its current slab per class (_nd_heap_t below). */
typedef struct _nd_heap_hot {
	_nd_slab_hot_t *cur[ND_SLAB_CLASSES]; /* owner only; an empty slab if none */
} _nd_heap_hot_t;

/* Size -> class: _nd_slab_cls_tab[(size + 15) >> 4] for size <= ND_SLAB_MAX. */
extern uint8_t _nd_slab_cls_tab[ND_SLAB_MAX / 16 + 1] __attribute__((visibility("hidden")));

/* Page number -> slab header, for the reservation of the page level.
 * Entry 0 (any page that is not a slab's) decodes to `none`, whose lim 0
 * fails every check, so a lookup never needs a range or NULL test: the
 * index check below then proves p is an object start of that slab. */
typedef struct _nd_slab_map {
	_nd_slab_hot_t none;
	uintptr_t mask;     /* entries - 1: a power of two >= the reservation's
			     * pages, so page number & mask is one-to-one on it */
	intptr_t ent[];     /* header address - map address; 0 = none */
} _nd_slab_map_t;
extern _nd_slab_map_t *_nd_slab_map __attribute__((visibility("hidden")));

static inline _nd_slab_hot_t *_nd_slab_of(const void *p)
{
	_nd_slab_map_t *m = _nd_slab_map;
	uintptr_t i = ((uintptr_t)p >> ND_PAGE_SHIFT) & m->mask;
	return (_nd_slab_hot_t *)((char *)m + ND_LOAD_RELAXED(m->ent[i]));
}
/* Index of p in s if p is an object start, else a number >= s->lim.
 * Granlund-Montgomery divisibility with the rotation folded into mul:
 * size = d * 2^tz (d odd, tz <= 15), off = p - start. off = k * size gives
 * off * mul = k << 15, so rotr(., 15) = k. off with fewer than tz low zero
 * bits leaves a low bit set below bit 15: rotated to the top. off = 2^tz q
 * with d not dividing q gives (q * d^-1 mod 2^49) > 2^49 / d. So only
 * addresses that differ from an object by a multiple of 2^(49+tz) >= 2^53
 * could pass, and no two user addresses do (x86-64 user space < 2^47). */
static inline uint64_t _nd_slab_index(const _nd_slab_hot_t *s, const void *p)
{
	uint64_t x = ((uintptr_t)p - (uintptr_t)s->start) * s->mul;
	return (x >> 15) | (x << 49);
}

/* A free object: word 0 the next free object, word 1 the marker (its slab
 * header's address: free writes it, malloc clears it, so finding it on
 * free means a double free). The pop: NULL when the list is empty. */
static inline __attribute__((always_inline)) void *_nd_slab_pop(_nd_slab_hot_t *s)
{
	void **o = (void **)s->free;
	if (nd_unlikely(o == NULL))
		return NULL;
	s->free = o[0];
	s->used++;
	o[1] = NULL;
	return o;
}

/* The owner's push of a marked object; true when s needs the slow path
 * (now empty, or it was on the full list: the bias makes used <= 0). */
static inline __attribute__((always_inline)) bool _nd_slab_push(_nd_slab_hot_t *s, void **o)
{
	o[0] = s->free;
	s->free = o;
	bool le0;
	__asm__("subl $1, %0" : "+m"(s->used), "=@ccle"(le0)); /* one sub, flags reused */
	return le0;
}

/* The free fast path up to the owner test: p is an object start of s
 * (else 0: not a slab object, or check mode), not marked free (else 1),
 * now marked. Returns 2 when the caller owns s, 3 when it does not. */
static inline __attribute__((always_inline)) int _nd_slab_free_classify(_nd_slab_hot_t *s, void **o)
{
	if (nd_unlikely(_nd_slab_index(s, o) >= ND_LOAD_RELAXED(s->lim)))
		return 0;
	if (nd_unlikely(o[1] == (void *)s))
		return 1;
	o[1] = s;
	return ND_LOAD_RELAXED(s->tp) == (uintptr_t)__builtin_thread_pointer() ? 2 : 3;
}

/* The malloc fast path: dir[] is valid while *cpu64 == key. */
static inline __attribute__((always_inline)) bool _nd_slab_key_ok(const _nd_thread_t *t, const uint64_t *key)
{
	return *t->cpu64 == ND_LOAD_RELAXED(*key);
}

/* nd_malloc_policy's cache entry still describes the caller's object p
 * (heap.c, _nd_heap_policy: the words that can differ on this topology). */
static inline __attribute__((always_inline)) bool _nd_slab_pc_same(const struct _nd_pcache *e, const nd_policy_t *p)
{
	uint64_t mf;
	__builtin_memcpy(&mf, &p->mode, sizeof mf);
	if (mf != e->mode_flags || p->granularity_shift != e->gran || p->nodes.bits[0] != e->bits0)
		return false;
	if (nd_unlikely(p->mode == ND_POLICY_WEIGHTED)) {
		uint64_t w;
		__builtin_memcpy(&w, p->weights, sizeof w);
		return w == e->w0;
	}
	return true;
}

/* Free of an object whose marker says it is free already (fatal). */
void _nd_slab_free_marked(void *p, _nd_slab_hot_t *s) __attribute__((noreturn));
/* Free by a thread that does not own s (remote free). */
void _nd_slab_free_other(void *p, _nd_slab_hot_t *s);
/* The owner's push left s empty, or s was on the full list. */
void _nd_slab_free_emptied(_nd_slab_hot_t *s);
/* The node a small block's memory is on (its slab's run), for realloc. */
int _nd_slab_node(const _nd_pagedesc_t *d);
/* The object's free marker is set (realloc of a freed block). */
bool _nd_slab_freed(const void *p, const _nd_pagedesc_t *d);

/* ---- the slab layer's structures (meta.c, slab.c, heap.c share them) ----
 * tfree = count << 48 | list head | NOTIFY: the remote list carries its
 * length, so the owner takes it in one exchange without walking it (slab
 * objects live in the page level's reservation, below 2^47). */
#define ND_TF_NOTIFY ((uintptr_t)1)                     /* parked full, tell the heap */
#define ND_TF_PTR ((uintptr_t)0x0000fffffffffff0ull)    /* list head */
#define ND_TF_CNT_SHIFT 48                              /* objects on the list */

struct nd_heap;
/* A slab: one page run of one size class, its header out of line.
 * Owner and synchronisation, per field: see the hot fields above (free,
 * used: owner; lim, tp: atomic, written by the owner). Below: cls, cap,
 * size, node, npages: fixed while the slab lives. carved, next/prev,
 * fbias: owner only (relaxed atomics where free's slow path of another
 * thread reads carved, _nd_slab_invalid). tfree: any thread (CAS). heap:
 * atomic, changes only when a parked heap's slab moves to a running heap
 * of the same key (absorb); a remote free that read the old heap only
 * sets a notify bit there. hnext: the node lock (meta.c's header pool).
 * Counters: used + fbias = objects out (handed out, or freed by another
 * thread and not collected yet) <= carved <= cap. */
typedef struct _nd_slab {
	/* line 1: the fast paths' fields, then the owner's */
	ND_SLAB_HOT_FIELDS
	uint8_t cls;
	uint16_t cap;          /* objects in the slab */
	uint16_t carved;       /* atomic: objects ever put on a free list (lazy carving) */
	uint32_t size;
	struct nd_heap *heap;  /* atomic: owner heap */
	/* line 2: written by other threads */
	_Alignas(ND_CACHE_LINE) uintptr_t tfree; /* remote frees: count | list | NOTIFY */
	int32_t node;          /* serving node of the run */
	uint32_t npages;
	struct _nd_slab *hnext;    /* free header list (node lock) */
	struct _nd_slab *all_next; /* every header of its node, append only (meta.c) */
	struct _nd_slab *next, *prev; /* partial or full list of the heap (owner) */
	uint32_t fbias;        /* on the full list: real used = used + fbias (> 0); else 0 */
} _nd_slab_t;
_Static_assert(offsetof(_nd_slab_t, free) == offsetof(_nd_slab_hot_t, free) &&
	       offsetof(_nd_slab_t, used) == offsetof(_nd_slab_hot_t, used), "_nd_slab_t starts with the hot fields");

/* A heap serves the allocations of one key: a node (node heaps, pol NULL:
 * local, preferred, preferred-many, nd_malloc_onnode, whose slabs are on
 * that node or where its list fell back), or an interned policy that
 * restricts or spreads nodes (bind: pol + the node it wants; interleave
 * and weighted: pol, node -1, each slab's node chosen when it is taken).
 * Lists, cur[], fullh[]: the owner (its thread, or whoever took it out of
 * a pool). owner, notify: atomic (remote frees read and set them). node,
 * pol: fixed. pool_next: its pool's lock. */
typedef struct nd_heap {
	_nd_slab_t *cur[ND_SLAB_CLASSES];   /* partial list heads; &_nd_slab_empty if none (_nd_heap_hot_t) */
	_nd_slab_t *fullh[ND_SLAB_CLASSES]; /* full list heads (NULL-terminated) */
	_nd_thread_t *owner;            /* atomic: the owner's record; NULL while parked */
	uint64_t notify;                /* atomic: class bits, a full slab got a remote free */
	int node;                       /* the node its allocations want; -1: the policy's */
	const nd_policy_t *pol;         /* NULL: a node heap; else bind/interleave/weighted */
	struct nd_heap *pool_next;      /* pool of the node, or the policy pool (their lock) */
} _nd_heap_t;
_Static_assert(offsetof(_nd_heap_t, cur) == offsetof(_nd_heap_hot_t, cur), "_nd_heap_t starts with cur[]");

/* ---- src/meta.c: the slab layer's metadata: per-node bump allocator,
 * slab header pool, the slab map (page -> header) ---- */

/* Per node: the pool of parked node heaps (heap.c), the metadata bump area
 * and the free slab headers (meta.c), all under one lock. Lock order:
 * heap.c's policy pool lock -> node locks (ascending) -> page-level locks
 * (the metadata allocator calls the page level with the node lock held). */
typedef struct _nd_meta_node {
	_nd_lock_t lock;
	char *meta_cur, *meta_end;  /* bump area (lock) */
	_nd_slab_t *free_hdrs;      /* released slab headers (lock) */
	_nd_slab_t *all_hdrs;       /* every header made (lock; read lock-free, acquire) */
	_nd_heap_t *pool;           /* parked node heaps (lock) */
	int pool_dirty;             /* atomic: a parked heap got a remote free */
} _nd_meta_node_t;
extern _nd_meta_node_t _nd_meta_node[ND_MAX_NODES] __attribute__((visibility("hidden")));
/* Atomic: a parked policy heap got a remote free (heap.c's policy pool). */
extern int _nd_meta_ppool_dirty __attribute__((visibility("hidden")));
/* Node index used (for the fork handlers' lock array bound). */
void _nd_meta_note_node(int node);
/* Zeroed, cache-line aligned, never freed; on node (else its fallback
 * nodes, else plain mmap). NULL if no memory. */
void *_nd_meta_alloc(int node, size_t size);
/* A slab header on node's metadata (reused or new, not zeroed: keep
 * all_next), and back. */
_nd_slab_t *_nd_meta_hdr_get(int node);
void _nd_meta_hdr_put(int node, _nd_slab_t *s);
/* fn(header, arg) for every slab header ever made, live or released
 * (heap == NULL), without a lock: the lists only grow at the head and a
 * header's all_next never changes (statistics). */
void _nd_meta_hdr_each(void (*fn)(const _nd_slab_t *s, void *arg), void *arg);
/* Makes the slab map (once; the first slab calls it), and sets the map
 * entry of page to s (NULL: none). */
void _nd_meta_map_ensure(void);
void _nd_meta_map_set(const void *page, const _nd_slab_t *s);
/* At the slab init: the map for the largest reservation, if it can be had. */
void _nd_meta_map_init(void);
/* The flag a remote free into a parked heap of h's pool sets. */
static inline int *_nd_meta_pool_dirty(const _nd_heap_t *h)
{
	return h->pol ? &_nd_meta_ppool_dirty : &_nd_meta_node[h->node].pool_dirty;
}

/* ---- slab.c's parts that heap.c uses (owner of the heap only) ---- */
extern _nd_slab_t _nd_slab_empty __attribute__((visibility("hidden"))); /* cur[] of a class without slab */
extern bool _nd_slab_check __attribute__((visibility("hidden")));       /* NODALLOC_CHECK=1 */
void _nd_slab_corrupt_link(const _nd_slab_t *s, void *const *o, const char *fn) __attribute__((noreturn, noinline, cold));
/* A free object's link (word 0) must be NULL or another object of the
 * same slab that was carved: a write past the end of the object before it
 * (a heap overflow) or after free that hit the link is reported by name
 * here, before anything follows it (slow paths; every path in check
 * mode, which never takes the inline pop). */
static inline void _nd_slab_check_link(const _nd_slab_t *s, void *const *o, const char *fn)
{
	uintptr_t n = (uintptr_t)o[0];
	if (n && nd_unlikely(_nd_slab_index((const _nd_slab_hot_t *)s, (const void *)n) >= s->carved))
		_nd_slab_corrupt_link(s, o, fn);
}
/* A new slab of class c for h (the caller owns h), from a run under pol
 * wanting h's node; NULL + ENOMEM. Back to the page level: used + fbias
 * == 0 or every object out is on the remote list. */
_nd_slab_t *_nd_slab_new(_nd_heap_t *h, unsigned c, const nd_policy_t *pol);
void _nd_slab_release(_nd_slab_t *s);
/* Up to a page of never-used objects onto the (empty) free list. */
void _nd_slab_carve(_nd_slab_t *s);
/* Remote frees into the private list; returns how many. */
unsigned _nd_slab_collect(_nd_slab_t *s);
/* Every object out is on the remote list: nothing live. */
bool _nd_slab_all_remote(const _nd_slab_t *s);
/* The heap's lists (owner): partial (cur[] head, mirrored in the owner's
 * dir[] when h is its current heap) and full (fbias applied). */
void _nd_slab_part_unlink(_nd_heap_t *h, _nd_slab_t *s);
void _nd_slab_part_insert(_nd_heap_t *h, _nd_slab_t *s);
void _nd_slab_part_push_front(_nd_heap_t *h, _nd_slab_t *s);
void _nd_slab_full_unlink(_nd_heap_t *h, _nd_slab_t *s);
void _nd_slab_full_push(_nd_heap_t *h, _nd_slab_t *s);
/* t's current heap becomes h (dir[] rewritten). */
void _nd_slab_set_heap(_nd_thread_t *t, _nd_heap_t *h);
/* Smallest class >= size whose objects are aligned to align, or -1. */
int _nd_slab_class_for(size_t size, size_t align);
/* t's remote-free buffer goes home; returns the entries sent. */
unsigned _nd_slab_rf_flush_all(_nd_thread_t *t);
/* Thread exit (before its heaps park): the buffer goes home, the
 * record's per-class counters go into the totals. */
void _nd_slab_thread_done(_nd_thread_t *t);

/* ======================================================================
 * src/heap.c: which heap an allocation uses, heaps and their threads'
 * life cycle, adoption of parked heaps. The allocation entry points.
 * ====================================================================== */

/* Registers the thread-exit hook (after _nd_slab_init). 0. */
int _nd_heap_init(void);
/* malloc for size <= ND_SLAB_MAX: the calling thread's heap of its CPU's
 * memory node under the thread's policy. NULL with errno ENOMEM; NULL with
 * errno untouched before the init is done (the caller runs it). */
void *_nd_heap_malloc(size_t size);
/* malloc.c's fast path found size's free list empty (heap still valid):
 * collect, carve or change slab in the current heap. */
void *_nd_heap_refill(size_t size);
/* Small allocation with placement. align: a power of two (<= 16 = none,
 * at most ND_PAGE_SIZE). pol: NULL = the thread's policy. node >= 0: that
 * node first, falling back along its list (pol ignored for the choice).
 * NULL with errno: ENOMEM, or EINVAL if (size, align) has no class
 * (see _nd_slab_fits). The caller runs the init first (before it: NULL,
 * errno untouched). */
void *_nd_heap_alloc(size_t size, size_t align, const nd_policy_t *pol, int node);
/* The placement calls' slow paths (validation, resolution, refill). */
void *_nd_heap_onnode(size_t size, int node);
void *_nd_heap_local(size_t size);
/* nd_malloc_policy's, for a size the class path serves (see docs/malloc.md). */
void *_nd_heap_policy(size_t size, const nd_policy_t *p);

/* ======================================================================
 * src/large.c: allocations above ND_SLAB_MAX, straight from page runs,
 * and the cache of freed large runs (docs/malloc.md "Large blocks"): a
 * freed node-slot run of at least the purge threshold is kept, committed,
 * in its node's cache for NODALLOC_LARGE_DECAY_MS and reused by an
 * allocation that wants that node (never another: freed memory keeps its
 * node); spread runs are never cached. Decay runs on large calls (no
 * thread). A cached run counts as committed, not in use.
 * ====================================================================== */

/* A page run of size bytes aligned to align (0 or <= ND_PAGE_SIZE = page),
 * under pol (NULL = the thread's policy), want_node >= 0 first. An
 * interleave or weighted policy spreads a run of more than one granule by
 * offset (_nd_page_alloc_spread, when align allows). Tries each node the
 * policy allows in order: its cache, a fresh run, and if the node is full,
 * its cache flushed and a fresh run again. NULL + ENOMEM. */
void *_nd_large_alloc(size_t size, size_t align, const nd_policy_t *pol, int want_node);
/* d = _nd_page_desc(p) with d->use == ND_USE_LARGE; reports (fatal) a
 * pointer that is not the run's head. Caches the run or frees it. */
void _nd_large_free(void *p, _nd_pagedesc_t *d);
/* calloc of a large block just allocated: zero its first bytes; a run
 * reused from the cache is cleared whole, a fresh one only where its pages
 * may hold old data (_nd_page_zero). Any other pointer: _nd_page_zero. */
void _nd_large_zero(void *p, size_t bytes);
/* realloc of a large block in place: grow into the free pages after the
 * run when the policy in force would place new memory on the run's node,
 * or give the tail back. true on success (d->user = size). */
bool _nd_large_grow(void *p, _nd_pagedesc_t *d, size_t size);
bool _nd_large_shrink(void *p, _nd_pagedesc_t *d, size_t size);
/* Record a new requested size after an in-place realloc. */
void _nd_large_resize(void *p, _nd_pagedesc_t *d, size_t size);
size_t _nd_large_usable(const void *p, const _nd_pagedesc_t *d);
/* Free every cached run of node (-1: all nodes) now; returns their bytes
 * (tests, trim, memory pressure). */
size_t _nd_large_flush(int node);
/* Bytes cached for node now, and the cache's bound for it (tests, tools). */
size_t _nd_large_cached(int node);
size_t _nd_large_cache_limit(int node);

/* ======================================================================
 * src/table.c: distributed large tables (public API nd_table_*). The pure
 * parts are exposed for unit tests.
 * ====================================================================== */

/* nd_table_alloc after the library's init (api_init.c runs it). */
int _nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out);
/* The kernel's sizing (alloc_large_system_hash, mm/mm_init.c) for mem
 * bytes of memory: the entry count to try first, a power of two >= 1.
 * Does not validate d (nd_table_alloc does). */
uint64_t _nd_table_size(const nd_table_desc_t *d, uint64_t mem);
/* Interleave granule (4096 << shift) for a table of bytes over nnodes:
 * the largest shift <= 9 (2 MiB, huge pages) whose per-node bytes are
 * within max/min <= 1.05; the most even smaller one otherwise. */
unsigned _nd_table_granule_shift(uint64_t bytes, int nnodes);
/* Per-node bytes of a table of bytes interleaved over nnodes with granule
 * 4096 << shift (set index i, not node id): the smallest and largest. */
void _nd_table_spread_minmax(uint64_t bytes, int nnodes, unsigned shift, uint64_t *min, uint64_t *max);
/* The kernel's retry loop: try(bucket_size << *log2qty) and halve on
 * failure while the size is above one page and the halved *log2qty stays
 * above 0. Returns the table (with *log2qty what was obtained) or NULL. */
typedef void *(*_nd_table_try_fn)(size_t bytes, void *ctx);
void *_nd_table_try_halving(size_t bucket_size, unsigned *log2qty, _nd_table_try_fn try_alloc, void *ctx);

/* ======================================================================
 * src/percpu.c: dense per-CPU areas (public API nd_percpu_*); test seams.
 * ====================================================================== */

/* nd_percpu_alloc and nd_percpu_uses_rseq after the library's init
 * (api_init.c runs it): the first call sets the areas up. */
nd_percpu_t _nd_percpu_alloc(size_t size, size_t align);
bool _nd_percpu_uses_rseq(void);
/* The memory node CPU cpu's area is bound to (recorded also under an
 * emulated topology, where no mbind is done); -1 if the CPU is not
 * possible or the areas are not set up yet. */
int _nd_percpu_area_node(int cpu);
/* Span of each CPU's area (1 << area_shift), and bytes committed in each
 * possible CPU's area (the same for all); 0 before the first allocation. */
size_t _nd_percpu_area_size(void);
size_t _nd_percpu_committed(void);

/* ======================================================================
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
/* Not initialized yet: run the init; false = serve from the bootstrap. */
static inline bool _nd_init_or_boot(void)
{
	return __atomic_load_n(&_nd_initialized, __ATOMIC_ACQUIRE) > 0 || _nd_init();
}
/* The bootstrap buffer (the init's own allocations, or after a failed
 * init): a bump allocation of size at align (>= 16); NULL with ENOMEM. */
void *_nd_boot_alloc(size_t size, size_t align);
/* Aligned allocation, align a power of two, on node or by pol (init done
 * or the bootstrap). */
void *_nd_malloc_aligned(size_t align, size_t size, const nd_policy_t *pol, int node);

/* ======================================================================
 * src/place.c: the placement API (nd_malloc_onnode and family), beside
 * malloc.c.
 * ====================================================================== */
/* On a node known to be valid (init done): realloc's new block too. */
void *_nd_place_onnode(size_t size, int node);

/* ======================================================================
 * src/heap_api.c: nd_where, nd_move and the public heaps (nd_heap_t);
 * beside malloc.c. The heaps' objects for malloc.c's free, realloc and
 * usable size (d: a page of use ND_USE_HEAP; an address that is not an
 * object start is reported, fatal).
 * ====================================================================== */
void _nd_uheap_free(void *p, const _nd_pagedesc_t *d);
size_t _nd_uheap_usable(const void *p, const _nd_pagedesc_t *d);
bool _nd_uheap_freed(const void *p, const _nd_pagedesc_t *d);
/* realloc's new block: from the heap for its owner, else on its node. */
void *_nd_uheap_realloc_alloc(const _nd_pagedesc_t *d, size_t size);

#endif /* ND_INTERNAL_H */
