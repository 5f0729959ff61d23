// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 8, the
 * slab level (slab.c, meta.c, heap.c). */
#ifndef ND_SLAB_H
#define ND_SLAB_H

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
/* The calling thread's remote-free buffer (_nd_rfree_t) and borrowed
 * lists, and its node's exchange (slab_remote.c), go home now (fork's
 * prepare handler; tests). */
void _nd_slab_flush_remote(void);
/* Objects waiting in the calling thread's remote-free buffer, and the
 * splices it has sent since its record was made (tests). */
unsigned _nd_slab_remote_pending(void);
/* Objects in node's exchange of remote frees (slab_remote.c; tests). */
unsigned _nd_slab_xfer_count(int node);
/* Fork's child: every node's exchange goes home (slab_remote.c). */
void _nd_slab_xfer_fork_child(void);
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
	uint64_t objects;      /* objects out (handed out, freed by another
				* thread and not collected by the owner yet, or
				* waiting on a thread's borrowed list or in the
				* node's exchange) */
	uint64_t remote_frees; /* frees by a thread that did not own the slab */
	uint64_t refills;      /* malloc slow paths of the class (free list empty) */
} _nd_slab_class_stats_t;
/* Fills out[0 .. ND_SLAB_CLASSES) (n entries at most); returns the count. */
int _nd_slab_class_stats(_nd_slab_class_stats_t *out, int n);
/* The headers' figures only (size, slabs, slab_bytes, capacity, objects;
 * remote_frees and refills 0) into all[ND_SLAB_CLASSES]: no lock, no walk
 * of the threads (mallinfo2). */
void _nd_slab_class_usage(_nd_slab_class_stats_t *all);

/* ---- the malloc/free fast paths (docs/malloc.md). The one pop and push
 * live here, used by malloc.c's inlined paths and slab.c's and heap.c's
 * alike; the hot fields they touch (_nd_slab_hot_t: a line that every
 * free reads, then a line with free and used) are defined in nd_thread.h,
 * whose record embeds the borrowed lists (bwl[]) that the fast path pops
 * like a slab (only their free and used mean anything). slab.c owns
 * every field.
 *
 * Owner and synchronisation of the hot fields: free, used: the owner
 * thread of the slab's heap (or whoever took a parked heap out of its
 * pool); in a fork's child, for a heap of a parent thread the child does
 * not have, the one child thread (if any) that got that thread's pointer:
 * its frees pass the owner test and push, but never change the heap's
 * lists (slab.c, free_local_slow). start, mul: fixed while an object
 * of the slab is out (an empty slab taken for another class gets new
 * ones, its chk and map entries with them, before an object of that
 * class goes out: slab.c, _nd_slab_take_empty). chk, tp: written by the
 * owner, read by any thread's free (relaxed atomics: a stale value only
 * sends that free to its slow path, which rechecks under the page
 * descriptor; the lim in chk only grows while the slab serves one class,
 * tp changes only when the heap is parked or adopted). */

/* A heap starts with _nd_heap_hot_t's fields (nd_thread.h): place.c's
 * interleaved call's two words, then its current slab per class. */
/* Size -> class: _nd_slab_cls_tab[(size + 15) >> 4] for size <= ND_SLAB_MAX. */
extern uint8_t _nd_slab_cls_tab[ND_SLAB_MAX / 16 + 1] __attribute__((visibility("hidden")));

/* Unit number -> slab header and its mul, for the reservation of the page
 * level. A unit is 16 KiB, the smallest slab run: every slab is a
 * power-of-two run of at least 4 pages aligned to its size (_nd_slab_new),
 * so each unit is wholly one slab's or none's, and the map has a quarter
 * of the entries a per-page one would (larson, 8 MiB live: its free missed
 * L1 on the entry 0.65 times per pair with per-page entries).
 * Entry 0 (a unit that is not a slab's) decodes to `none`, whose lim 0
 * fails every check, so a lookup never needs a range or NULL test: the
 * index check below then proves p is an object start of that slab.
 * Each unit has a pair of words, the header's offset and the slab's mul
 * (0 for none), so free's multiply starts with the map load instead of
 * waiting for the header's (wl_small: 3 cycles fewer on free's longest
 * chain, 2.7% less time, same instructions). Writers (meta.c) store mul
 * before the offset and clear the offset first; a free that meets a new
 * offset with the old mul 0 fails its check (_nd_slab_chk: chk alone
 * never passes) and takes the slow path.
 * What was measured on this path and left: docs/malloc.md, "Free's
 * checks: measured and left". */
#define ND_SLAB_UNIT_SHIFT 14
typedef struct _nd_slab_map {
	_nd_slab_hot_t none;
	intptr_t ent[];     /* pairs: header address - map address (0 = none), mul */
} _nd_slab_map_t;
/* The map and its mask, side by side: free loads both at once, where a
 * mask in the map's header waited for the pointer (one load fewer on
 * free's chain to the header; wl_small 2% less CPU time, same
 * instructions). mask = 2 * (entries - 1), entries a power of two >= the
 * reservation's units: (addr >> 13) & mask is the index of the unit's
 * pair, one-to-one on it. The two change once (boot map -> map, meta.c):
 * base first, then mask; a lookup loads mask first, then base (x86 keeps
 * loads in program order), so it never meets the new mask with the boot
 * map's one pair. An old mask 0 with the new base reads pair 0, which is
 * never a slab's (meta.c leaves it `none`: a slab's unit there is found
 * by its page descriptor, free's slow path). */
typedef struct _nd_slab_mapv {
	_nd_slab_map_t *base;
	uintptr_t mask;
} _nd_slab_mapv_t;
extern _nd_slab_mapv_t _nd_slab_map __attribute__((visibility("hidden")));

static inline _nd_slab_hot_t *_nd_slab_of(const void *p)
{
	uintptr_t i = ((uintptr_t)p >> (ND_SLAB_UNIT_SHIFT - 1)) & __atomic_load_n(&_nd_slab_map.mask, __ATOMIC_ACQUIRE);
	_nd_slab_map_t *m = ND_LOAD_RELAXED(_nd_slab_map.base);
	return (_nd_slab_hot_t *)((char *)m + ND_LOAD_RELAXED(m->ent[i]));
}
/* _nd_slab_of and the map's mul for free's check (_nd_slab_live_mul).
 * One asm keeps the mask's load before the base's (above) and loads mul
 * first, then adds the offset to the base's register: gcc's own code for
 * the pair took two instructions more. "memory": it reads map entries
 * that no operand names. */
static inline __attribute__((always_inline)) _nd_slab_hot_t *_nd_slab_of_mul(const void *p, uint64_t *mul)
{
	uintptr_t i = (uintptr_t)p >> (ND_SLAB_UNIT_SHIFT - 1);
	char *m;
	__asm__("and %[k], %[i]\n\t"
		"mov %[b], %[m]\n\t"
		"mov %c[mo](%[m],%[i],8), %[mul]\n\t"
		"add %c[eo](%[m],%[i],8), %[m]"
		: [m] "=&r"(m), [mul] "=&r"(*mul), [i] "+r"(i)
		: [k] "m"(_nd_slab_map.mask), [b] "m"(_nd_slab_map.base), [eo] "i"(offsetof(_nd_slab_map_t, ent)),
		  [mo] "i"(offsetof(_nd_slab_map_t, ent) + 8)
		: "cc", "memory");
	return (_nd_slab_hot_t *)m;
}
/* Index of p in s if p is an object start, else a number >= 2^32.
 * Granlund-Montgomery divisibility with the rotation folded into mul:
 * size = d * 2^tz (d odd, d <= 15, 4 <= tz <= 15), off = p - start.
 * off = k * size gives off * mul = k << 16, so rotr(., 16) = k. off with
 * fewer than tz low zero bits leaves a low bit set below bit 16: rotated
 * to the top. off = 2^tz q with d not dividing q gives (q * d^-1 mod 2^48)
 * > 2^48 / d. So only addresses that differ from an object by a multiple
 * of 2^(48+tz) >= 2^52 could pass, and no two user addresses do (x86-64
 * user space < 2^47). */
