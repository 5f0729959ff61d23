// SPDX-License-Identifier: MIT
/* Multi-threaded fuzzer of everything at once (tests/fuzz, docs in
 * part.cmake): THREADS positions, each run by a succession of threads
 * that draw random operations from a seeded generator:
 *
 *   fuzz_threads SEED OPS [THREADS]   (ND_FUZZ_OPS, ND_FUZZ_SEED: as fuzz_malloc)
 *
 * - allocations of every entry point (the malloc family, nd_malloc_onnode,
 *   _local, _policy, _interleaved, nd_mallocx_* with zero and alignment
 *   flags, nd_calloc_*, nd_aligned_alloc_*, public heaps) over every size
 *   band (0 .. 64 MiB), each block stamped (id, offset) and checked at
 *   every free and realloc; zeroing calls checked zero; bind and
 *   interleave placements checked with nd_node_of;
 * - frees (plain, sized, aligned sized), reallocs, and a shared exchange of
 *   boxed blocks swapped atomically: frees and reallocs of other threads'
 *   blocks, and of blocks of threads that have exited;
 * - thread and process policy changes (local, preferred, preferred-many,
 *   bind, interleave with granules, weighted, tier order), migrations
 *   (sched_setaffinity over the real CPUs, nd_emulate_cpu over the
 *   emulated ones), malloc_trim, nd_where, per-CPU counters and areas,
 *   tables, public heaps (created, shared out, destroyed by the last user);
 * - fork from one thread while the others run: the child checks the
 *   forking thread's blocks, allocates and frees, runs a thread of its own
 *   (which trims and takes the snapshots first), exits (a child that
 *   hangs for 60 s is killed and reported). The fuzzer takes no lock of
 *   its own: a child would inherit it held by a thread it does not have;
 * - a position's thread exits after its share of operations (its heap
 *   parked) and a new thread takes over its blocks (adopting heaps).
 *
 * A thread's operations are reproducible from the seed and its position
 * and generation (printed with every failure, with its last operations);
 * what it finds in the exchange depends on the interleaving. Exit 1 on any
 * failure. ND_FUZZ_NO_OVERRIDE (the ThreadSanitizer build): nd_* calls
 * only. ND_FUZZ_ENOMEM=1: allocations may fail with ENOMEM (tight nodes).
 * ND_FUZZ_FORK=0: no fork; N > 1: N in 2000 operations more.
 * ND_FUZZ_TRIM=N: N trims and snapshots in 2000 operations more;
 * ND_FUZZ_FORK_SNAP=1: each snapshot forks after nd_stats_get.
 * ND_FUZZ_HANG_WAIT=1: a forked child that hangs
 * for 60 s prints its pid and stays, for a debugger. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "nodalloc.h"

#define MAXT 16
#define SLOTS 256
#define XCH 128
#define HRECS 65536
#define LOG 12

/* ---- bookkeeping ------------------------------------------------------ */

enum { K_MALLOC, K_CALLOC, K_ALIGNED, K_POSIX, K_MEMALIGN, K_VALLOC, K_REALLOCARRAY, K_ONNODE, K_LOCAL, K_POLICY,
       K_PREPARED, K_INTERLEAVED, K_MALLOCX_NODE, K_MALLOCX_POL, K_CALLOC_NODE, K_CALLOC_POL, K_ALIGNED_NODE,
       K_ALIGNED_POL, K_HEAP, K_HEAP_CALLOC, K_HEAP_ALIGNED, K_NDCALLOC, K_NALLOC };
static const char *kname[] = { "malloc", "calloc", "aligned_alloc", "posix_memalign", "memalign", "valloc",
	"reallocarray", "nd_malloc_onnode", "nd_malloc_local", "nd_malloc_policy", "nd_malloc_policy(prepared)",
	"nd_malloc_interleaved", "nd_mallocx_onnode", "nd_mallocx_policy", "nd_calloc_onnode", "nd_calloc_policy",
	"nd_aligned_alloc_onnode", "nd_aligned_alloc_policy", "nd_heap_malloc", "nd_heap_calloc",
	"nd_heap_aligned_alloc", "nd_calloc" };

/* A public heap: destroyed by whoever ends its use last (its owner's
 * retirement or the last free of one of its objects); records never
 * reused, so a late reader never sees another heap's. */
typedef struct hrec {
	nd_heap_t *h;
	long live;      /* objects allocated and not freed (atomic) */
	int retired;    /* the owner allocates no more (atomic) */
	int destroyed;  /* claimed by the destroyer (atomic) */
	uint64_t owner; /* the creating thread's generation id */
} hrec_t;
static hrec_t hrecs[HRECS];
static long n_hrecs;

typedef struct blk {
	unsigned char *p;
	size_t n;     /* the requested size (sized free), the stamped bytes */
	size_t align; /* nonzero: from an aligned call (nd_free_aligned_sized) */
	uint32_t id;
	uint8_t kind;
	hrec_t *heap;
} blk_t;

typedef struct worker {
	int pos;
	uint64_t gen;   /* unique per thread: pos + MAXT * generation */
	uint64_t s;     /* the generator */
	long op, ops;
	uint32_t next_id;
	blk_t slot[SLOTS];
	hrec_t *heap;   /* this thread's public heap, if any */
	nd_percpu_t pc; /* a counter of this thread's, and its count */
	int64_t pc_count;
	nd_nodemask_t pol_set; /* the thread policy's nodes when it is bind or interleave */
	int pol_strict; /* 1: every placement must be in pol_set */
	int done;       /* set when the thread ends (atomic) */
	char log[LOG][96];
	int logi;
} worker_t;

static worker_t W[MAXT];
static blk_t *xch[XCH]; /* atomic: swapped with __atomic_exchange_n (an _Atomic type: clang refuses the builtin) */
static uint64_t seed;
static int nodes, cpus, emulated, may_fail, do_fork = 1, do_trim, fork_snap;
static int memnode[ND_MAX_NODES], n_memnodes;
static int emcpu[256], n_emcpus;
static int realcpu[64], n_realcpus;
static long failures, stat_ops, stat_xfree, stat_xrealloc, stat_forks, stat_migr, stat_pol, stat_heaps, stat_enomem,
	stat_exits, stat_trims, stat_tables, stat_percpu;
