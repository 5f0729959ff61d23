// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 2c,
 * thread.c. */
#ifndef ND_THREAD_H
#define ND_THREAD_H

/* ======================================================================
 * src/thread.c: the thread record. The library's only initial-exec TLS is
 * one pointer, _nd_tls, to the calling thread's record (so the library can
 * be dlopen'ed: static TLS has room for a pointer, not for kilobytes).
 * Each layer keeps its per-thread state in its part of the record.
 * ====================================================================== */

struct nd_heap;
/* The slab layer's key that no CPU pair ever equals (rseq's cpu_id_start
 * always holds a real CPU number). */
#define ND_KEY_NONE UINT64_MAX
/* place.c's fast paths index a class table by size up to here. */
#define ND_SLAB_DIRECT 256
/* That table, slab.c's classes up to ND_SLAB_DIRECT by the size itself:
 * 16..128 by 16, then 160..256 by 32 (docs/malloc.md; test_place_fast
 * checks every size against malloc's usable size). */
#define ND_SCLS(s) ((s) <= 16 ? 0 : (s) <= 128 ? ((s) + 15) / 16 - 1 : 8 + ((s) - 129) / 32)
#define ND_SCLS4(s) ND_SCLS(s), ND_SCLS((s) + 1), ND_SCLS((s) + 2), ND_SCLS((s) + 3)
#define ND_SCLS16(s) ND_SCLS4(s), ND_SCLS4((s) + 4), ND_SCLS4((s) + 8), ND_SCLS4((s) + 12)
#define ND_SCLS64(s) ND_SCLS16(s), ND_SCLS16((s) + 16), ND_SCLS16((s) + 32), ND_SCLS16((s) + 48)
#define ND_SCLS_INIT { ND_SCLS64(0), ND_SCLS64(64), ND_SCLS64(128), ND_SCLS64(192), ND_SCLS(256) }
/* The largest lg of an alignment place.c's x calls serve on their fast
 * path (a page), and the record's table of their rounding masks. */
#define ND_XLG_FAST 12
#define ND_XMASK_INIT { 0, 1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095 }
/* The largest lg whose x calls take the class of a size up to
 * ND_SLAB_DIRECT from a row (the record's xrow; thread.c's rows): 256. */
#define ND_XLG_ROW 8
/* malloc sizes 0..ND_SLAB_DIR_MAX index dir[] by (size + 15) >> 4 (every
 * class up to there is a multiple of 16): 65 entries, 9 lines, and one
 * predictable test for programs whose sizes mix small and up to 1 KiB
 * (a bound at 256 mispredicted 0.30 times per pair on wl_larson). */
#define ND_SLAB_DIR_MAX 1024
#define ND_PCACHE 4 /* nd_malloc_policy's cache: policy objects remembered */
#define ND_NHEAP_IN 32 /* node heaps the record holds itself (nheap[]) */
/* Size classes (docs/malloc.md): 16..128 by 16, ..512 by 32, ..1024 by 64,
 * then 4 per power of two and 1152 and 4608: ND_SLAB_SIZED of them, sorted by size (the
 * class table's), then the uncoloured twins of 8192 and 16384 that only
 * the aligned calls take (slab.c, cls_al). A twin is a class of the
 * heaps (lists, kept slabs, statistics) but not of the thread record:
 * its slabs use their size's class's entries here (rf[], cls_refill[],
 * cls_remote[], bwl[], cdir[]; the slab's bwo, _nd_slab_tcls), whose
 * objects they may serve (8192 and 16384 B, aligned to their size). */
#define ND_SLAB_SIZED 50
#define ND_SLAB_CLASSES (ND_SLAB_SIZED + 2)
_Static_assert(ND_SLAB_CLASSES <= 64, "class masks (rf_mask, a heap's notify) are 64-bit words");