#define ND_SLAB_ROT 16
static inline uint64_t _nd_slab_rotr(uint64_t x)
{
	return (x >> ND_SLAB_ROT) | (x << (64 - ND_SLAB_ROT));
}
static inline uint64_t _nd_slab_index(const _nd_slab_hot_t *s, const void *p)
{
	return _nd_slab_rotr(((uintptr_t)p - (uintptr_t)s->start) * s->mul);
}

/* The free fast path's check with start and lim folded into one word:
 * chk = ((B - lim) << 16) - start * mul (start need not be aligned: a
 * coloured slab's is 64-aligned, slab.c), so p * mul + chk = (p - start) * mul +
 * ((B - lim) << 16), whose rotation is k + B - lim for object k: below B
 * exactly when k < lim. A non-start stays >= B: low bits set rotate to
 * >= 2^48 whatever is added above them; else the index (q * d^-1 mod
 * 2^48, q < 2^43) is in (2^48 / d, 2^48 - 2^15), and B - lim < 2^11 does
 * not wrap it. An address that aliases onto one of s's units in the map is
 * 2^27 - 2^18 or more from start (meta.c: 2^13 entries at least), so an
 * index it has is beyond +-4096 objects of 32 KiB: k + B - lim stays >= B,
 * mod 2^48 too. B exceeds every slab's capacity (1024). An all-zero header
 * would pass everything: `none` and every new header get the chk of lim
 * 0. */
#define ND_SLAB_CHK_B ((uint64_t)2048)
static inline uint64_t _nd_slab_chk(const char *start, uint64_t mul, uint64_t lim)
{
	return ((ND_SLAB_CHK_B - lim) << ND_SLAB_ROT) - (uint64_t)(uintptr_t)start * mul;
}
/* p is an object start of s and among its first lim objects (the ones
 * carved): one multiply, one add, one test with a constant; mul (s's,
 * from the map on free's fast path) and s's chk the only loads. The
 * rotation is below B = 2^11 exactly when its bits 11-63, x's bits 0-15
 * and 27-63, are 0: one test with ~(0x7ff << 16), a sign-extended imm32
 * (a rotate and a compare before). */
#define ND_SLAB_CHK_FAIL (~((ND_SLAB_CHK_B - 1) << ND_SLAB_ROT))
_Static_assert(ND_SLAB_CHK_FAIL == (uint64_t)(int64_t)(int32_t)ND_SLAB_CHK_FAIL, "the test's mask is an imm32");
static inline bool _nd_slab_live_mul(const _nd_slab_hot_t *s, uint64_t mul, const void *p)
{
	/* the product in mul's register: gcc copied mul to multiply in
	 * another (one mov more per free) */
	__asm__("imul %1, %0" : "+r"(mul) : "r"(p));
	return !((mul + ND_LOAD_RELAXED(s->chk)) & ND_SLAB_CHK_FAIL);
}
static inline bool _nd_slab_live(const _nd_slab_hot_t *s, const void *p)
{
	return _nd_slab_live_mul(s, s->mul, p);
}

/* The owner's adds to used, which the statistics read (relaxed): a
 * relaxed atomic store of used + n. Under ThreadSanitizer the
 * __atomic_store_n; else the one `add`/`sub` on memory, the same single
 * aligned store on x86-64 (GCC and clang do not fold an __atomic store
 * into the add: two instructions more on the malloc fast path). The
 * push's sub reuses the flags: true if used was <= 1 (signed). */
static inline __attribute__((always_inline)) void _nd_slab_used_add(_nd_slab_hot_t *s, uint32_t n)
{
#ifdef ND_TSAN
	__atomic_store_n(&s->used, s->used + n, __ATOMIC_RELAXED);
#else
	__asm__("addl %1, %0" : "+m"(s->used) : "ri"(n) : "cc");
#endif
}
static inline __attribute__((always_inline)) bool _nd_slab_used_dec(_nd_slab_hot_t *s)
{
#ifdef ND_TSAN
	uint32_t u = s->used;
	__atomic_store_n(&s->used, u - 1, __ATOMIC_RELAXED);
	return (int32_t)u <= 1;
#else
	bool le0;
	__asm__("subl $1, %0" : "+m"(s->used), "=@ccle"(le0)); /* one sub, flags reused */
	return le0;
#endif
}

/* A free object: word 0 its marker (its slab header's address: free
 * writes it, malloc clears it, so finding it on free means a double free),
 * word 1 the next free object. Marker first: the owner's push builds
 * both words in registers and writes them in one 16-byte store
 * (_nd_slab_push_mark; wl_small 0.96-0.98 of the time with two stores,
 * docs/malloc.md), and an 8-byte overflow into a free neighbour hits the
 * marker, not the link (check mode reports it: _nd_slab_check_link).
 * The pop: NULL when the list is empty. */
#define ND_FO_MARK 0
#define ND_FO_LINK 1
#define ND_FO_NEXT(o) (((void **)(o))[ND_FO_LINK])
static inline __attribute__((always_inline)) void *_nd_slab_pop(_nd_slab_hot_t *s)
{
	void **o = (void **)s->free;
	if (nd_unlikely(o == NULL))
		return NULL;
	s->free = o[ND_FO_LINK];
	_nd_slab_used_add(s, 1);
	o[ND_FO_MARK] = NULL;
	return o;
}

/* The push of a marked object o onto list s (a slab's, or a borrowed
 * list); true when s needs the slow path (now empty, or it was on the
 * full list: the bias makes used <= 0). */
static inline __attribute__((always_inline)) bool _nd_slab_push(_nd_slab_hot_t *s, void **o)
{
	o[ND_FO_LINK] = s->free;
	s->free = o;
	return _nd_slab_used_dec(s);
}

/* The two words of a free object as one (object starts are 16-aligned:
 * every class size is a multiple of 16, coloured starts 64-aligned). */
typedef struct { void *w[2]; } __attribute__((aligned(16))) _nd_slab_fo_t;
/* Marks o (an object of slab s) free and pushes it onto s: marker and
 * link in one 16-byte store, the link loaded straight into the vector
 * register (movq, movhps, movups: one load and one store, as many
 * instructions as two stores; a store less on the pair is worth 3.5-4%
 * of wl_small's time on this CPU). Under ThreadSanitizer two plain
 * stores (it does not see the asm's). */
static inline __attribute__((always_inline)) bool _nd_slab_push_mark(_nd_slab_hot_t *s, void **o)
{
#ifdef ND_TSAN
	o[ND_FO_MARK] = s;
	return _nd_slab_push(s, o);
#else
	typedef long long v2_t __attribute__((vector_size(16)));
	v2_t v;
	__asm__("movq %[s], %[v]\n\t"
		"movhps %[f], %[v]\n\t"
		"movups %[v], %[o]"
		: [v] "=&x"(v), [o] "=m"(*(_nd_slab_fo_t *)(void *)o)
		: [s] "r"(s), [f] "m"(s->free));
	s->free = o;
	return _nd_slab_used_dec(s);
#endif
}

/* The free fast path's checks (mul: the map's for s): p is an object
 * start of s (else 0: not a slab object, or check mode), not marked free
 * (else 1); else 2 (the push marks it: _nd_slab_free_push). */
static inline __attribute__((always_inline)) int _nd_slab_free_classify(_nd_slab_hot_t *s, uint64_t mul, void **o)
{
	if (nd_unlikely(!_nd_slab_live_mul(s, mul, o)))
		return 0;
	if (nd_unlikely(o[ND_FO_MARK] == (void *)s))
		return 1;
	return 2;
}