static nd_percpu_t shared_pc;
static long shared_pc_count;
static __thread worker_t *me;

#define R(n) (rnd(&w->s) % (uint64_t)(n))

static void note(worker_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(worker_t *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->log[w->logi++ % LOG], sizeof w->log[0], fmt, ap);
	va_end(ap);
}

static void fail(worker_t *w, const char *what, const blk_t *b, size_t at)
{
	long f = __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	if (f > 20)
		return;
	char buf[2048];
	int len = snprintf(buf, sizeof buf,
			   "FAIL seed %llu thread %d gen %llu op %ld: %s: block %x (%s) %p size %zu align %zu at %zu\n",
			   (unsigned long long)seed, w ? w->pos : -1, w ? (unsigned long long)(w->gen / MAXT) : 0ull,
			   w ? w->op : -1L, what, b ? b->id : 0, b ? kname[b->kind] : "-", b ? (void *)b->p : NULL,
			   b ? b->n : 0, b ? b->align : 0, at);
	if (w)
		for (int i = 0; i < LOG && len < (int)sizeof buf - 64; i++) {
			const char *l = w->log[(w->logi + i) % LOG];
			if (*l)
				len += snprintf(buf + len, sizeof buf - (size_t)len, "    last: %s\n", l);
		}
	fputs(buf, stderr);
}