/* slab.c's hot slab fields (nd_slab.h describes them): the fast paths'
 * part of a slab header, and of the record's borrowed lists (bwl[]). Two
 * lines: the first is read by every free, from any thread, and written
 * only rarely (carving, parking); the second, free and used, is written
 * by every malloc and free of the owner. Apart, a remote free does not
 * pull in a line the owner keeps dirty (wl_xfree). _nd_slab_t repeats the
 * first six fields and keeps its own read-mostly fields in the rest of
 * the first line. */
typedef struct _nd_slab_hot {
	char *start;     /* first object (its run's start, or a coloured slab's 64 B multiple into it) */
	uint64_t mul;    /* (size's odd part)^-1 << (16 - tz) mod 2^64: see nd_slab.h */
	uint64_t chk;    /* atomic: start and lim (objects carved; 0 in check mode:
			  * frees validate) folded for free's check, _nd_slab_live */
	uintptr_t tp;    /* atomic: owner thread's pointer (%fs:0), | _nd_slab_tp_mix(node1)
			  * once an object was borrowed (nd_slab.h); 0 while parked */
	uint8_t cls;     /* size class (slabs only; a free picks the list by bwo) */
	uint16_t node1;  /* node + 1 (slabs only: the borrowing rule's) */
	uint16_t cap_;   /* (a slab's cap) */
	uint16_t bwo;    /* _nd_slab_cls_tc[cls] << 4 (slabs only): its borrowed list's and
			  * remote counter's offset in a record (free's index) */
	/* padding, not _Alignas: a borrowed list (bwl[]) is an
	 * _nd_slab_hot_t at a 16-byte boundary */
	char line1_end[ND_CACHE_LINE - 40];
	void *free;      /* private free list (owner only) */
	uint32_t used;   /* objects out; while on the full list, lowered by fbias
			  * (a slab's: relaxed stores, statistics read it; nd_slab.h) */
} _nd_slab_hot_t;

/* heap.c's heap, the part place.c's fast paths read: _nd_heap_t (nd_slab.h)
 * starts with these fields. Here, not in nd_slab.h, for thread.c's empty
 * heap (_nd_thread_noheap). il_gran and il_bits: nd_malloc_interleaved's
 * arguments (the granularity as given, 0 or 4K for one page, and the
 * set's first 64 nodes) that the heap's policy was made from, written by
 * place.c when the heap becomes its owner's ilheap (the record's, below),
 * meaningful only while it is; owner only. */
typedef struct _nd_heap_hot {
	uint64_t il_gran;
	uint64_t il_bits;
	_nd_slab_hot_t *cur[ND_SLAB_CLASSES]; /* owner only; an empty slab if none */
} _nd_heap_hot_t;

/* slab.c's remote-free buffer, one entry per size class: objects freed by
 * this thread into one slab it does not own, chained through word 1 (each
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
/* The record's layout (issue 11: peak RSS of small processes): two pages,
 * page-aligned in their chunk (thread.c). The first holds what every
 * thread touches (the fast paths, the remote-free buffer, the fields a
 * fresh record sets); the second what only some threads write (borrowed
 * lists, remote-free statistics, policy heaps, the interleave credits),
 * written at creation only if not zero (a fresh chunk's page reads zero
 * without being resident). A thread that mallocs and frees its own
 * memory touches one page, not the two or three of 7.7 KiB records
 * packed end to end (wl_prodcons: 6 pages -> 4 for its 3 threads). */
#define ND_THREAD_PAGE1 4096
/* page.c's burst in one word (page_drop below): pages, saturating at
 * ND_DROP_MAX (8 GiB), and the node + 1 of its runs. */
#define ND_DROP_BITS 21
#define ND_DROP_MAX ((1u << ND_DROP_BITS) - 1)
#define ND_DROP_NODES ((1u << (32 - ND_DROP_BITS)) - 1)
/* drop_node1 once the thread's exit handed its burst on (page.c,
 * _nd_page_burst_done): no node's, and no later free counts */