/* tp's low bit (thread pointers are aligned): an object of the slab was
 * borrowed, so its frees come mixed, the owner's with other threads'
 * (wl_xfree: at random, and the owner branch mispredicted 0.44 times per
 * free). Every free of such a slab goes onto the freeing thread's
 * borrowed list (_nd_slab_bw_push), the owner's too, with no owner
 * branch; its mallocs pop that list first. Set once by a borrowing
 * thread (a CAS: a parked slab's 0, or a new owner's stamp, is never
 * flagged), or by the owner on its current slab of a class whose
 * borrowed list ran dry (slab_remote.c, _nd_slab_bw_take); the owner's
 * stamp clears it. Any other slab keeps the owner test as it was (no
 * cost: wl_small). */
#define ND_TP_MIX ((uintptr_t)1)
/* A flagged tp's low bits (thread pointers are 64-aligned: glibc's TCB)
 * carry its slab's node + 1 too, up to 30 (31 for every node past), so
 * that free's borrowing test (flagged, and on the node of the freeing
 * thread's lists) is one xor of tp ^ me with the record's bw_key and a
 * test of the low bits (_nd_slab_free_push): one load and one branch,
 * where the flag's test and the node's compare took two of each (issue
 * 11, xfree2: its frees are bound by their loads, about 1% of the free
 * half each). ND_BW_KEY_NONE, the key of a thread without lists or on a
 * node past 30 (their frees take _nd_slab_free_other, which borrows by
 * _nd_slab_bw_ok), matches no tp: its low bits are 0 or odd. */
#define ND_TP_BITS ((uintptr_t)63)
/* A stamp of a slab that holds a span (below, "Spans"). */
#define ND_TP_SPAN ((uintptr_t)1 << 63)
/* A stamp's bits that are not its owner's thread pointer. */
#define ND_TP_FLAGS (ND_TP_BITS | ND_TP_SPAN)
#define ND_BW_KEY_NONE ((uintptr_t)2)
static inline uintptr_t _nd_slab_tp_mix(int32_t node1)
{
	return ND_TP_MIX | (uintptr_t)(node1 < 31 ? node1 : 31) << 1;
}
static inline uintptr_t _nd_slab_bw_key(int32_t node1)
{
	return node1 > 0 && node1 < 31 ? _nd_slab_tp_mix(node1) : ND_BW_KEY_NONE;
}
/* The calling thread's owner stamp (an unflagged tp). Every stamp is
 * written from this, so debug builds check the alignment the flag's low
 * bits rely on for every owner, not only for threads with lists. */
static inline uintptr_t _nd_slab_my_tp(void)
{
	uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
	ND_ASSERT(!(tp & ND_TP_FLAGS), "thread pointers are 64-aligned (ND_TP_BITS) and below 2^63 (ND_TP_SPAN)");
	return tp;
}

/* May t keep a free object of s (tp: s's owner stamp) on its borrowed
 * list? Only an object on the node of t's node heap (a thread without one
 * has bw_node1 0), and not one of a parked heap (tp 0): those go home, so
 * that the heap can be trimmed (borrowing them pinned dead threads'
 * slabs). */
static inline __attribute__((always_inline)) bool _nd_slab_bw_ok(const _nd_thread_t *t, const _nd_slab_hot_t *s,
								 uintptr_t tp)
{
	return ((int32_t)s->node1 == t->bw_node1) & (tp != 0);
}

/* Does the caller own s (tp: its stamp, flags and all)? The thread pointer is read
 * anew (an asm gcc does not merge with free's own read), so free's owner
 * test keeps its xor with %fs:0 in memory instead of holding it in a
 * register for this slower path (one instruction per free, wl_small). */
static inline __attribute__((always_inline)) bool _nd_slab_owns(uintptr_t tp)
{
	uintptr_t me;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(me));
	return (tp & ~ND_TP_FLAGS) == me;
}

/* Per class c, its class in the thread record (nd_thread.h: rf[], bwl[],
 * cls_remote[], cls_refill[], cdir[]): c, or a twin's size's class. */
extern uint8_t _nd_slab_cls_tc[ND_SLAB_CLASSES] __attribute__((visibility("hidden")));
/* s's class in the thread record: bwo's (_nd_slab_cls_tc of its class). */
static inline unsigned _nd_slab_tcls(const _nd_slab_hot_t *s)
{
	return (unsigned)s->bwo >> 4;
}
/* s's entries in t's record, addressed with bwo as it is (the remote
 * paths: no shift of it back to the class): its borrowed list, its
 * remote counter, its remote-free buffer entry. */
_Static_assert(sizeof(_nd_rfree_t) == 32, "a buffer entry is 32 bytes: bwo << 1");
static inline _nd_slab_hot_t *_nd_slab_bw_of(_nd_thread_t *t, const _nd_slab_hot_t *s)
{
	return (_nd_slab_hot_t *)(void *)((char *)t->bwl + s->bwo);
}
static inline uint64_t *_nd_slab_nrem_of(_nd_thread_t *t, const _nd_slab_hot_t *s)
{
	return &((struct _nd_nrem *)(void *)((char *)t->cls_remote + s->bwo))->n;
}
static inline _nd_rfree_t *_nd_slab_rf_of(_nd_thread_t *t, const _nd_slab_hot_t *s)
{
	return (_nd_rfree_t *)(void *)((char *)t->rf + ((size_t)s->bwo << 1));
}

/* The push of a free object o of a flagged slab s, marked here as
 * _nd_slab_push_mark does, onto the caller's
 * borrowed list of its class (t: the caller's record, _nd_slab_bw_ok
 * holds; d: s's tp ^ the caller's thread pointer, up to ND_TP_BITS for
 * the owner, more for any other thread), counting it if it is another
 * thread's (statistics); true when the list's "used <= 0" sends it to
 * _nd_slab_free_pushed. */
static inline __attribute__((always_inline)) bool _nd_slab_bw_push(_nd_thread_t *t, _nd_slab_hot_t *s, uintptr_t d,
								   void **o)
{
	ND_ASSERT(!(d & ND_TP_BITS), "only a flagged slab's frees of the list's node go on a borrowed list");
	ND_ASSERT(s->bwo == (uint16_t)(_nd_slab_cls_tc[s->cls] << 4), "a slab's bwo is its class's list offset");
#ifdef ND_TSAN
	uint64_t *nrem = _nd_slab_nrem_of(t, s);
	__atomic_store_n(nrem, *nrem + (d > ND_TP_BITS), __ATOMIC_RELAXED);
	o[ND_FO_MARK] = s;
	return _nd_slab_push(_nd_slab_bw_of(t, s), o);
#else
	/* The list and the counter addressed from the record with the
	 * slab's bwo, in one asm: gcc shifted cls and made the list's
	 * address first, two instructions more on every flagged free
	 * (wl_xfree 2 pinned: 0.953 of the pair's time, tcmalloc 0.977;
	 * while each object's line comes from the other core, its free
	 * half follows the instructions each free issues: issue 11,
	 * xfree8). The
	 * sbb adds 1 - (d <= ND_TP_BITS), one aligned store like the
	 * relaxed one above (gcc's code for that took 7 instructions:
	 * wl_larson 2 8 100000 188.4M -> 178.5M instructions, wl_xfree 2
	 * -5.5%). d is the owner test's xor (free_push): a second xor with
	 * %fs:0 here cost wl_xfree 2 5% of its time. The counter's sbb
	 * costs 4-6% of wl_xfree 2's pair (an unconditional incq as much,
	 * so it is the store); merged with used's subl into one 64-bit
	 * load, add and store (count in used's upper half) it cost 1-2%
	 * more than the two. Marker and link in one 16-byte store, as
	 * _nd_slab_push_mark's. */
	uintptr_t ob = s->bwo;
	typedef long long v2_t __attribute__((vector_size(16)));
	v2_t v;
	bool le0;
	__asm__("cmp %[b], %[d]\n\t"
		"sbbq $-1, %c[nr](%[t],%[ob])\n\t"
		"movq %[s], %[v]\n\t"
		"movhps %c[fr](%[t],%[ob]), %[v]\n\t"
		"movups %[v], (%[o])\n\t"
		"mov %[o], %c[fr](%[t],%[ob])\n\t"
		"subl $1, %c[us](%[t],%[ob])"
		: [v] "=&x"(v), "=@ccle"(le0)
		: [d] "r"(d), [b] "i"(ND_TP_BITS + 1), [t] "r"(t), [ob] "r"(ob), [o] "r"(o), [s] "r"(s),
		  [nr] "i"(offsetof(_nd_thread_t, cls_remote)),
		  [fr] "i"(offsetof(_nd_thread_t, bwl) + offsetof(_nd_slab_hot_t, free)),
		  [us] "i"(offsetof(_nd_thread_t, bwl) + offsetof(_nd_slab_hot_t, used))
		: "cc", "memory");
	return le0;
#endif
}