static char crash_line[160];
static int hang_wait;
static void on_crash(int sig)
{
	char buf[256];
	worker_t *w = me;
	int len = snprintf(buf, sizeof buf, "fuzz_threads: signal %d: %s thread %d gen %llu op %ld\n", sig, crash_line,
			   w ? w->pos : -1, w ? (unsigned long long)(w->gen / MAXT) : 0ull, w ? w->op : -1L);
	if (write(2, buf, (size_t)len) < 0) {
	}
	if (w)
		for (int i = 0; i < LOG; i++) {
			const char *l = w->log[(w->logi + i) % LOG];
			if (*l && write(2, l, strlen(l)) >= 0 && write(2, "\n", 1) >= 0) {
			}
		}
	if (sig == SIGALRM && hang_wait) { /* ND_FUZZ_HANG_WAIT=1: stay for a debugger */
		len = snprintf(buf, sizeof buf, "fuzz_threads: pid %d waits for a debugger\n", (int)getpid());
		if (write(2, buf, (size_t)len) < 0) {
		}
		for (;;)
			pause();
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- stamps ------------------------------------------------------------
 * Stamped bytes of an n-byte block: all of the first 4 KiB, 8 at every
 * page offset, the last 64: enough to see a block overlap another, a page
 * lost or swapped, a realloc losing bytes, at a cost independent of n. */
static inline unsigned char pat(uint32_t id, size_t i)
{
	return (unsigned char)(id * 131u + (uint32_t)(i >> 3) * 7u + (uint32_t)i + (uint32_t)(i >> 12));
}

#define FOR_STAMPS(n, upto, i, body)                                                          \
	do {                                                                                  \
		size_t lim_ = (upto) < (n) ? (upto) : (n);                                    \
		for (size_t i = 0; i < lim_ && i < 4096; i++)                                 \
			body;                                                                 \
		for (size_t pg_ = 4096; pg_ < lim_; pg_ += 4096)                              \
			for (size_t i = pg_; i < pg_ + 8 && i < lim_; i++)                    \
				body;                                                         \
		for (size_t i = (n) > 4096 + 64 ? (n) - 64 : lim_; i < lim_; i++)             \
			body;                                                                 \
	} while (0)

static void fill(const blk_t *b)
{
	unsigned char *p = b->p;
	uint32_t id = b->id;
	FOR_STAMPS(b->n, b->n, i, p[i] = pat(id, i));
}

/* The stamps of b (as made for b->n bytes) below upto. */
static int verify(worker_t *w, const blk_t *b, size_t upto, const char *when)
{
	const unsigned char *p = b->p;
	uint32_t id = b->id;
	size_t bad = SIZE_MAX;
	FOR_STAMPS(b->n, upto, i, if (bad == SIZE_MAX && p[i] != pat(id, i)) bad = i);
	if (bad != SIZE_MAX) {
		char what[96];
		snprintf(what, sizeof what, "content changed (%s, found %#x, want %#x)", when, p[bad], pat(id, bad));
		fail(w, what, b, bad);
		return 0;
	}
	return 1;
}

static void check_zero(worker_t *w, const blk_t *b)
{
	const unsigned char *p = b->p;
	size_t bad = SIZE_MAX;
	if (b->n <= 65536) {
		for (size_t i = 0; i < b->n; i++)
			if (p[i]) {
				bad = i;
				break;
			}
	} else {
		FOR_STAMPS(b->n, b->n, i, if (bad == SIZE_MAX && p[i]) bad = i);
		for (size_t i = 2048; bad == SIZE_MAX && i < b->n; i += 4096)
			if (p[i])
				bad = i;
	}
	if (bad != SIZE_MAX)
		fail(w, "zeroing call: not zero", b, bad);
}

/* ---- sizes, nodes, policies --------------------------------------------- */

static size_t pick_size(worker_t *w)
{
	uint64_t r = rnd(&w->s);
	switch (r % 1000) {
	case 0 ... 2: return (size_t)(r >> 10) % ((size_t)64 << 20) + 1; /* up to 64 MiB */
	case 3 ... 29: return (size_t)(r >> 10) % (4 << 20);             /* page runs */
	case 30 ... 49: { /* the band edges */
		static const size_t e[] = { 16, 1024, 4096, 16384, 32768, 32769, 65536, 131072, 524288, 524289,
			(1 << 20) + 1, 2 << 20, (2 << 20) + 4096 };
		return e[(r >> 10) % (sizeof e / sizeof e[0])] - (r >> 20) % 3;
	}
	case 50 ... 199: return (size_t)(r >> 10) % 65536;
	case 200 ... 209: return 0;
	default: return (size_t)(r >> 10) % 1024;
	}
}

static int any_node(worker_t *w) /* any node, ND_NODE_LOCAL too */
{
	int k = (int)R(nodes + 1);
	return k == nodes ? ND_NODE_LOCAL : k;
}

static int mem_node(worker_t *w)
{
	return memnode[R(n_memnodes)];
}

static void random_set(worker_t *w, nd_nodemask_t *m)
{
	nd_nodemask_zero(m);
	while (!nd_nodemask_count(m))
		for (int i = 0; i < n_memnodes; i++)
			if (R(2))
				nd_nodemask_set(m, memnode[i]);
}

/* A valid policy of any mode; text through the parser now and then. */
static void random_policy(worker_t *w, nd_policy_t *p)
{
	memset(p, 0, sizeof *p);
	static const nd_policy_mode_t modes[] = { ND_POLICY_LOCAL, ND_POLICY_PREFERRED, ND_POLICY_PREFERRED_MANY,
		ND_POLICY_BIND, ND_POLICY_INTERLEAVE, ND_POLICY_WEIGHTED };
	p->mode = modes[R(6)];
	switch (p->mode) {
	case ND_POLICY_PREFERRED: nd_nodemask_set(&p->nodes, mem_node(w)); break;
	case ND_POLICY_PREFERRED_MANY:
	case ND_POLICY_BIND: random_set(w, &p->nodes); break;
	case ND_POLICY_INTERLEAVE:
		random_set(w, &p->nodes);
		p->granularity_shift = (unsigned)R(10);
		break;
	case ND_POLICY_WEIGHTED:
		random_set(w, &p->nodes);
		p->granularity_shift = (unsigned)R(10);
		for (int i = 0; i < nodes; i++)
			if (nd_nodemask_isset(&p->nodes, i))
				p->weights[i] = (uint8_t)(1 + R(4));
		break;
	default: break;
	}
	if (R(4) == 0)
		p->flags |= ND_POLICY_F_TIER_ORDER;
	if (R(4) == 0) { /* round trip through the grammar */
		char txt[256], err[128];
		nd_policy_t q;
		if (nd_policy_format(p, txt, sizeof txt) < 0 || nd_policy_parse(txt, &q, err, sizeof err) != 0) {
			fail(w, "policy format/parse round trip", NULL, 0);
			return;
		}
		*p = q;
	}
	char err[128];
	if (nd_policy_check(p, err, sizeof err) != 0) {
		fprintf(stderr, "policy check: %s\n", err);
		fail(w, "random policy rejected", NULL, 0);
		p->mode = ND_POLICY_LOCAL;
	}
}

/* Where a block under policy p must be: 1 and the set for bind, and for
 * interleave and weighted while nodes have room. */
static int strict_set(const nd_policy_t *p, nd_nodemask_t *set)
{
	if (p->mode != ND_POLICY_BIND && (may_fail || (p->mode != ND_POLICY_INTERLEAVE && p->mode != ND_POLICY_WEIGHTED)))
		return 0; /* a full node: interleave falls back, as the kernel's does */
	*set = p->nodes;
	return 1;
}

/* ---- blocks ------------------------------------------------------------- */

static void heap_put(worker_t *w, hrec_t *hr);

/* Frees b (checked first) by a random form of free. */
static void release(worker_t *w, blk_t *b, const char *when)
{
	if (!b->p)
		return;
	verify(w, b, SIZE_MAX, when);
	if (nd_usable_size(b->p) < b->n)
		fail(w, "usable size below the request", b, nd_usable_size(b->p));
	hrec_t *hr = b->heap;
	note(w, "free %x %s %zu", b->id, kname[b->kind], b->n);
	switch (R(4)) {
	case 0:
#ifndef ND_FUZZ_NO_OVERRIDE
		free(b->p);
		break;
#endif
	case 1: nd_free(b->p); break;
	default:
		if (b->align)
			nd_free_aligned_sized(b->p, b->align, b->n);
		else
			nd_free_sized(b->p, b->n);
	}
	b->p = NULL;
	if (hr)
		heap_put(w, hr);
	b->heap = NULL;
}

/* One less live object of hr; the last one after the owner's retirement
 * destroys the heap. */
static void heap_put(worker_t *w, hrec_t *hr)
{
	if (__atomic_sub_fetch(&hr->live, 1, __ATOMIC_ACQ_REL) == 0 && __atomic_load_n(&hr->retired, __ATOMIC_ACQUIRE)
	    && !__atomic_exchange_n(&hr->destroyed, 1, __ATOMIC_ACQ_REL)) {
		note(w, "heap destroy (last free)");
		nd_heap_destroy(hr->h);
	}
}

static void heap_retire(worker_t *w)
{
	hrec_t *hr = w->heap;
	if (!hr)
		return;
	w->heap = NULL;
	/* all its live objects in this thread's slots: destroy with them */
	long mine = 0;
	for (int i = 0; i < SLOTS; i++)
		mine += w->slot[i].p && w->slot[i].heap == hr;
	if (mine && mine == __atomic_load_n(&hr->live, __ATOMIC_ACQUIRE) && R(2)) {
		for (int i = 0; i < SLOTS; i++)
			if (w->slot[i].p && w->slot[i].heap == hr) {
				verify(w, &w->slot[i], SIZE_MAX, "heap destroy");
				w->slot[i].p = NULL;
				w->slot[i].heap = NULL;
			}
		__atomic_store_n(&hr->destroyed, 1, __ATOMIC_RELAXED);
		note(w, "heap destroy with %ld live", mine);
		nd_heap_destroy(hr->h);
		return;
	}
	__atomic_store_n(&hr->retired, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&hr->live, __ATOMIC_ACQUIRE) == 0 && !__atomic_exchange_n(&hr->destroyed, 1, __ATOMIC_ACQ_REL)) {
		note(w, "heap destroy (retired empty)");
		nd_heap_destroy(hr->h);
	}
}

static void heap_new(worker_t *w)
{
	heap_retire(w);
	long k = __atomic_fetch_add(&n_hrecs, 1, __ATOMIC_RELAXED);
	if (k >= HRECS)
		return;
	hrec_t *hr = &hrecs[k];
	nd_policy_t p;
	if (R(2)) {
		int node = R(4) ? mem_node(w) : any_node(w);
		hr->h = nd_heap_new(node);
		note(w, "heap new node %d", node);
	} else {
		random_policy(w, &p);
		hr->h = nd_heap_new_policy(&p);
		note(w, "heap new policy %d", (int)p.mode);
	}
	if (!hr->h) {
		if (!(may_fail && errno == ENOMEM))
			fail(w, "nd_heap_new", NULL, (size_t)errno);
		return;
	}
	hr->owner = w->gen;
	w->heap = hr;
	__atomic_add_fetch(&stat_heaps, 1, __ATOMIC_RELAXED);
}

static int out_of_memory(worker_t *w, int err)
{
	if (!may_fail || err != ENOMEM)
		return 0;
	__atomic_add_fetch(&stat_enomem, 1, __ATOMIC_RELAXED);
	return 1;
}

/* A new block in b (empty). */
static void allocate(worker_t *w, blk_t *b)
{
	blk_t nb = { NULL, pick_size(w), 0, ++w->next_id, (uint8_t)R(K_NALLOC), NULL };
	size_t n = nb.n, al = (size_t)16 << R(17); /* 16 .. 1 MiB */
	int zero = 0, node = -2, rc;
	unsigned lg = (unsigned)R(23), flags;
	nd_policy_t pol;
	nd_nodemask_t set;
	int strict = 0;
	errno = 0;
	switch (nb.kind) {
	case K_MALLOC: nb.p = nd_malloc(n); break;
	case K_CALLOC:
	case K_NDCALLOC: {
		size_t k = 1 + R(8);
		nb.n = n / k * k;
		zero = 1;
#ifndef ND_FUZZ_NO_OVERRIDE
		if (nb.kind == K_CALLOC) {
			nb.p = calloc(k, nb.n / k);
			break;
		}
#endif
		nb.p = nd_calloc(k, nb.n / k);
		break;
	}
	case K_ALIGNED: nb.align = al; nb.p = nd_aligned_alloc(al, n); break;
#ifndef ND_FUZZ_NO_OVERRIDE
	case K_POSIX:
		nb.align = al;
		rc = posix_memalign((void **)&nb.p, al, n);
		if (rc) {
			nb.p = NULL;
			errno = rc;
		}
		break;
	case K_MEMALIGN: nb.align = al; nb.p = memalign(al, n); break;
	case K_VALLOC: nb.align = 4096; nb.p = valloc(n); break;
	case K_REALLOCARRAY: nb.p = reallocarray(NULL, n ? n : 1, 1); nb.n = n ? n : 1; break;
#else
	case K_POSIX:
	case K_MEMALIGN:
	case K_VALLOC:
	case K_REALLOCARRAY:
		(void)rc;
		nb.kind = K_MALLOC;
		nb.p = nd_malloc(n);
		break;
#endif
	case K_ONNODE: node = any_node(w); nb.p = nd_malloc_onnode(n, node); break;
	case K_LOCAL: nb.p = nd_malloc_local(n); break;
	case K_POLICY:
	case K_PREPARED: {
		random_policy(w, &pol);
		strict = strict_set(&pol, &set);
		const nd_policy_t *pp = &pol;
		if (nb.kind == K_PREPARED && !(pp = nd_policy_prepare(&pol))) {
			fail(w, "nd_policy_prepare", NULL, (size_t)errno);
			return;
		}
		nb.p = nd_malloc_policy(n, pp);
		break;
	}
	case K_INTERLEAVED:
		random_set(w, &set);
		strict = !may_fail;
		nb.n = n ? n : 1;
		nb.p = nd_malloc_interleaved(nb.n, &set, (size_t)4096 << R(10));
		break;
	case K_MALLOCX_NODE:
	case K_MALLOCX_POL:
		flags = (R(2) ? ND_MALLOCX_ZERO : 0) | (R(3) ? ND_MALLOCX_LG_ALIGN(lg) : 0);
		zero = !!(flags & ND_MALLOCX_ZERO);
		nb.align = flags & 63 ? (size_t)1 << (flags & 63) : 0;
		if (nb.kind == K_MALLOCX_NODE) {
			node = any_node(w);
			nb.p = nd_mallocx_onnode(n, node, flags);
		} else if (R(3)) {
			random_policy(w, &pol);
			strict = strict_set(&pol, &set);
			nb.p = nd_mallocx_policy(n, &pol, flags);
		} else {
			nb.p = nd_mallocx_policy(n, NULL, flags);
		}
		break;
	case K_CALLOC_NODE:
		zero = 1;
		node = any_node(w);
		nb.p = nd_calloc_onnode(1, n, node);
		break;
	case K_CALLOC_POL:
		zero = 1;
		random_policy(w, &pol);
		strict = strict_set(&pol, &set);
		nb.p = nd_calloc_policy(n, 1, &pol);
		break;
	case K_ALIGNED_NODE:
		nb.align = al;
		node = any_node(w);
		nb.p = nd_aligned_alloc_onnode(al, n, node);
		break;
	case K_ALIGNED_POL:
		nb.align = al;
		random_policy(w, &pol);
		strict = strict_set(&pol, &set);
		nb.p = nd_aligned_alloc_policy(al, n, &pol);
		break;
	case K_HEAP:
	case K_HEAP_CALLOC:
	case K_HEAP_ALIGNED:
		if (!w->heap || R(64) == 0)
			heap_new(w);
		if (!w->heap) {
			nb.kind = K_MALLOC;
			nb.p = nd_malloc(n);
			break;
		}
		nb.heap = w->heap;
		if (nb.kind == K_HEAP)
			nb.p = nd_heap_malloc(w->heap->h, n);
		else if (nb.kind == K_HEAP_CALLOC) {
			zero = 1;
			nb.p = nd_heap_calloc(w->heap->h, 1, n);
		} else {
			nb.align = al > 65536 ? 4096 : al;
			nb.p = nd_heap_aligned_alloc(w->heap->h, nb.align, n);
		}
		break;
	}
	int err = errno;
	if (!nb.p) {
		if (!out_of_memory(w, err)) {
			char what[96];
			snprintf(what, sizeof what, "%s returned NULL (errno %d)", kname[nb.kind], err);
			fail(w, what, &nb, 0);
		}
		return;
	}
	if (nb.heap)
		__atomic_add_fetch(&nb.heap->live, 1, __ATOMIC_RELAXED);
	if (nb.align && (uintptr_t)nb.p % nb.align)
		fail(w, "misaligned", &nb, (uintptr_t)nb.p % nb.align);
	if (nd_usable_size(nb.p) < nb.n)
		fail(w, "usable size below the request", &nb, nd_usable_size(nb.p));
	if (nb.kind == K_MALLOC && nd_usable_size(nb.p) < nd_good_size(nb.n))
		fail(w, "usable size below nd_good_size", &nb, nd_usable_size(nb.p));
	if (zero)
		check_zero(w, &nb);
	int where = nd_node_of(nb.p);
	if (where < 0)
		fail(w, "nd_node_of: not nodalloc's", &nb, 0);
	/* a bind or interleave placement stays in its set; so does the thread's
	 * own bind/interleave policy for plain malloc */
	if (!strict && w->pol_strict && nb.kind == K_MALLOC) {
		strict = 1;
		set = w->pol_set;
	}
	if (strict && where >= 0 && !nd_nodemask_isset(&set, where))
		fail(w, "placed outside the policy's nodes", &nb, (size_t)where);
	/* a node with memory to spare (not ND_FUZZ_ENOMEM's) gives the block */
	if (node >= 0 && !may_fail && nd_node_has_memory(node) && where != node)
		fail(w, "not on the node asked", &nb, (size_t)where);
	note(w, "alloc %x %s %zu align %zu at node %d", nb.id, kname[nb.kind], nb.n, nb.align, where);
	fill(&nb);
	*b = nb;
}

/* realloc of b (own, or another thread's taken from the exchange). */
static void reallocate(worker_t *w, blk_t *b)
{
	size_t n = R(4) ? pick_size(w) : b->n + R(b->n / 2 + 64), keep = n < b->n ? n : b->n;
	if (!verify(w, b, SIZE_MAX, "before realloc"))
		return;

	note(w, "realloc %x %s %zu -> %zu", b->id, kname[b->kind], b->n, n);
	errno = 0;
	unsigned char *q;
#ifndef ND_FUZZ_NO_OVERRIDE
	if (R(4) == 0 && n)
		q = reallocarray(b->p, n, 1);
	else
#endif
		q = nd_realloc(b->p, n);
	if (!q && n == 0) { /* freed (glibc returns NULL) */
		hrec_t *hr = b->heap;
		b->p = NULL;
		b->heap = NULL;
		if (hr)
			heap_put(w, hr);
		return;
	}
	if (!q) {
		if (!out_of_memory(w, errno))
			fail(w, "realloc returned NULL", b, n);
		return; /* the old block stands */
	}
	hrec_t *hr = b->heap;
	if (hr && q != b->p && hr->owner != w->gen) {
		b->heap = NULL; /* moved out of the heap */
		heap_put(w, hr);
	}
	blk_t old = *b;
	old.p = q;
	verify(w, &old, keep, "after realloc");
	b->p = q;
	b->n = n;
	b->align = 0;
	if (b->kind != K_HEAP && b->kind != K_HEAP_ALIGNED && b->kind != K_HEAP_CALLOC)
		b->kind = K_MALLOC;
	else if (!b->heap)
		b->kind = K_MALLOC;
	else
		b->kind = K_HEAP;
	if (nd_usable_size(q) < n)
		fail(w, "usable size below the request after realloc", b, nd_usable_size(q));
	fill(b);
}

/* Swaps b with an exchange slot: b goes out (boxed), whatever was there
 * comes in (freed, reallocated, or kept). */
static void exchange(worker_t *w, blk_t *b)
{
	blk_t *box = NULL;
	if (b->p) {
		box = nd_malloc(sizeof *box);
		if (!box) {
			release(w, b, "exchange (no box)");
			return;
		}
		*box = *b;
		b->p = NULL;
		b->heap = NULL;
	}
	blk_t *in = __atomic_exchange_n(&xch[R(XCH)], box, __ATOMIC_ACQ_REL);
	if (!in)
		return;
	*b = *in;
	nd_free(in);
	note(w, "took %x %s %zu", b->id, kname[b->kind], b->n);
	switch (R(3)) {
	case 0:
		release(w, b, "cross-thread free");
		__atomic_add_fetch(&stat_xfree, 1, __ATOMIC_RELAXED);
		break;
	case 1:
		reallocate(w, b);
		__atomic_add_fetch(&stat_xrealloc, 1, __ATOMIC_RELAXED);
		break;
	default: verify(w, b, SIZE_MAX, "taken from the exchange"); break;
	}
}

/* ---- the rest ----------------------------------------------------------- */

static void set_thread_policy(worker_t *w)
{
	nd_policy_t p;
	if (R(5) == 0) {
		w->pol_strict = 0;
		nd_set_policy(NULL);
		note(w, "thread policy: default");
		return;
	}
	random_policy(w, &p);
	if (nd_set_policy(&p) != 0) {
		fail(w, "nd_set_policy", NULL, (size_t)errno);
		return;
	}
	nd_policy_t got;
	if (nd_get_policy(&got) != 0 || got.mode != p.mode)
		fail(w, "nd_get_policy: not what was set", NULL, (size_t)got.mode);
	w->pol_strict = strict_set(&p, &w->pol_set);
	note(w, "thread policy mode %d", (int)p.mode);
	__atomic_add_fetch(&stat_pol, 1, __ATOMIC_RELAXED);
}

static void set_process_policy(worker_t *w)
{
	nd_policy_t p;
	if (R(3) == 0) {
		nd_set_default_policy(NULL);
		note(w, "process policy: local");
		return;
	}
	random_policy(w, &p);
	if (p.mode == ND_POLICY_BIND && may_fail) /* every thread bound to a tight node: fine, but rarer */
		p.mode = ND_POLICY_PREFERRED_MANY;
	if (nd_set_default_policy(&p) != 0)
		fail(w, "nd_set_default_policy", NULL, (size_t)errno);
	note(w, "process policy mode %d", (int)p.mode);
	__atomic_add_fetch(&stat_pol, 1, __ATOMIC_RELAXED);
}

static void migrate(worker_t *w)
{
	__atomic_add_fetch(&stat_migr, 1, __ATOMIC_RELAXED);
	if (emulated && R(3) == 0) {
		int c = R(4) == 0 ? -1 : emcpu[R(n_emcpus)];
		nd_emulate_cpu(c);
		note(w, "emulate cpu %d", c);
		return;
	}
	if (n_realcpus < 1)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	if (R(4) == 0)
		for (int i = 0; i < n_realcpus; i++)
			CPU_SET(realcpu[i], &set);
	else
		CPU_SET(realcpu[R(n_realcpus)], &set);
	sched_setaffinity(0, sizeof set, &set);
	note(w, "affinity, on cpu %d", sched_getcpu());
}

static void percpu_ops(worker_t *w)
{
	__atomic_add_fetch(&stat_percpu, 1, __ATOMIC_RELAXED);
	if (!w->pc || R(32) == 0) {
		if (w->pc) {
			if (nd_percpu_sum(w->pc) != w->pc_count)
				fail(w, "per-CPU counter sum", NULL, (size_t)nd_percpu_sum(w->pc));
			nd_percpu_free(w->pc);
		}
		w->pc = nd_percpu_alloc(8 << R(3), 8);
		w->pc_count = 0;
		if (!w->pc) {
			if (!out_of_memory(w, errno))
				fail(w, "nd_percpu_alloc", NULL, (size_t)errno);
			return;
		}
		if (nd_percpu_sum(w->pc) != 0)
			fail(w, "nd_percpu_alloc: not zero", NULL, 0);
	}
	int k = 1 + (int)R(16);
	for (int i = 0; i < k; i++) {
		switch (R(3)) {
		case 0: nd_percpu_inc(w->pc); w->pc_count++; break;
		case 1: nd_percpu_add(w->pc, 3); w->pc_count += 3; break;
		default: nd_percpu_add_return(w->pc, -1); w->pc_count--; break;
		}
		nd_percpu_inc(shared_pc);
		__atomic_add_fetch(&shared_pc_count, 1, __ATOMIC_RELAXED);
	}
	/* a compare-exchange of the current CPU's copy: it moved by one
	 * when it saw the value it read (else the thread migrated between) */
	int64_t v = nd_percpu_cmpxchg(w->pc, INT64_MIN, INT64_MIN);
	if (nd_percpu_cmpxchg(w->pc, v, v + 1) == v)
		w->pc_count++;
	if (nd_percpu_sum(w->pc) != w->pc_count)
		fail(w, "per-CPU counter sum", NULL, (size_t)nd_percpu_sum(w->pc));
	/* a dense area of odd size: zeroed, each CPU's copy its own */
	size_t sz = 1 + R(200);
	nd_percpu_t a = nd_percpu_alloc(sz, 0);
	if (!a) {
		if (!out_of_memory(w, errno))
			fail(w, "nd_percpu_alloc (area)", NULL, (size_t)errno);
		return;
	}
	for (int c = 0; c < cpus; c++) {
		unsigned char *q = nd_percpu_ptr(a, c);
		if (!q)
			continue;
		for (size_t i = 0; i < sz; i++)
			if (q[i]) {
				fail(w, "per-CPU area not zero", NULL, i);
				break;
			}
		memset(q, (int)(c + 1), sz);
	}
	for (int c = 0; c < cpus; c++) {
		unsigned char *q = nd_percpu_ptr(a, c);
		for (size_t i = 0; q && i < sz; i++)
			if (q[i] != (unsigned char)(c + 1)) {
				fail(w, "per-CPU area overwritten", NULL, i);
				break;
			}
	}
	nd_percpu_free(a);
}

static void table_ops(worker_t *w)
{
	nd_table_desc_t d = { 0 };
	nd_table_t t;
	d.name = "fuzz";
	d.bucket_size = 8;
	d.entries = (uint64_t)1 << (4 + R(15));
	d.flags = (R(2) ? ND_TABLE_ZERO : 0) | (R(3) == 0 ? ND_TABLE_LOCAL : R(2) ? ND_TABLE_DISTRIBUTE : 0);
	__atomic_add_fetch(&stat_tables, 1, __ATOMIC_RELAXED);
	if (nd_table_alloc(&d, &t) != 0) {
		if (!out_of_memory(w, errno))
			fail(w, "nd_table_alloc", NULL, (size_t)errno);
		return;
	}
	blk_t b = { t.base, t.bytes, 0, ++w->next_id, 0, NULL };
	if (d.flags & ND_TABLE_ZERO)
		check_zero(w, &b);
	uint64_t by[ND_MAX_NODES], sum = 0;
	int k = nd_table_node_bytes(&t, by, nodes);
	for (int i = 0; i < k; i++)
		sum += by[i];
	if (k < 0 || sum != t.bytes)
		fail(w, "nd_table_node_bytes: sum", &b, (size_t)sum);
	fill(&b);
	verify(w, &b, SIZE_MAX, "table");
	nd_table_free(&t);
}

static void forked(worker_t *w);

static void trim(worker_t *w)
{
	__atomic_add_fetch(&stat_trims, 1, __ATOMIC_RELAXED);
#ifndef ND_FUZZ_NO_OVERRIDE
	malloc_trim(0);
#endif
	/* the snapshots, while the others run. No lock of the fuzzer's own
	 * (a static snapshot under a mutex was here): a thread holding it at
	 * a fork left it held in the child, whose thread then waited for
	 * good: a forked child hung (seed 3015); with more trims one did
	 * again, gdb showing its thread in pthread_mutex_lock, the owner a
	 * parent thread (part.cmake, threads_snapfork) */
	nd_stats_t st;
	nd_class_stats_t cs[64];
	st.version = ND_STATS_VERSION;
	if (nd_stats_get(&st) != 0 && errno != ERANGE)
		fail(w, "nd_stats_get", NULL, (size_t)errno);
	if (fork_snap) /* ND_FUZZ_FORK_SNAP=1: a fork amid the snapshots (the child's thread takes its own) */
		forked(w);
	int ncls = nd_stats_classes(cs, 64);
	if (ncls < 1)
		fail(w, "nd_stats_classes", NULL, (size_t)ncls);
	uint64_t counts[8];
	for (int i = 0; i < 4; i++) {
		blk_t *b = &w->slot[R(SLOTS)];
		if (b->p && b->n && nd_where(b->p, b->n, counts, 8) < 0)
			fail(w, "nd_where", b, (size_t)errno);
	}
}

static void *worker(void *arg);
/* the child's thread: no fork of its own (forking is set in the child);
 * it trims and takes the snapshots first, over the records, heaps and
 * slabs of the parent's threads the child does not have */
static void *child_worker(void *arg)
{
	worker_t *w = arg;
	me = w;
	trim(w);
	return worker(arg);
}

/* fork while the others run: the child checks this thread's blocks, frees
 * the exchange's, frees, reallocates and allocates, runs a thread of its
 * own, and exits with its verdict */
static void forked(worker_t *w)
{
	static int forking;
	if (__atomic_exchange_n(&forking, 1, __ATOMIC_ACQUIRE))
		return;
	note(w, "fork");
	__atomic_add_fetch(&stat_forks, 1, __ATOMIC_RELAXED);
	long before = __atomic_load_n(&failures, __ATOMIC_RELAXED);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		for (int i = 0; i < SLOTS; i++)
			if (w->slot[i].p && !verify(w, &w->slot[i], SIZE_MAX, "in the forked child"))
				break;
		/* the exchange's blocks: threads the child does not have made
		 * them (their heaps, records and thread pointers the parent's) */
		for (int i = 0; i < XCH; i++) {
			blk_t *in = __atomic_exchange_n(&xch[i], NULL, __ATOMIC_ACQ_REL);
			if (in) {
				blk_t b = *in;
				nd_free(in);
				release(w, &b, "in the child, from the exchange");
			}
		}
		for (int i = 0; i < SLOTS; i++) {
			blk_t *b = &w->slot[i];
			switch (R(4)) {
			case 0: release(w, b, "in the child"); break;
			case 1:
				if (b->p)
					reallocate(w, b);
				break;
			case 2:
				if (!b->p)
					allocate(w, b);
				break;
			}
		}
		/* a thread of the child's own, on a fresh position's blocks */
		static worker_t cw;
		pthread_t th;
		note(w, "child: a thread of its own, joined");
		cw.pos = MAXT - 1;
		cw.gen = w->gen + 1000 * MAXT;
		cw.s = w->s ^ 0x5555;
		cw.ops = 300;
		if (pthread_create(&th, NULL, child_worker, &cw) == 0)
			pthread_join(th, NULL);
		for (int i = 0; i < SLOTS; i++) {
			if (w->slot[i].p)
				verify(w, &w->slot[i], SIZE_MAX, "in the child, at its end");
			if (cw.slot[i].p)
				release(w, &cw.slot[i], "in the child, its thread's");
		}
		_exit(__atomic_load_n(&failures, __ATOMIC_RELAXED) != before ? 1 : 0);
	}
	if (pid < 0) {
		__atomic_store_n(&forking, 0, __ATOMIC_RELEASE);
		if (errno != EAGAIN && errno != ENOMEM)
			fail(w, "fork", NULL, (size_t)errno);
		return;
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		char what[96];
		snprintf(what, sizeof what, "forked child: %s %d", WIFSIGNALED(st) ? "signal" : "status",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		fail(w, what, NULL, 0);
	}
	__atomic_store_n(&forking, 0, __ATOMIC_RELEASE);
}

static void *worker(void *arg)
{
	worker_t *w = arg;
	me = w;
	char name[16];
	snprintf(name, sizeof name, "fz%d.%llu", w->pos, (unsigned long long)(w->gen / MAXT));
	pthread_setname_np(pthread_self(), name);
	w->pol_strict = 0;
	for (w->op = 0; w->op < w->ops; w->op++) {
		uint64_t r = rnd(&w->s);
		blk_t *b = &w->slot[r % SLOTS];
		unsigned k = (unsigned)(r >> 16) % 1000;
		if (k < 330) {
			if (b->p)
				release(w, b, "free");
			else
				allocate(w, b);
		} else if (k < 560) {
			if (b->p)
				release(w, b, "free before alloc");
			allocate(w, b);
		} else if (k < 700) {
			if (b->p)
				reallocate(w, b);
			else
				allocate(w, b);
		} else if (k < 900) {
			exchange(w, b);
		} else if (k < 940) {
			if (b->p)
				verify(w, b, SIZE_MAX, "check");
		} else if (k < 950) {
			set_thread_policy(w);
		} else if (k < 952) {
			set_process_policy(w);
		} else if (k < 965) {
			migrate(w);
		} else if (k < 975) {
			percpu_ops(w);
		} else if (k < 977) {
			table_ops(w);
		} else if (k < 979) {
			trim(w);
		} else if (k < 985) {
			heap_new(w);
		} else if (k < 986 && do_fork && R(2) == 0) {
			forked(w);
		}
		if (do_fork > 1 && R(2000) < (uint64_t)do_fork)
			forked(w); /* ND_FUZZ_FORK=N: N more in 2000 */
		if (do_trim && R(2000) < (uint64_t)do_trim)
			trim(w); /* ND_FUZZ_TRIM=N: N more in 2000 */
	}
	/* the end: frees some, leaves the rest to the next thread here */
	unsigned share = (unsigned)R(4);
	for (int i = 0; i < SLOTS; i++)
		if (w->slot[i].p && R(4) < share)
			release(w, &w->slot[i], "at exit");
	heap_retire(w);
	if (w->pc && R(2)) {
		if (nd_percpu_sum(w->pc) != w->pc_count)
			fail(w, "per-CPU counter sum at exit", NULL, (size_t)nd_percpu_sum(w->pc));
		nd_percpu_free(w->pc);
		w->pc = 0;
	}
	if (R(4) == 0)
		nd_set_policy(NULL); /* else the policy dies with the thread */
	__atomic_add_fetch(&stat_ops, w->op, __ATOMIC_RELAXED);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void start(worker_t *w, pthread_t *th, long ops, uint64_t generation)
{
	w->gen = (uint64_t)w->pos + MAXT * generation;
	w->s = seed * 0x100000001b3ull + w->gen * 0x9e3779b97f4a7c15ull;
	w->ops = ops;
	w->done = 0;
	w->logi = 0;
	memset(w->log, 0, sizeof w->log);
	if (pthread_create(th, NULL, worker, w) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	long ops;
	int nt;
	if (fuzz_args(argc, argv, 4, MAXT, &seed, &ops, &nt))
		return 2;
	snprintf(crash_line, sizeof crash_line, "seed %llu (%s %s %ld %d)", (unsigned long long)seed, argv[0],
		 argv[1], ops, nt);
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGABRT, on_crash);
	signal(SIGALRM, on_crash);
	may_fail = getenv("ND_FUZZ_ENOMEM") && atoi(getenv("ND_FUZZ_ENOMEM"));
	hang_wait = getenv("ND_FUZZ_HANG_WAIT") && atoi(getenv("ND_FUZZ_HANG_WAIT"));
	if (getenv("ND_FUZZ_FORK"))
		do_fork = atoi(getenv("ND_FUZZ_FORK"));
	if (getenv("ND_FUZZ_TRIM"))
		do_trim = atoi(getenv("ND_FUZZ_TRIM"));
	fork_snap = getenv("ND_FUZZ_FORK_SNAP") && atoi(getenv("ND_FUZZ_FORK_SNAP"));
	emulated = getenv("NODALLOC_TOPOLOGY") != NULL;
	nodes = nd_node_limit();
	cpus = nd_cpu_limit();
	for (int i = 0; i < nodes; i++)
		if (nd_node_has_memory(i))
			memnode[n_memnodes++] = i;
	for (int c = 0; c < cpus && n_emcpus < 256; c++)
		if (nd_node_of_cpu(c) >= 0)
			emcpu[n_emcpus++] = c;
	cpu_set_t orig;
	if (sched_getaffinity(0, sizeof orig, &orig) == 0)
		for (int c = 0; c < CPU_SETSIZE && n_realcpus < 64; c++)
			if (CPU_ISSET(c, &orig))
				realcpu[n_realcpus++] = c;
	shared_pc = nd_percpu_alloc(8, 8);
	if (!shared_pc) {
		fprintf(stderr, "nd_percpu_alloc failed\n");
		return 1;
	}

	/* each position runs threads of ops/nt/4 .. ops/nt/2 operations, new
	 * ones until the total is spent */
	long per = ops / nt, spent = 0;
	if (per < 8)
		per = 8;
	pthread_t th[MAXT];
	uint64_t gen[MAXT] = { 0 };
	uint64_t ms = seed;
	long gens = 0;
	for (int t = 0; t < nt; t++) {
		W[t].pos = t;
		long k = per / 4 + (long)(rnd(&ms) % (uint64_t)(per / 4 + 1));
		spent += k;
		start(&W[t], &th[t], k, gen[t]++);
	}
	int running = nt;
	while (running) {
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
		for (int t = 0; t < nt; t++) {
			if (!th[t] || !__atomic_load_n(&W[t].done, __ATOMIC_ACQUIRE))
				continue;
			pthread_join(th[t], NULL);
			th[t] = 0;
			running--;
			gens++;
			if (spent < ops) {
				long k = per / 4 + (long)(rnd(&ms) % (uint64_t)(per / 4 + 1));
				spent += k;
				start(&W[t], &th[t], k, gen[t]++);
				running++;
			}
		}
	}
	stat_exits = gens;
	/* the survivors: every block checked and freed by the main thread */
	worker_t *w = &W[0];
	me = w;
	for (int t = 0; t < nt; t++) {
		for (int i = 0; i < SLOTS; i++)
			if (W[t].slot[i].p)
				release(w, &W[t].slot[i], "at the end");
		if (W[t].pc) {
			if (nd_percpu_sum(W[t].pc) != W[t].pc_count)
				fail(w, "per-CPU counter sum at the end", NULL, 0);
			nd_percpu_free(W[t].pc);
		}
	}
	for (int i = 0; i < XCH; i++) {
		blk_t *in = __atomic_exchange_n(&xch[i], NULL, __ATOMIC_ACQ_REL);
		if (in) {
			blk_t b = *in;
			nd_free(in);
			release(w, &b, "from the exchange at the end");
		}
	}
	long undestroyed = 0;
	for (long i = 0; i < (n_hrecs < HRECS ? n_hrecs : HRECS); i++)
		if (hrecs[i].h && !hrecs[i].destroyed)
			undestroyed++;
	if (undestroyed)
		fail(w, "public heaps left undestroyed (a live count went wrong)", NULL, (size_t)undestroyed);
	if (nd_percpu_sum(shared_pc) != shared_pc_count)
		fail(w, "shared per-CPU counter sum", NULL, (size_t)nd_percpu_sum(shared_pc));
	const char *v = getenv("ND_FUZZ_VARIANT");
	printf("fuzz_threads %s: seed %llu, %d positions, %ld threads, %d nodes: %ld ops, %ld cross-thread frees, "
	       "%ld cross-thread reallocs, %ld forks, %ld migrations, %ld policy changes, %ld heaps, %ld per-CPU, "
	       "%ld tables, %ld trims, %ld ENOMEM, %ld failures\n",
	       v ? v : "", (unsigned long long)seed, nt, gens, nodes, stat_ops, stat_xfree, stat_xrealloc, stat_forks,
	       stat_migr, stat_pol, stat_heaps, stat_percpu, stat_tables, stat_trims, stat_enomem, failures);
	return failures ? 1 : 0;
}