#define ND_DROP_GONE ND_DROP_NODES
typedef struct _nd_thread {
	union {
	struct {
	/* ---- slab.c: the malloc fast path (docs/malloc.md) ---- */
	/* dir[(size + 15) >> 4]: the resolved heap's current slab of size's
	 * class (meaningful only while key matches) */
	struct _nd_slab_hot *dir[ND_SLAB_DIR_MAX / 16 + 1];
	const uint64_t *cpu64;  /* the CPU twice (rseq cpu_id_start:cpu_id, or cpu_pair) */
	uint64_t key;           /* atomic: *cpu64 when heap was resolved, else NONE */
	uint64_t lkey;          /* atomic: the same for lheap (nd_malloc_local) */
	/* cdir[c]: what dir[] holds for class c's sizes, for every class (the
	 * fast path of sizes above ND_SLAB_DIR_MAX, through the class table) */
	struct _nd_slab_hot *cdir[ND_SLAB_SIZED];
	struct nd_heap *heap;   /* the thread policy's heap (dir mirrors it) */
	struct nd_heap *lheap;  /* the CPU's memory node's heap */
	struct nd_heap **heaps; /* [nheaps]: node heaps by wanted node (nheap up to ND_NHEAP_IN nodes) */
	int nheaps;
	int nbig;               /* nheaps, 0 in check mode: their bound of heaps[] past nheap */
	int64_t nfast;          /* nheaps up to ND_NHEAP_IN, 0 in check mode: the node calls' bound of nheap
				 * (64 bits: place.c compares an argument's whole register, ARGREG_ALIAS) */
	/* heaps[0 .. ND_NHEAP_IN): the array itself while nheaps is at most
	 * ND_NHEAP_IN, else a copy heap.c writes with heaps[]; the node calls
	 * index it from the record they hold (one load less than heaps[]) */
	struct nd_heap *nheap[ND_NHEAP_IN];
	_Alignas(8) int32_t cpu_pair[2]; /* emulated CPU, or the CPU without rseq */
	const nd_policy_t *hpol;/* policy heap's refills use (interned) */
	/* nd_malloc_interleaved's heap (place.c): one of this thread's policy
	 * heaps, of interleave over its il_bits at its il_gran, flags 0 (set
	 * by the call's miss from entry 0 of pc[] below, which then holds
	 * those contents as a user entry: never in check mode, never on more
	 * than 64 nodes); &_nd_thread_noheap, whose pops find nothing, while
	 * none. A hit compares the call's granularity and bits[0] with the
	 * heap's il_gran and il_bits: no test of the granularity, of the
	 * mode, of a NULL heap. heap.c resets it where the thread gives a
	 * policy heap up (pheap_get's eviction, the thread's exit). */
	_nd_heap_hot_t *ilheap;
	struct _nd_pcache {     /* nd_malloc_policy: a policy object -> heap (heap.c, place.c) */
		/* place.c compares 32 bytes at once: the caller's first 16
		 * (mode, flags, granularity and the padding after it) with
		 * mode_flags:gran_pad, its nodes.bits[0] and *lane with bits0:key */
		_Alignas(16) uint64_t mode_flags; /* user's mode and flags then */
		uint64_t gran_pad;       /* user's granularity_shift and padding then */
		uint64_t bits0;          /* user's nodes.bits[0] then */
		uint64_t key;            /* atomic: *lane when resolved, else NONE */
		const uint64_t *lane;    /* cpu64 then, or (user) user's weights[0..7] */
		/* the caller's plain object whose heap is the same on every
		 * CPU (heap.c, pc_cpu_free): lane is its weights, so the 32
		 * bytes are its own bytes 0-23 and weights[0..7] (place.c reads
		 * them at fixed offsets); ND_PC_NOUSER: none */
		const nd_policy_t *user;
		uint64_t w0;             /* user's weights[0..7] then (every mode) */
		uint32_t max;            /* largest size served from the heap */
		struct nd_heap *heap;
		const nd_policy_t *pol;  /* interned copy (refills) */
		/* pol while heap is the one pol resolves to on every CPU
		 * (heap.c, pc_cpu_free): the fast paths skip key;
		 * ND_PC_NOUSER: none (never NULL, as user: a NULL policy
		 * argument matches no entry) */
		const nd_policy_t *fix;
		/* the caller's plain object whose heap follows the CPU (lane:
		 * cpu64), tested after the prepared kinds; ND_PC_NOUSER: none */
		const nd_policy_t *kuser;
	} pc[ND_PCACHE];
	/* xmask[lg] = 2^lg - 1, lg <= ND_XLG_FAST (ND_XMASK_INIT, constant):
	 * the rounding mask of an x call's alignment, here for the same
	 * reason as scls (the x calls or it into the size - 1) */
	uint64_t xmask[ND_XLG_FAST + 1];
	/* xrow[lg][size]: the class of size (up to ND_SLAB_DIRECT; 0 as 2^lg)
	 * rounded up to 2^lg, lg <= ND_XLG_ROW (constant rows of thread.c;
	 * lg <= 4 is scls itself: every class is a multiple of 16): an x
	 * call's class in one load from the row, not the mask's lea and or
	 * and the rounded size's bound */
	const uint8_t *xrow[ND_XLG_ROW + 1];
	/* scls[size]: the class of sizes up to ND_SLAB_DIRECT (ND_SCLS_INIT,
	 * constant): place.c's table, here so that a fast path indexes it
	 * from the record it holds (one load; a static table needs its
	 * address first) */
	uint8_t scls[ND_SLAB_DIRECT + 1];
	unsigned pc_next;       /* next entry to replace */
	uint64_t slow;          /* malloc slow paths taken (tests) */
	uint64_t rf_sent;       /* remote-free splices sent (tests) */
	/* per class, for _nd_slab_class_stats (written by this thread with
	 * relaxed stores, read by a snapshot with relaxed loads; folded into
	 * slab.c's totals when the thread exits). Short, so that both fit
	 * this page: from 2^31 (sent) or 2^15 (refill: 16 bits, room for
	 * the classes 1152 and 4608) on, a count moves to its 64-bit word
	 * on page 2 (_nd_thread_count): only a thread that took 32768 slow
	 * paths of one class writes page 2 for it. */
	uint16_t cls_refill[ND_SLAB_SIZED]; /* malloc slow paths (free list empty, or a new heap) */
	/* frees into other threads' slabs sent home (rf[], or one by one):
	 * a thread that only frees others' objects (a consumer) counts them
	 * here, not on page 2 (issue 11: one page less a thread; the
	 * borrowed lists' count, cls_remote, is on page 2 with the lists) */
	uint32_t cls_sent[ND_SLAB_SIZED];
	_nd_rfree_t rf[ND_SLAB_SIZED]; /* remote frees waiting to go home */
	uint64_t rf_mask;        /* bit c: rf[c] holds a chain (a flush walks only these) */
	int32_t bw_node1;        /* node + 1 the borrowed lists hold; 0: none */
	uintptr_t bw_key;        /* _nd_slab_bw_key(bw_node1), free's test (nd_slab.h) */
	/* ---- policy.c ---- */
	const nd_policy_t *pol_thr; /* NULL = inherit the process's */
	const nd_policy_t *pol_eff; /* cached effective policy */
	uint32_t pol_gen;           /* generation pol_eff is from */
	int il_node;                /* interleave cursor: node in turn (-1 none) */
	/* ---- topology.c ---- */
	struct _nd_rseq_abi *rseq;  /* NULL = not looked up, (void *)1 = none */
	int32_t cpu_override;       /* nd_emulate_cpu, -1 = real */
	/* ---- page.c ---- */
	/* pages of small node runs this thread freed, less those it took
	 * since (not below 0, saturating): how far its runs fell from their
	 * recent high, the burst its exit hands on (_nd_purge_exit) to the
	 * node of those runs, drop_node1 - 1 (0: none yet; a free on another
	 * node starts the count again there; ND_DROP_GONE: handed on). Held
	 * in that node's burst_live (nd_page.h) but the main thread's. One
	 * word: the first page is full. */
	uint32_t page_drop : ND_DROP_BITS;
	uint32_t drop_node1 : 32 - ND_DROP_BITS;
	/* ---- percpu.c ---- */
	int fb_cpu;
	unsigned fb_count;
	/* ---- thread.c ---- */
	struct _nd_thread *pool_next; /* free records (thread lock) */
	struct _nd_thread *all_next;  /* every record ever made (append only) */
	};
	char page1_[ND_THREAD_PAGE1];
	};
	/* ---- page 2 ---- */
	/* slab.c's statistics: frees into slabs of other threads, class c's
	 * in cls_remote[c].n (borrowed ones, and cls_sent[c]'s overflow): 16
	 * bytes apart, as the borrowed lists, so that a flagged free indexes
	 * both with its slab's bwo (nd_slab.h); refill: cls_refill[c]'s
	 * overflow */
	struct _nd_nrem {
		uint64_t n;
		uint64_t refill;
	} cls_remote[ND_SLAB_SIZED];
	/* borrowed lists (nd_slab.h, _nd_slab_free_push): objects this thread freed into
	 * other threads' slabs on node bw_node1 - 1 (and into its own slabs
	 * flagged ND_TP_MIX), kept for its own mallocs of the class
	 * (tcmalloc-like reuse, placement kept: only while the current heap
	 * is that node's heap). Only free, used, dry, dried, cap and when
	 * are meaningful. used is 0 while the list is idle (empty, dir[] on the heap's slab), else
	 * its cap (_nd_slab_bw_cap_of) + 1 - the objects on it (<= 0 for a
	 * list from the exchange longer than the cap), so that the push's
	 * "used <= 0" test,
	 * the owner's for a slab, fires on the first object (dir[] switches
	 * to the list) and past the cap; an empty list that keeps dir[] for
	 * a few refills (dry) is active. Objects of a lender's class may be
	 * on it (heap.c, bw_lend). Each object is marked free and
	 * counted out by its slab, as in rf[]. List c is the _nd_slab_hot_t
	 * at &bwl[c] (_nd_thread_bw): its free and used are bwl[c + 4], its
	 * first line (no one reads it for a list) is lists c - 4 .. c - 1's
	 * free and used. 16 bytes a list, not a line (issue 11: peak
	 * RSS; the record's second page 2.3 KiB shorter). */
	struct _nd_bw_line {
		_Alignas(16) void *free;
		uint32_t used;
		/* in an _nd_slab_hot_t's padding after used: */
		uint8_t dry : 7;   /* refills that found the list empty and kept
				    * dir[] on it since it last went idle
				    * (slab_remote.c, _nd_slab_bw_take) */
		uint8_t dried : 1; /* a refill found it empty since its last
				    * overflow (slab.c, bw_pace) */
		uint8_t cap;       /* its cap once grown, 0: its class's first
				    * (nd_slab.h, _nd_slab_bw_cap_of) */
		uint16_t when;     /* its last overflow, ns >> 10 mod 2^16, | 1; 0: none */
	} bwl[ND_SLAB_SIZED + ND_CACHE_LINE / 16];
	struct nd_heap *ph[8];  /* policy heaps (bind, interleave, weighted) */
	int nph;
	/* ---- policy.c (page 2) ---- */
	int32_t il_credit[64];      /* pages each node (id mod 64) may still have */
	uint64_t spread_cursor, spread_partials;
	/* ---- heap_api.c (page 2) ---- */
	/* this thread's life in the record, set by its first public heap
	 * (_nd_thread_life): a pooled record is taken with the dead thread's
	 * thread pointer too (glibc reuses its stack), so a heap tells its
	 * creator from the next thread by this; 0 again in the pool (reset) */
	uint64_t life;
	/* ---- large.c (page 2): the thread's freed runs above the largest
	 * size class (large.c, "The thread cache"): a block of its own from
	 * meta.c's pool, made at the thread's first kept run and given back
	 * at its exit; NULL: none. lblk_lock (rank ND_RANK_THREAD_LBLK)
	 * protects lblk and the block's entries: the owner takes it to put,
	 * take and exit, _nd_large_flush to take another thread's runs (under
	 * thread_lock: a pooled record is reset under it, never while held) ---- */
	struct _nd_lblk *lblk;
	_nd_lock_t lblk_lock;
} _nd_thread_t;
_Static_assert(ND_MAX_NODES < ND_DROP_GONE - 1, "drop_node1 holds every node + 1, and ND_DROP_GONE");
_Static_assert(offsetof(_nd_thread_t, all_next) + sizeof(void *) <= ND_THREAD_PAGE1 &&
		       offsetof(_nd_thread_t, cls_remote) == ND_THREAD_PAGE1,
	       "the record's first page holds what every thread touches (all_next last)");