/* The malloc fast path: dir[] is valid while *cpu64 == key. */
static inline __attribute__((always_inline)) bool _nd_slab_key_ok(const _nd_thread_t *t, const uint64_t *key)
{
	return *t->cpu64 == ND_LOAD_RELAXED(*key);
}

/* nd_malloc_policy's cache entry e still describes the caller's object p:
 * the words a valid policy can differ in on a topology of at most 64
 * nodes (8 for weighted; heap.c caches no other): mode and flags,
 * granularity, the first 64 nodes' bits, the first 8 weights (weighted).
 * The granularity is compared for every mode (one re-resolve when a mode
 * that ignores it changes it), so the fast path's 32-byte compare
 * (place.c) needs no branch on the mode. gran_pad's low half is the
 * granularity (x86-64 is little-endian). */
static inline __attribute__((always_inline)) bool _nd_slab_pc_same(const struct _nd_pcache *e, const nd_policy_t *p)
{
	uint64_t mf;
	__builtin_memcpy(&mf, &p->mode, sizeof mf);
	if (mf != e->mode_flags || p->granularity_shift != (uint32_t)e->gran_pad || p->nodes.bits[0] != e->bits0)
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
/* Free by a thread that does not own s (p marked): p is borrowed or goes home. */
void _nd_slab_free_other(void *p, _nd_slab_hot_t *s);
/* The push onto l (s, or the borrowed list of _nd_slab_bw_push for s) left used <= 0: s's
 * own list (now empty, or s was on the full list), or a borrowed list
 * that was idle or is past its cap. */
void _nd_slab_free_pushed(_nd_slab_hot_t *l, _nd_slab_hot_t *s);

/* Every free of p (an object start of s, not marked) after the checks,
 * which marks it:
 * the owner pushes onto the slab, another thread of its node onto its
 * borrowed list, any other thread sends p home. Every free of a slab
 * whose objects get borrowed (ND_TP_MIX) goes onto the borrowed list,
 * with no owner branch. malloc.c's inlined free and slab.c's checked
 * frees alike. */
static inline __attribute__((always_inline)) void _nd_slab_free_push(_nd_slab_hot_t *s, void *p)
{
	uintptr_t d = ND_LOAD_RELAXED(s->tp);
	bool own;
	__asm__("xor %%fs:0, %[d]" : [d] "+r"(d), "=@ccz"(own)); /* d = tp ^ me, one instruction as a cmp */
	if (nd_likely(own)) {
		if (nd_unlikely(_nd_slab_push_mark(s, p)))
			_nd_slab_free_pushed(s, s);
		return;
	}
	_nd_thread_t *t = _nd_tls;
	/* flagged, and _nd_slab_bw_ok (a flagged tp is not 0): the node in
	 * the flag's bits is t's lists' (ND_TP_BITS) */
	d ^= t->bw_key; /* high bits kept: d > ND_TP_BITS still means not the owner */
	if (nd_likely(!(d & ND_TP_BITS))) {
		/* its own push, not a jump back to a shared one */
		if (nd_unlikely(_nd_slab_bw_push(t, s, d, p)))
			_nd_slab_free_pushed(_nd_slab_bw_of(t, s), s);
		return;
	}
	if (d > ND_TP_BITS) { /* not the owner (_nd_slab_owns) */
		((void **)p)[ND_FO_MARK] = s;
		_nd_slab_free_other(p, s);
		return;
	}
	if (nd_unlikely(_nd_slab_push_mark(s, p)))
		_nd_slab_free_pushed(s, s);
}
/* The node a small block's memory is on (its slab's run), for realloc. */
int _nd_slab_node(const _nd_pagedesc_t *d);
/* The object's free marker is set (realloc of a freed block). */
bool _nd_slab_freed(const void *p, const _nd_pagedesc_t *d);

/* ---- the slab layer's structures (meta.c, slab.c, heap.c share them) ----
 * tfree = count << 48 | list head | NOTIFY: the remote list carries its
 * length, so the owner takes it in one exchange without walking it (slab
 * objects live in the page level's reservation, below 2^47). */
#define ND_TF_NOTIFY ((uintptr_t)1)                     /* parked full, tell the heap */
/* Spans (issue 11, wl_footprint's peak): a plain malloc whose refill
 * would take fresh pages may take k (2..4) adjacent free slots of a
 * sparse slab of 80-256 B of its node heap (slab.c, _nd_slab_span_take).
 * The slab's span map says which slots; while it holds a span its stamp
 * carries ND_TP_SPAN (no thread pointer has bit 63), so every free of it,
 * the owner's too, leaves the fast path (_nd_slab_push's xor is not 0 and
 * the borrow test's low bits are bw_key's, never 0): _nd_slab_free_other.
 * A parked heap's slabs have stamp 0 (frees go home) and get the bit back
 * with their new owner (_nd_slab_stamp). used counts slots, k per span.
 * st, in: written by the owner (relaxed atomic stores), read by any
 * thread (usable size, the interior test); a span's bits are set before
 * malloc returns it and cleared by its free, which the owner does, or its
 * collect of a remote free. */
#define ND_SPAN_WORDS 6 /* slots of a donor slab: at most 384 (192 B: 341) */
typedef struct _nd_span_map {
	uint64_t st[ND_SPAN_WORDS]; /* bit i: a span starts at slot i */
	uint64_t in[ND_SPAN_WORDS]; /* bit i: slot i is inside a span, not its start */
	uint32_t n;                 /* live spans (owner) */
	uint32_t extra;             /* their slots beyond one each (relaxed: stats) */
} _nd_span_map_t;
#define ND_TF_PTR ((uintptr_t)0x0000fffffffffff0ull)    /* list head */
#define ND_TF_CNT_SHIFT 48                              /* objects on the list */

struct nd_heap;
/* A slab: one page run of one size class, its header out of line, three
 * lines by writer: line 1 is read by every free and written only when
 * carving, parking or adopting, line 2 by the owner's every malloc and
 * free, line 3 by other threads (splices). A remote free reads line 1
 * only, so it does not pull line 2 away from the owner's core (the owner's
 * free touches both lines; cachegrind counts that as +0.2 D1 misses per
 * pair on wl_larson's single simulated cache).
 * Owner and synchronisation, per field: see the hot fields above (free,
 * used: owner; chk, tp: atomic, written by the owner). Below: cls, cap,
 * size, node, npages: fixed while the slab lives. carved, next/prev,
 * fbias: written by the owner only (relaxed atomics where free's slow path of another
 * thread reads carved, _nd_slab_invalid). tfree: any thread (CAS). heap:
 * atomic, changes only when a parked heap's slab moves to a running heap
 * of the same key (heap.c's absorb and steal); a remote free that read
 * the old heap only sets a notify bit there. The move is a release store
 * and remote_send's load an acquire: the new heap may have been made a
 * moment before by the stealing thread (meta.c zeroes it, heap_take sets
 * node and pol), and the freeing thread, which synchronised only with the
 * slab's earlier owner, reads its notify, owner, node and pol. (Plain
 * moves on x86: compiler ordering only; free's fast path never loads
 * heap.) hnext: the node lock (meta.c's header pool).
 * Counters: used + fbias = objects out (handed out, or freed by another
 * thread and not collected yet) <= carved <= cap.
 * Read by other threads for statistics (slab_remote.c, any header, live
 * or being reused, no lock; marked "stats" below): heap, cls, cap,
 * npages, used, fbias, lost, gone, with relaxed loads, so every write of
 * them is a relaxed atomic store (used: _nd_slab_used_add and _dec, one
 * add or sub on memory outside ThreadSanitizer) and _nd_slab_new sets the
 * fields one by one, no memset. "Fixed while the slab lives" is the
 * owner's view: a kept empty slab changes class, a header is reused. */
typedef struct _nd_slab {
	/* line 1: what every free reads (any thread), rarely written */
	char *start;           /* _nd_slab_hot_t's */
	uint64_t mul;
	uint64_t chk;          /* lim (objects carved) and start for the free's check */
	uintptr_t tp;
	uint8_t cls;           /* _nd_slab_hot_t's (stats) */
	uint16_t node1;        /* node + 1, ND_SLAB_NODE1_NONE if unknown: line 1's copy for the free */
	uint16_t cap;          /* objects in the slab (stats) */
	uint16_t bwo;          /* _nd_slab_hot_t's: cls << 4 */
	uint32_t size;
	struct nd_heap *heap;  /* atomic: owner heap; NULL: released (stats) */
	int32_t node;          /* serving node of the run */
	uint32_t npages;       /* (stats) */
	/* line 2: the owner's (every malloc and free of the owner writes it) */
	_Alignas(ND_CACHE_LINE) void *free; /* _nd_slab_hot_t's */
	uint32_t used;         /* _nd_slab_hot_t's (stats) */
	uint16_t carved;       /* atomic: objects ever put on a free list (lazy carving) */
	uint16_t pfree;        /* slab_purge.c (owner): carved - used after its last pass */
	uint32_t fbias;        /* on the full list: real used = used + fbias (> 0); else 0 (stats) */
	uint8_t lcls;          /* the class whose partial list holds it: cls, or the smaller
				* class it is lent to (_nd_slab_lend); full list: cls */
	uint16_t lost;         /* slab_purge.c (owner; stats): objects
				* that overlap pages given back (gone): never listed again, so
				* the slab holds cap - lost */
	struct _nd_slab *next, *prev; /* partial or full list of the heap (owner) */
	uint64_t purged;       /* slab_purge.c (owner): bit p: page p was given back, the
				* free objects starting in it are off the free list */
	uint64_t gone;         /* slab_purge.c (owner; stats): pages
				* given back to the page level (whole units): not the slab's
				* any more */
	uint64_t pstr;         /* slab_purge.c (owner): bit p: the free object that
				* starts in page p - 1 and ends in page p (marked in
				* purged) is off the free list too (objects of a page
				* at most) */
	/* line 3: written by other threads */
	_Alignas(ND_CACHE_LINE) uintptr_t tfree; /* remote frees: count | list | NOTIFY */
	struct _nd_slab *hnext;    /* free header list (node lock) */
	struct _nd_slab *all_next; /* every header of its node, append only (meta.c) */
	_nd_span_map_t *spans;     /* atomic (release once): its span map, made by its first
				    * span and kept with the header; NULL: none yet */
	uint16_t spseen;           /* owner: carved - used when a span search last failed here */
} _nd_slab_t;
/* The run of s: its first object is start, or for a coloured slab (slab.c,
 * colour_of) 64 B times a colour further; runs are aligned to their size. */
static inline char *_nd_slab_run(const _nd_slab_t *s)
{
	return (char *)((uintptr_t)s->start & ~(((uintptr_t)s->npages << ND_PAGE_SHIFT) - 1));
}
/* s's stamp for owner tp (0: parked): with ND_TP_SPAN while s holds a span. */
static inline uintptr_t _nd_slab_stamp(const _nd_slab_t *s, uintptr_t tp)
{
	const _nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_RELAXED);
	return tp && m && m->n ? tp | ND_TP_SPAN : tp;
}
#define ND_SLAB_NODE1_NONE UINT16_MAX /* never a thread's bw_node1 (0 or node + 1) */
/* A public heap's slab (heap.c, _nd_heap_user_*): never a bw_node1 either,
 * so other threads' frees are not borrowed, and not buffered (sent home at
 * once): none is in flight once no thread uses the heap's objects, and
 * destroy can give the slab back with objects out. */
#define ND_SLAB_NODE1_UHEAP (UINT16_MAX - 1)
_Static_assert(offsetof(_nd_slab_t, npages) + sizeof(uint32_t) <= ND_CACHE_LINE, "free's fields (node1 too) share line 1");
_Static_assert(offsetof(_nd_slab_t, pstr) + sizeof(uint64_t) <= 2 * ND_CACHE_LINE, "the owner's fields share line 2");
_Static_assert(offsetof(_nd_slab_t, start) == offsetof(_nd_slab_hot_t, start) &&
	       offsetof(_nd_slab_t, mul) == offsetof(_nd_slab_hot_t, mul) &&
	       offsetof(_nd_slab_t, chk) == offsetof(_nd_slab_hot_t, chk) &&
	       offsetof(_nd_slab_t, tp) == offsetof(_nd_slab_hot_t, tp) &&
	       offsetof(_nd_slab_t, cls) == offsetof(_nd_slab_hot_t, cls) &&
	       offsetof(_nd_slab_t, node1) == offsetof(_nd_slab_hot_t, node1) &&
	       offsetof(_nd_slab_t, cap) == offsetof(_nd_slab_hot_t, cap_) &&
	       offsetof(_nd_slab_t, bwo) == offsetof(_nd_slab_hot_t, bwo) &&
	       offsetof(_nd_slab_t, free) == offsetof(_nd_slab_hot_t, free) &&
	       offsetof(_nd_slab_t, used) == offsetof(_nd_slab_hot_t, used), "_nd_slab_t has the hot fields where _nd_slab_hot_t has them");

/* A heap serves the allocations of one key: a node (node heaps, pol NULL:
 * local, preferred, preferred-many, nd_malloc_onnode, whose slabs are on
 * that node or where its list fell back), or an interned policy that
 * restricts or spreads nodes (bind: pol + the node it wants; interleave
 * and weighted: pol, node -1, each slab's node chosen when it is taken).
 * Lists, cur[], fullh[]: the owner (its thread, or whoever took it out of
 * a pool). owner, notify: atomic (remote frees read and set them). node,
 * pol: fixed. pool_next: its pool's lock. */