_Static_assert(offsetof(_nd_slab_hot_t, free) == ND_CACHE_LINE &&
		       offsetof(_nd_slab_hot_t, used) == ND_CACHE_LINE + offsetof(struct _nd_bw_line, used) &&
		       ND_CACHE_LINE + offsetof(struct _nd_bw_line, cap) - 1 >= offsetof(_nd_slab_hot_t, used) + sizeof(uint32_t) &&
		       ND_CACHE_LINE + offsetof(struct _nd_bw_line, when) + sizeof(uint16_t) <= sizeof(_nd_slab_hot_t),
	       "free and used start the second line, a borrowed list's those of the fourth list after it");
/* t's borrowed list of class c: bwl + 16 c, written as bytes so that gcc
 * makes one shift and one lea of it (it added the array's index first:
 * one instruction more on every flagged free; wl_larson 2 8 100000
 * 175.6M -> 173.3M instructions). */
_Static_assert(sizeof(struct _nd_bw_line) == 16 && sizeof(struct _nd_nrem) == 16,
	       "a borrowed list and a remote counter are 16 bytes (c << 4, a slab's bwo)");
/* Adds k to a record's 32-bit counter lo (first page); from 2^31 on, the
 * count moves to its 64-bit word hi (second page), so that a thread
 * touches that page only after 2^31 events. Owner only; relaxed stores
 * (a snapshot adds lo and hi: exact when the process is quiet). */