typedef struct nd_heap {
	uint64_t il_gran, il_bits;          /* _nd_heap_hot_t's (place.c, nd_malloc_interleaved) */
	_nd_slab_t *cur[ND_SLAB_CLASSES];   /* partial list heads; &_nd_slab_empty if none (_nd_heap_hot_t) */
	_nd_slab_t *fullh[ND_SLAB_CLASSES]; /* full list heads (NULL-terminated) */
	_nd_thread_t *owner;            /* atomic: the owner's record; NULL while parked */
	uint64_t notify;                /* atomic: class bits, a full slab got a remote free */
	int node;                       /* the node its allocations want; -1: the policy's */
	int user;                       /* a public heap's (heap_api.c): in no pool, never parked */
	const nd_policy_t *pol;         /* NULL: a node heap; else bind/interleave/weighted */
	struct nd_heap *pool_next;      /* pool of the node, or the policy pool (their lock) */
	uint64_t pnext;                 /* slab_purge.c (owner): its next pass comes when a new
					 * slab's node has this many pages committed */
	/* kept empty slabs (slab.c, owner): per class, linked by next */
	_nd_slab_t *empty[ND_SLAB_CLASSES];
	uint64_t emask;                 /* classes whose empty[] list is not empty */
	uint32_t epages;                /* pages of the kept empty slabs */
	uint32_t kgen;                  /* _nd_purge_kept_gen when heap_alloc last checked them */
	uint32_t spskip;                /* slab.c (owner): span searches skipped after one failed */
	uint64_t spbusy;                /* slab.c, slab_purge.c (owner): classes spans took slots
					 * of since the heap's last pass */
	uint32_t itakes;                /* slab.c (owner): slab takes (take_idle waits for IDLE_TAKES) */
	uint64_t unp;                   /* heap.c, slab_purge.c (owner): classes whose withheld
					 * objects came back (_nd_slab_unpurge), for the heap's
					 * life; a lend purges no slab of theirs */
	char *rnext;                    /* slab.c (owner): the end of its last new slab's run,
					 * where the next one goes if it can (_nd_page_alloc_near) */
	uint8_t rnear;                  /* slab.c (owner; 0 at each adoption, heap.c): times another
					 * heap of its node made a slab between two of its own, up to
					 * NEAR_TURNS: from then on its runs go next to its own */
} _nd_heap_t;
_Static_assert(ND_SLAB_CLASSES <= 64, "unp, spbusy: a bit per class");
_Static_assert(offsetof(_nd_heap_t, cur) == offsetof(_nd_heap_hot_t, cur) &&
		       offsetof(_nd_heap_t, il_gran) == offsetof(_nd_heap_hot_t, il_gran) &&
		       offsetof(_nd_heap_t, il_bits) == offsetof(_nd_heap_hot_t, il_bits),
	       "_nd_heap_t starts with _nd_heap_hot_t's fields");

/* ---- src/meta.c: the slab layer's metadata: per-node bump allocator,
 * slab header pool, the slab map (16 KiB unit -> header) ---- */

/* Per node: the pool of parked node heaps (heap.c), the metadata bump area
 * and the free slab headers (meta.c), all under one lock. Lock order:
 * heap.c's policy pool lock -> node locks (ascending) -> page-level locks
 * (the metadata allocator calls the page level with the node lock held). */
/* Slots of a class in a node's exchange (slab_remote.c): one cache line. */
#define ND_XFER_K 8
typedef struct _nd_meta_node {
	_nd_lock_t lock;
	char *meta_cur, *meta_end;  /* bump area (lock) */
	_nd_slab_t *free_hdrs;      /* released slab headers (lock) */
	void *free_blks;            /* given-back blocks, _nd_meta_blk_put (lock) */
	_nd_slab_t *all_hdrs;       /* every header made (lock; read lock-free, acquire) */
	_nd_heap_t *pool;           /* parked node heaps (lock) */
	_nd_heap_t *pool_tail;      /* pool's last heap, NULL if empty (lock): a sweep's turn puts
				     * its heap back there in O(1) (heap.c, pool_turns) */
	int pool_dirty;             /* atomic: a parked heap got a remote free */
	struct nd_heap *last_new;   /* atomic: the heap that made the node's last new slab (slab.c) */
	/* heap.c's other per-node words, here so that a process touches one
	 * page of per-node tables, not one per table (issue 11: peak RSS) */
	uint32_t exit_trim_skipped; /* atomic: exits the rate bound skipped since the last trim */
	uint64_t pcls;              /* pool_cls: classes a parked heap may hold partial slabs of */
	uint64_t exit_trim_last;    /* atomic: ns of the node's last exit trim */
	uint16_t *spcands;          /* slab.c's donor classes of each span size (set once under
				     * the lock: _nd_meta_alloc_once; read acquire) */
	uint8_t bwcap[ND_SLAB_SIZED]; /* atomic: per class, the largest cap a borrowed list
				       * of the node grew to, halved as one shrinks (slab.c, bw_grow, bw_shrink); a list's first */
	/* slab_remote.c's exchange: per class, half borrowed lists that went
	 * past their cap (count << 48 | head, as tfree; 0: none), which any
	 * thread of the node takes when its own runs dry (atomic); xmask:
	 * classes that may have one (atomic, a hint read by every refill) */
	_Alignas(ND_CACHE_LINE) uint64_t xmask;
	struct _nd_xfer {
		_Alignas(ND_CACHE_LINE) uintptr_t slot[ND_XFER_K];
	} xfer[ND_SLAB_SIZED]; /* by the thread record's class */
} _nd_meta_node_t;
extern _nd_meta_node_t _nd_meta_node[ND_MAX_NODES] __attribute__((visibility("hidden")));
/* The exchange of t's node may hold a list of class c (a hint: one load,
 * so that the refills of a node that uses none pay no call). */
static inline bool _nd_slab_xfer_maybe(const _nd_thread_t *t, unsigned c)
{
	int32_t n1 = t->bw_node1;
	return n1 > 0 && (__atomic_load_n(&_nd_meta_node[n1 - 1].xmask, __ATOMIC_RELAXED) >> c & 1);
}
/* Atomic: a parked policy heap got a remote free (heap.c's policy pool). */
extern int _nd_meta_ppool_dirty __attribute__((visibility("hidden")));
/* Node index used (for the fork handlers' lock array bound). */
void _nd_meta_note_node(int node);
/* Node indexes used so far + 1 (every node heap's node is noted). */
int _nd_meta_nodes_used(void);
/* Zeroed, cache-line aligned, never freed; on node (else its fallback
 * nodes, else plain mmap). NULL if no memory. */
void *_nd_meta_alloc(int node, size_t size);
/* *slot, else _nd_meta_alloc's (stored with release): one block however
 * many threads ask at once (node's lock). */
void *_nd_meta_alloc_once(int node, void **slot, size_t size);
/* A slab header on node's metadata (reused or new, not zeroed: keep
 * all_next), and back. */
_nd_slab_t *_nd_meta_hdr_get(int node);
void _nd_meta_hdr_put(int node, _nd_slab_t *s);
/* A zeroed block of size bytes (cache-line aligned) on node's metadata,
 * reused from the node's pool of given-back blocks when its first one is
 * as large, else new; and back into the pool (large.c's thread caches:
 * one per thread that keeps runs, so the pool holds at most as many as
 * threads ever lived at once). */
void *_nd_meta_blk_get(int node, size_t size);
void _nd_meta_blk_put(int node, void *p, size_t size);
/* fn(header, arg) for every slab header ever made, live or released
 * (heap == NULL), without a lock: the lists only grow at the head and a
 * header's all_next never changes (statistics). */
void _nd_meta_hdr_each(void (*fn)(const _nd_slab_t *s, void *arg), void *arg);
/* Makes the slab map (once; the first slab calls it), and sets the map
 * entry of the unit (ND_SLAB_UNIT_SHIFT) at unit to s (NULL: none). */
void _nd_meta_map_ensure(void);
void _nd_meta_map_set(const void *unit, const _nd_slab_t *s);
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
/* A free object listed on s must carry s's marker (word 0) and link
 * (word 1) to NULL or another object of the same slab that was carved: a
 * write past the end of the object before it (a heap overflow: 8 bytes
 * hit the marker, 16 the link too) or after free is reported by name
 * here, before anything follows it (slow paths; every path in check
 * mode, which never takes the inline pop). Every object on a slab's free
 * or remote list is marked (carving, free, span release, unpurge). */
static inline void _nd_slab_check_link(const _nd_slab_t *s, void *const *o, const char *fn)
{
	uintptr_t n = (uintptr_t)o[ND_FO_LINK];
	if (nd_unlikely(o[ND_FO_MARK] != (const void *)s) ||
	    (n && nd_unlikely(_nd_slab_index((const _nd_slab_hot_t *)s, (const void *)n) >= s->carved)))
		_nd_slab_corrupt_link(s, o, fn);
}
/* Check mode's out bits (docs/malloc.md, "With NODALLOC_CHECK=1"): bit i
 * is set while object i of s is out (malloc gave it, free has not taken
 * it back), so a free finds a double free in O(1) however its marker was
 * overwritten. They follow the header: meta.c makes check mode's headers
 * ND_SLAB_OUT_BYTES longer, so plain mode has no byte, field or branch of
 * them on its fast paths. Moves between lists (a remote buffer, tfree, the
 * collect, carving) leave them alone: only the owner's pop (sets) and
 * every free, any thread's (clears, and tests), write them, with atomic
 * RMWs (other threads clear bits of the same word). Clear in a released
 * header (nothing out), zeroed again by _nd_slab_new (a public heap's
 * destroy drops slabs with objects out). */
#define ND_SLAB_OUT_BITS 1024u /* every slab's capacity (ANY_CAP_MAX, _nd_slab_init) */
#define ND_SLAB_OUT_BYTES (ND_SLAB_OUT_BITS / 8)
static inline uint64_t *_nd_slab_out_bits(_nd_slab_t *s)
{
	return (uint64_t *)(void *)(s + 1);
}
/* Check mode: o (an object of s, just popped by its owner) is out. */
void _nd_slab_out_set(_nd_slab_t *s, const void *o) __attribute__((noinline, cold));
/* The refills' pop from s (the owner's; objects listed): the object taken
 * is checked first (_nd_slab_check_link) and, in check mode, marked out. */
static inline __attribute__((always_inline)) void *_nd_slab_take(_nd_slab_t *s)
{
	_nd_slab_check_link(s, (void *const *)s->free, "malloc");
	void *o = _nd_slab_pop((_nd_slab_hot_t *)s);
	if (nd_unlikely(_nd_slab_check))
		_nd_slab_out_set(s, o);
	return o;
}
/* A new slab of class c for h (the caller owns h), from a run under pol
 * wanting h's node; NULL + ENOMEM. Back to the page level: used + fbias
 * == 0 or every object out is on the remote list. */
_nd_slab_t *_nd_slab_new(_nd_heap_t *h, unsigned c, const nd_policy_t *pol);
void _nd_slab_release(_nd_slab_t *s);
/* A span of k adjacent free slots of a sparse 80-256 B slab of h (owner,
 * a node heap) for a plain malloc of size (81..1024), or NULL. */
void *_nd_slab_span_take(_nd_heap_t *h, size_t size);
/* Classes 80-256 B (4..11) whose slabs may lend spans (slab.c), and the
 * request sizes a span serves. */
#define ND_SPAN_DLO 4u
#define ND_SPAN_DHI 11u
#define ND_SPAN_LO 81u
#define ND_SPAN_HI 1024u
/* Kept empty slabs (owner of h): a slab of class c from h's kept ones
 * (one of c as it was, else one of another class with as many pages,
 * made a slab of c), on no list; NULL if none. Every kept one back to the
 * page level (trim, a heap's pass, thread exit). */
_nd_slab_t *_nd_slab_take_empty(_nd_heap_t *h, unsigned c);
void _nd_slab_release_empty(_nd_heap_t *h);
/* The same with objects out (a public heap's destroy frees them all). */
void _nd_slab_drop(_nd_slab_t *s);
/* Up to a page of never-used objects onto the (empty) free list. */
void _nd_slab_carve(_nd_slab_t *s);
/* The same, then the pop (heap.c's refill). */
void *_nd_slab_carve_pop(_nd_slab_t *s);
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
/* s, a partial slab with nothing listed, may park as full: NOTIFY set, so
 * that the first remote free tells the heap; false if remote frees
 * arrived meanwhile (then it stays, to be collected). */
static inline bool _nd_slab_park_notify(_nd_slab_t *s)
{
	uintptr_t z = 0;
	return __atomic_compare_exchange_n(&s->tfree, &z, ND_TF_NOTIFY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED) ||
	       z == ND_TF_NOTIFY;
}
/* heap.c's refill: s, the only slab of its class's partial list, parks
 * full (the caller set NOTIFY) and b, a full slab of the class, heads the
 * partial list in its place. */
void _nd_slab_swap_full(_nd_heap_t *h, _nd_slab_t *s, _nd_slab_t *b);
/* The same, then the pop from b (it has objects listed). */
void *_nd_slab_swap_pop(_nd_heap_t *h, _nd_slab_t *s, _nd_slab_t *b);
/* heap.c's refill: s, the dry head of its partial list (objects out,
 * NOTIFY set by the caller), parks full and the next slab, which has
 * objects listed, serves: its pop. */
void *_nd_slab_park_pop(_nd_heap_t *h, _nd_slab_t *s);
/* Before h (owner) takes a new slab of class c: a fully carved partial
 * slab (not the head) of a class above 1 KiB, at most twice c's size and
 * at least as aligned, with objects listed, moves to the head of c's
 * partial list (lent: lcls = c), so its free objects in resident pages
 * serve c; it goes back to its own class's full list when it runs dry
 * (slab.c). false if none. */
bool _nd_slab_lend(_nd_heap_t *h, unsigned c);
/* t's current heap becomes h (dir[] rewritten). */
void _nd_slab_set_heap(_nd_thread_t *t, _nd_heap_t *h);
/* Smallest class >= size whose objects are aligned to align, or -1. */
int _nd_slab_class_for(size_t size, size_t align);
/* Refills that find t's list empty while it serves keep dir[] on it (its
 * used stays cap + 1: active) this many times before it goes idle: each
 * went idle at once, and in wl_larson a dry spell is a malloc or two
 * before the class's next free, which then took the first push's slow
 * path to switch dir[] back (2 8 100000: 30k dry spells, 27k first
 * pushes). The count restarts when the list goes idle. */
#define ND_SLAB_BW_DRY 8
/* While a list keeps dir[] dry, a lender (heap.c, bw_lend) moves up to
 * this many objects onto it, not one a refill. */
#define ND_SLAB_BW_LEND 8
/* malloc of class c found its list empty (key valid, t a real record):
 * an object of t's borrowed list of c (dir[] then points at it), else
 * NULL with dir[] back on the heap's current slab, or still on the
 * (empty, active) list (ND_SLAB_BW_DRY; a new current slab takes dir[]
 * then, and the list's objects wait until that slab runs dry). */
void *_nd_slab_bw_take(_nd_thread_t *t, unsigned c);
/* t->dir's entries of class c point at s (every write of the current
 * heap's cur[] and of a borrowed list's start goes through it). Owner. */
void _nd_slab_dir_class(_nd_thread_t *t, unsigned c, void *s);

/* ---- src/slab_remote.c: the slow half of remote frees ----
 * slab.c's inline free_home calls these; t is the calling thread. */
/* t's remote-free buffer goes home; returns the entries sent. */
unsigned _nd_slab_rf_flush_all(_nd_thread_t *t);
/* One entry of t's buffer goes home (its count reached its max). */
void _nd_slab_rf_flush(_nd_thread_t *t, _nd_rfree_t *e);
/* t's entry of o's class held another slab (or none): it goes home and
 * starts a chain of s with o; classes too small to batch send o now. A
 * thread without a record (t read-only) gets one, else sends o now. */
void _nd_slab_free_remote_new(_nd_thread_t *t, _nd_slab_t *s, void **o);
/* The owner's push of its marked o of s, with the slow path's work
 * (empty, or s was full). */
void _nd_slab_free_own(_nd_slab_t *s, void **o);
/* t's borrowed list of c went past its cap: its newest half goes,
 * indexed, into the node's exchange if that is empty (true), else nothing
 * is done. */