static inline void _nd_thread_count(uint32_t *lo, uint64_t *hi, uint32_t k)
{
	uint32_t v = *lo + k;
	if (nd_unlikely(v >> 31)) {
		__atomic_store_n(hi, *hi + v, __ATOMIC_RELAXED);
		v = 0;
	}
	__atomic_store_n(lo, v, __ATOMIC_RELAXED);
}

/* The same for a 16-bit counter (cls_refill), moved from 2^15 on. */
static inline void _nd_thread_count16(uint16_t *lo, uint64_t *hi)
{
	uint32_t v = (uint32_t)*lo + 1;
	if (nd_unlikely(v >> 15)) {
		__atomic_store_n(hi, *hi + v, __ATOMIC_RELAXED);
		v = 0;
	}
	__atomic_store_n(lo, (uint16_t)v, __ATOMIC_RELAXED);
}

static inline _nd_slab_hot_t *_nd_thread_bw(_nd_thread_t *t, unsigned c)
{
	return (_nd_slab_hot_t *)(void *)((char *)t->bwl + ((size_t)c << 4));
}

/* The shared read-only records of a thread without one of its own: boot
 * before its first record, gone once its record was released at its exit
 * (a record made after the last destructor round would never be released).
 * Same contents: every key NONE, cpu_override -1 (gone is boot's copy,
 * made by the first release, thread.c). Never written but by that copy:
 * writers call _nd_thread_self(). */