bool _nd_slab_xfer_put(_nd_thread_t *t, unsigned c, uint32_t cap);
/* t's borrowed list of c is empty (t's key valid) and
 * _nd_slab_xfer_maybe: the exchange's list of c, if any, becomes it and
 * one object is popped; else NULL. */
void *_nd_slab_xfer_take(_nd_thread_t *t, unsigned c);
/* Objects a borrowed list of class c keeps at most: the cap a list grows
 * to (_nd_slab_bw_cap_of). */
uint32_t _nd_slab_bw_cap(unsigned c);
/* Per class c, a borrowed list's first cap: 128 KiB of objects above
 * 1 KiB (at most 64, at least 2), _nd_slab_bw_cap up to 1 KiB (slab.c). */
extern uint8_t _nd_slab_cls_bw0[ND_SLAB_CLASSES] __attribute__((visibility("hidden")));
/* t's borrowed list of c keeps this many objects before half of them go
 * to the exchange (nd_thread.h, bwl[]): its class's first cap until it
 * grows (slab.c, bw_grow: doubled, up to _nd_slab_bw_cap, when its
 * overflows come fast or find the exchange full) or shrinks (bw_shrink:
 * halved, down to the first, when they come slowly). Owner only. */
static inline uint32_t _nd_slab_bw_cap_of(const _nd_thread_t *t, unsigned c)
{
	uint32_t k = t->bwl[c].cap;
	return k ? k : _nd_slab_cls_bw0[c];
}
/* The same when list c of t goes active (its first push, or a list from
 * the exchange): a list still at its first cap takes the largest any list
 * of the class grew to on t's node (_nd_meta_node_t's bwcap), so that a
 * new thread does not learn it again. */
uint32_t _nd_slab_bw_cap_start(_nd_thread_t *t, unsigned c);
/* The clock (ns) of the borrowed lists' pace (slab.c, bw_pace): NULL,
 * _nd_os_now_ns; a test's fake clock when set (before its threads). */
extern uint64_t (*_nd_slab_bw_clock)(void) __attribute__((visibility("hidden")));
/* Per class c, how many classes after c may serve c's mallocs from the
 * thread's borrowed lists (heap.c, bw_lend): those up to 3/2 of c's size;
 * none for a power-of-two class (aligned to its size). */
extern uint8_t _nd_slab_cls_lend[ND_SLAB_CLASSES] __attribute__((visibility("hidden")));
/* Per class c, the class that serves a size of c with an alignment above
 * 64 B: c, or for a coloured class (slab.c: its objects only 64-aligned)
 * the next power of two's that is not coloured (4096 for 2560..3584, the
 * twins of 8192 and 16384 for 5120..16384, ND_SLAB_SIZED on). */
extern uint8_t _nd_slab_cls_al[ND_SLAB_CLASSES] __attribute__((visibility("hidden")));
/* New slabs are not coloured while set (tests of a slab's page layout). */
extern bool _nd_slab_nocolour __attribute__((visibility("hidden")));
/* The objects on borrowed list b of a class of cap cap (not idle: its used
 * is cap + 1 - them, nd_thread.h's bwl[]). */
static inline uint32_t _nd_slab_bw_len(const _nd_slab_hot_t *b, uint32_t cap)
{
	return cap + 1 - b->used;
}
/* t's borrowed lists go home (its heap changes node or kind; exit). */
void _nd_slab_bw_flush_all(_nd_thread_t *t);
/* Thread exit (before its heaps park): the buffer goes home, the
 * record's per-class counters go into the totals. */
void _nd_slab_thread_done(_nd_thread_t *t);

/* ---- src/slab_purge.c: free pages inside slabs back to the OS ----
 * A page of a partial slab that no object out overlaps is purged; the
 * free objects that start in it leave the free list (their links would be
 * lost) and come back when the slab's free list runs dry (_nd_slab_unpurge).
 * Owner of the heap only; off in check mode. */
/* heap_alloc took s for h: when s's node committed enough pages since
 * h's last pass, purges h's partial slabs that got frees since theirs. */
void _nd_slab_purge_taken(_nd_heap_t *h, const _nd_slab_t *s);
/* Every partial slab of h now (tests). Returns pages purged. */
size_t _nd_slab_purge_heap(_nd_heap_t *h);
/* malloc_trim's: every partial slab's free pages, busy classes too (owner). */
size_t _nd_slab_purge_all(_nd_heap_t *h);
/* A thread's exit, before h parks: the free pages of the partial slabs
 * of the classes above 2 KiB, but for the first objects of each free
 * list (owner). Returns pages purged. */
size_t _nd_slab_purge_park(_nd_heap_t *h);
/* s's free list is empty and s->purged != 0: the objects of its lowest
 * purged pages go back on the free list (with the one s->pstr withheld
 * that ends there). false if none did. */
bool _nd_slab_unpurge(_nd_slab_t *s);
/* s is about to be lent (_nd_slab_lend): its stretches of 3 or more
 * pages that no object out overlaps go first (if it got frees since its
 * last pass), so that free objects are lent only in pages that stay
 * resident or in short stretches beside them. false if none is left on
 * its free list. */
bool _nd_slab_purge_lent(_nd_heap_t *h, _nd_slab_t *s);
/* Pages [from, to) of s name s (use ND_USE_SLAB: descriptors and slab
 * map) or nothing (ND_USE_NONE). */
void _nd_slab_set_pages(_nd_slab_t *s, uint32_t from, uint32_t to, uint8_t use);

/* ======================================================================
 * src/heap.c: which heap an allocation uses, heaps and their threads'
 * life cycle, adoption of parked heaps. The allocation entry points.
 * ====================================================================== */

/* Registers the thread-exit hook (after _nd_slab_init). 0. */
int _nd_heap_init(void);
/* The calling thread's heaps give their kept empty slabs back to the page
 * level and their partial slabs' free pages to the OS (malloc_trim; other
 * threads' heaps are theirs to touch). whole: every slab with nothing out
 * too, the current ones included (a large run that found no room).
 * Nonzero if pages were purged. */
size_t _nd_heap_trim_self(bool whole);
/* The parked heaps of every pool (exited threads'): the same, each taken
 * out of its pool in turn (malloc_trim). Nonzero if pages were purged. */
size_t _nd_heap_trim_parked(void);
/* Tests: called by a pool sweep while it has a parked heap out (NULL). */
extern void (*_nd_heap_sweep_hook)(void) __attribute__((visibility("hidden")));
/* Tests: the exit trim's rate bound in ns (10 ms; raised, only the count
 * of exits it skipped lets a trim through). */
extern uint64_t _nd_heap_exit_trim_ns __attribute__((visibility("hidden")));
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
/* A placement call's pop from h (the calling thread's, valid) found class
 * c empty: refill h under pol (heap.c's empty heap: node's full path). */
void *_nd_heap_refill_of(struct nd_heap *h, unsigned c, const nd_policy_t *pol, int node);
/* nd_malloc_policy's, for a size the class path serves (see docs/malloc.md). */
void *_nd_heap_policy(size_t size, const nd_policy_t *p);
/* Public heaps (heap_api.c's nd_heap_t): h (its memory the caller's) for
 * node (pol NULL) or an interned policy (node -1), owned by the calling
 * thread; false (ENOMEM) without a thread record. An object of class c
 * from h (its owner only; NULL + ENOMEM). Every slab of h back to the
 * page level, objects still out too (any thread, once none uses them). */
bool _nd_heap_user_init(_nd_heap_t *h, int node, const nd_policy_t *pol);
void *_nd_heap_user_alloc(_nd_heap_t *h, unsigned c);
void _nd_heap_user_destroy(_nd_heap_t *h);

#endif /* ND_SLAB_H */