extern const _nd_thread_t _nd_thread_boot __attribute__((visibility("hidden")));
/* gone's pages are its own (whole pages, thread.c): the .bss that
 * follows is not shifted off its page boundaries */
typedef union {
	_nd_thread_t t;
	char pages_[ND_ALIGN_UP(sizeof(_nd_thread_t), ND_PAGE_SIZE)];
} _nd_thread_gone_t;
extern _nd_thread_gone_t _nd_thread_gone __attribute__((visibility("hidden")));
extern ND_TLS _nd_thread_t *_nd_tls __attribute__((visibility("hidden")));
static inline bool _nd_thread_none(const _nd_thread_t *t)
{
	return t == &_nd_thread_boot || t == &_nd_thread_gone.t;
}
/* The record's ilheap while nd_malloc_interleaved has no heap: every
 * cur[] an empty slab (constant, though not const: its pointers would
 * be relocations in .data.rel.ro, a page more there in every process). */
extern _nd_heap_hot_t _nd_thread_noheap __attribute__((visibility("hidden")));
/* The user of a cache entry that matches no caller's object (a fresh
 * record's entries, an uncached topology, a heap parked): never NULL, so
 * the fast path, which reads the object once user == p, never reads a
 * NULL one (nd_malloc_policy(size, NULL) is the default policy). The
 * boot record: no caller passes its address. */
#define ND_PC_NOUSER ((const nd_policy_t *)(const void *)&_nd_thread_boot)
/* The calling thread's record, made on first use (NULL only if no memory). */
_nd_thread_t *_nd_thread_make(void);
/* The main thread's record (its tid is the pid when the record is made;
 * the forking thread's in a fork child, page.c), NULL before it has one:
 * its exit is the process's, no thread exit follows its frees (page.c's
 * burst_live leaves it out). Set by the thread itself, read relaxed. */
extern _nd_thread_t *_nd_thread_main __attribute__((visibility("hidden")));
/* The same for a free: made only before the thread's exit (boot), and
 * NULL, not waiting, while another thread holds the record lock (a free
 * never waits for a lock, even in a signal handler). */
_nd_thread_t *_nd_thread_make_free(void);
static inline _nd_thread_t *_nd_thread_self(void)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(!_nd_thread_none(t)))
		return t;
	return _nd_thread_make();
}
/* t's life (t: the calling thread's record): nonzero, unique over every
 * record and thread, made on first call (a public heap's creation). */
uint64_t _nd_thread_life(_nd_thread_t *t);
/* Force every thread's slab keys to NONE (a process policy change): each
 * thread's next allocation re-resolves. */
void _nd_thread_invalidate_all(void);
/* The same for one record (the thread's own policy or CPU changed), but
 * the policy cache entries of plain objects compared without a CPU key
 * (user: their heap depends on neither). Called by the thread itself. */
void _nd_thread_invalidate(_nd_thread_t *t);
/* Every record ever made (in use or pooled), under the thread lock:
 * fn(record, arg) (statistics: it must not allocate or take a lock of a
 * lower rank). */
void _nd_thread_each(void (*fn)(_nd_thread_t *t, void *arg), void *arg);
/* Thread exit: fn(record) runs first (heap.c parks the heaps), then the
 * record goes back to the pool and the thread's pointer to the gone one. */
void _nd_thread_set_exit_hook(void (*fn)(_nd_thread_t *));
/* A hook that runs before that one (large.c: the thread's cached runs go
 * back, and count in the exit's trim); set once, by any thread. */
void _nd_thread_set_exit_first(void (*fn)(_nd_thread_t *));
/* What the thread-exit destructor does, for the calling thread (tests). */
void _nd_thread_exit_now(void);
/* The library is unloaded (its destructor): the thread-exit destructor is
 * unregistered, records stay as they are. */
void _nd_thread_fini(void);

#endif /* ND_THREAD_H */
