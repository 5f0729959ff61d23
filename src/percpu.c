// SPDX-License-Identifier: MIT
/*
 * Per-CPU areas (the kernel's cpu_alloc, seed 002) for applications.
 *
 * Layout: one virtual reservation of cpu_limit areas of 1 << shift bytes
 * each (NODALLOC_PERCPU_AREA, default 2 MiB). A handle h is an offset that
 * is valid in every area, so CPU c's copy is
 *
 *	base + (c << shift) + h
 *
 * one address computation, no pointer array. Allocations of different users
 * are packed in 4-byte units, so counters of different users share a cache
 * line of one CPU; a line never spans two CPUs because areas are page
 * multiples.
 *
 * Memory: the reservation is PROT_NONE (MAP_NORESERVE); the first
 * `committed` bytes of every possible CPU's area are made read-write and
 * touched, growing in 64 KiB steps as allocations reach past them. Each
 * area is mbind()-ed to its CPU's memory node before any page is touched
 * (not under an emulated topology, where the node is only recorded).
 *
 * Offsets: two bitmaps of 4-byte units, `used` and `start` (first unit of
 * an allocation), so free needs no size and detects bad handles. Units 0-1
 * are reserved: handle 0 means none.
 *
 * Operations: with rseq (glibc 2.35+ registers it for every thread),
 * add/add_return/cmpxchg on the current CPU's 64-bit counter are
 * restartable sequences: plain loads and stores that the kernel restarts
 * if the thread is preempted, migrated or signalled before the commit
 * instruction. Without rseq (or under an emulated topology, where the CPU
 * is the emulated one) they are atomic instructions on the slot of the CPU
 * we believe we are on: still exact, wherever the thread actually runs.
 *
 * Locking: pc_lock serialises setup, alloc and free (bitmaps, commit). The
 * access paths take no lock; they read fields that are written once during
 * setup, before the first handle exists. Lock order: pc_lock, then
 * topology.c's swap_lock (setup freezes the topology); nothing takes
 * pc_lock while holding another lock.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define UNIT_SHIFT 2 /* 4-byte allocation units */
#define UNIT ((size_t)1 << UNIT_SHIFT)
#define RESERVED_UNITS 2 /* offset 0 (handle "none") and its 8-byte pad */
#define COMMIT_STEP ((size_t)64 << 10)
#define AREA_MIN_SHIFT 16
#define AREA_MAX_SHIFT 30
#define PROT_NONE_ 0
#define PROT_RW_ 3 /* PROT_READ | PROT_WRITE */
#define NO_AREA (-1)
#define NODE_UNKNOWN (-2)

/* Read by the access paths: written once by setup under pc_lock, before
 * `ready` is released. */
static struct {
	char *base;           /* cpu_limit areas of 1 << shift bytes */
	unsigned shift;
	int ncpu;             /* _nd_topo()->cpu_limit at setup */
	long rseq_off;        /* %fs-relative offset of the thread's struct rseq */
	bool use_rseq;
	int first_cpu;        /* a possible CPU, for out-of-range fallbacks */
	/* [ncpu]: node each area is bound to; NO_AREA: CPU not possible;
	 * NODE_UNKNOWN: possible, no memory node known (area left unbound). */
	const int *area_node;
} pc __attribute__((aligned(ND_CACHE_LINE)));

static volatile int ready;       /* 0 not set up, 1 ready, -1 failed */
ND_LOCK_DEFINE(pc_lock, ND_RANK_PERCPU); /* setup, alloc, free */

/* Under pc_lock. */
static uint64_t *used_bm, *start_bm; /* [units / 64] each */
static size_t units;                 /* units per area */
static size_t hint;                  /* every unit below hint is used */
static size_t committed;             /* bytes committed per possible area */
static size_t used_units;            /* allocated units, reserved excluded */
static int npossible;                /* CPUs with an area */
static int *node_cpus;               /* [node_limit]: areas bound to each node */
static int node_limit;
static bool check_free;              /* real topology + MPOL_BIND: watermark check */

/* ---- bitmaps ------------------------------------------------------------ */


static void bits_set(uint64_t *bm, size_t from, size_t n, bool on)
{
	for (size_t i = from; i < from + n;) {
		size_t w = i >> 6, b = i & 63, k = 64 - b;
		if (k > from + n - i)
			k = from + n - i;
		uint64_t m = (k == 64 ? ~0ull : ((1ull << k) - 1)) << b;
		bm[w] = on ? (bm[w] | m) : (bm[w] & ~m);
		i += k;
	}
}

/* First unit in [from, to) whose bit equals want, or to. */
static size_t bits_find(const uint64_t *bm, size_t from, size_t to, bool want)
{
	size_t i = from;
	while (i < to) {
		uint64_t w = bm[i >> 6];
		if (!want)
			w = ~w;
		w &= ~0ull << (i & 63);
		if (w) {
			size_t r = (i & ~(size_t)63) + (size_t)__builtin_ctzll(w);
			return r < to ? r : to;
		}
		i = (i & ~(size_t)63) + 64;
	}
	return to;
}

/* ---- setup -------------------------------------------------------------- */

static inline char *area_of(int cpu)
{
	return pc.base + ((size_t)cpu << pc.shift);
}

static unsigned area_shift_option(void)
{
	uint64_t want = (uint64_t)_nd_opt_int(ND_OPT_PERCPU_AREA);
	for (unsigned s = AREA_MIN_SHIFT; s <= AREA_MAX_SHIFT; s++)
		if (want == (uint64_t)1 << s)
			return s;
	_nd_msg_warn("option percpu_area: %llu is not a power of two between 64K and 1G; using 2M",
		     (unsigned long long)want);
	return 21;
}

/* The node an area goes to: the CPU's effective memory node, or (should
 * the topology give a memoryless one) the first node of its fallback list. */
static int area_node_for(const _nd_topo_t *t, int cpu)
{
	int n = t->cpu_node[cpu] < 0 ? -1 : t->cpu_mem_node[cpu];
	if (n >= 0 && n < t->node_limit && !t->has_mem[n])
		n = t->fallback_len[n] > 0 ? t->fallback[n][0] : -1;
	return n;
}

/* rseq is usable if glibc registered it, the topology is the real one (in
 * emulation the CPU must be the emulated one, see nd_emulate_cpu), and the
 * kernel's CPU ids fit in the areas (a sanity check on the topology). */
static bool rseq_usable(const _nd_topo_t *t)
{
	struct _nd_rseq_abi *rs = _nd_os_rseq_area();
	if (!rs || t->emulated)
		return false;
	if (rs->cpu_id >= (uint32_t)t->cpu_limit)
		return false;
	uint64_t mask[ND_MAX_CPU_BITS / 64];
	int bytes = _nd_os_sched_getaffinity(0, sizeof mask, mask);
	for (int i = 0; bytes > 0 && i < bytes * 8; i++)
		if (_nd_bit_get(mask, (size_t)i) && (i >= t->cpu_limit || t->cpu_node[i] < 0)) {
			_nd_msg_warn("percpu: CPU %d is allowed but not a possible CPU of the topology; "
				     "using atomic per-CPU operations", i);
			return false;
		}
	return true;
}

static bool setup_locked(void)
{
	/* Options and topology are read: the public entry (api_init.c) ran
	 * the library's init first, even before the library's constructor
	 * (a per-CPU allocation from another library's constructor).
	 * The areas are sized and bound by the topology: freeze it first, so
	 * that the one read next is final. */
	_nd_topo_freeze();
	const _nd_topo_t *t = _nd_topo();
	int err = 0;
	int ncpu = t->cpu_limit, first = -1;
	if (ncpu <= 0) {
		_nd_msg_error("percpu: topology has no CPUs");
		return false;
	}
	int *nodes = _nd_os_mmap(ND_ALIGN_UP((size_t)ncpu * sizeof(int), ND_PAGE_SIZE), false, &err);
	if (!nodes)
		return false;
	for (int c = 0; c < ncpu; c++) {
		if (t->cpu_node[c] < 0) {
			nodes[c] = NO_AREA;
			continue;
		}
		nodes[c] = area_node_for(t, c);
		if (nodes[c] < 0)
			nodes[c] = NODE_UNKNOWN;
		npossible++;
		if (first < 0)
			first = c;
	}
	if (first < 0) {
		_nd_msg_error("percpu: topology has no possible CPU");
		return false;
	}

	/* Reserve; if the address space refuses, halve the span. */
	unsigned want = area_shift_option(), shift = want;
	char *base = NULL;
	for (;; shift--) {
		size_t len = (size_t)ncpu << shift;
		if (len >> shift == (size_t)ncpu)
			base = _nd_os_mmap(len, true, &err);
		if (base || shift == AREA_MIN_SHIFT)
			break;
	}
	if (!base) {
		_nd_msg_error("percpu: cannot reserve %d areas of %zu bytes (error %d)", ncpu,
			      (size_t)1 << shift, -err);
		return false;
	}
	if (shift != want)
		_nd_msg_warn("percpu: area span reduced to %zu bytes", (size_t)1 << shift);
	size_t span = (size_t)1 << shift;

	/* Bind before any page is touched. */
	bool strict = _nd_opt_int(ND_OPT_STRICT) != 0;
	node_limit = t->node_limit;
	node_cpus = _nd_os_mmap(ND_ALIGN_UP((size_t)node_limit * sizeof(int), ND_PAGE_SIZE), false, &err);
	if (!node_cpus)
		return false;
	for (int c = 0; c < ncpu; c++)
		if (nodes[c] >= 0)
			node_cpus[nodes[c]]++;
	check_free = strict && !t->emulated;
	for (int c = 0; c < ncpu && !t->emulated; c++) {
		if (nodes[c] < 0)
			continue;
		uint64_t mask[ND_MAX_NODES / 64] = { 0 };
		_nd_bit_set(mask, (size_t)nodes[c]);
		int r = _nd_os_mbind(base + ((size_t)c << shift), span,
				     strict ? ND_MPOL_BIND : ND_MPOL_PREFERRED, mask,
				     (unsigned long)t->node_limit, 0);
		if (r < 0)
			_nd_msg_warn("percpu: mbind of CPU %d's area to node %d failed (error %d)", c,
				     nodes[c], -r);
	}
	/* Nothing is accessible until committed: a stray handle faults. */
	_nd_os_mprotect(base, (size_t)ncpu << shift, PROT_NONE_);

	units = span >> UNIT_SHIFT;
	size_t bm_bytes = ND_ALIGN_UP(units / 8, ND_PAGE_SIZE);
	used_bm = _nd_os_mmap(2 * bm_bytes, true, &err);
	if (!used_bm)
		return false;
	start_bm = used_bm + bm_bytes / sizeof(uint64_t);
	bits_set(used_bm, 0, RESERVED_UNITS, true);
	bits_set(start_bm, 0, 1, true);
	hint = RESERVED_UNITS;

	struct _nd_rseq_abi *rs = _nd_os_rseq_area();
	if (rseq_usable(t)) {
		char *tp;
		__asm__("mov %%fs:0, %0" : "=r"(tp));
		pc.rseq_off = (char *)rs - tp; /* the same static TLS offset in every thread */
		pc.use_rseq = true;
	}
	pc.base = base;
	pc.shift = shift;
	pc.area_node = nodes;
	pc.first_cpu = first;
	pc.ncpu = ncpu; /* last: nd_percpu_ptr's range check opens with it */
	return true;
}

static inline bool cpu_has_area(int c)
{
	return pc.area_node[c] != NO_AREA;
}

static bool setup(void)
{
	int r = __atomic_load_n(&ready, __ATOMIC_ACQUIRE);
	if (nd_likely(r != 0))
		return r > 0;
	_nd_lock(&pc_lock);
	if (ready == 0)
		__atomic_store_n(&ready, setup_locked() ? 1 : -1, __ATOMIC_RELEASE);
	_nd_unlock(&pc_lock);
	return ready > 0;
}

/* Make [committed, want) read-write and touch it in every possible area.
 * Under pc_lock. On failure nothing changes. */
static bool commit_locked(size_t want)
{
	want = ND_ALIGN_UP(want, COMMIT_STEP);
	if (want <= committed)
		return true;
	size_t len = want - committed;
	/* Under MPOL_BIND a node out of memory means the OOM killer at the
	 * touch below, not an error: refuse first if a node would go under
	 * the page layer's watermark (_nd_topo_floor). */
	const _nd_topo_t *t = _nd_topo();
	for (int n = 0; check_free && n < node_limit; n++) {
		if (!node_cpus[n])
			continue;
		uint64_t f = _nd_topo_node_free(n), wm = _nd_topo_floor(t->mem_total[n]);
		if (f != UINT64_MAX && f < (uint64_t)len * (uint64_t)node_cpus[n] + wm)
			return false;
	}
	for (int c = 0; c < pc.ncpu; c++) {
		if (!cpu_has_area(c))
			continue;
		int r = _nd_os_mprotect(area_of(c) + committed, len, PROT_RW_);
		if (r < 0) {
			for (int d = 0; d < c; d++)
				if (cpu_has_area(d))
					_nd_os_mprotect(area_of(d) + committed, len, PROT_NONE_);
			return false;
		}
		/* Fault the pages in now, where mbind says, so that accesses
		 * never fault and placement is decided by policy, not by who
		 * touches first. */
		for (size_t o = 0; o < len; o += ND_PAGE_SIZE)
			*(volatile char *)(area_of(c) + committed + o) = 0;
	}
	committed = want;
	return true;
}

/* ---- allocation --------------------------------------------------------- */

nd_percpu_t _nd_percpu_alloc(size_t size, size_t align)
{
	if (size == 0) {
		_nd_msg_api("nd_percpu_alloc: size 0");
		errno = EINVAL;
		return 0;
	}
	if (align & (align - 1)) {
		_nd_msg_api("nd_percpu_alloc: align %zu is not a power of two", align);
		errno = EINVAL;
		return 0;
	}
	if (align == 0) {
		align = 16;
		while (align > UNIT && (size & (align - 1)))
			align >>= 1;
	}
	if (align < UNIT)
		align = UNIT;
	if (!setup()) {
		errno = ENOMEM;
		return 0;
	}
	size_t span = (size_t)1 << pc.shift;
	if (size > span - RESERVED_UNITS * UNIT || align > span) {
		errno = ENOMEM;
		return 0;
	}
	size_t n = ND_ALIGN_UP(size, UNIT) >> UNIT_SHIFT, a = align >> UNIT_SHIFT;

	_nd_lock(&pc_lock);
	size_t p = ND_ALIGN_UP(hint, a);
	while (p + n <= units) {
		size_t q = bits_find(used_bm, p, p + n, true);
		if (q == p + n)
			break;
		p = ND_ALIGN_UP(bits_find(used_bm, q + 1, units, false), a);
	}
	if (p + n > units || !commit_locked((p + n) << UNIT_SHIFT)) {
		_nd_unlock(&pc_lock);
		errno = ENOMEM;
		return 0;
	}
	ND_ASSERT(p >= RESERVED_UNITS && p % (a ? a : 1) == 0 && p + n <= units,
		  "a per-CPU range is aligned, past the reserved units, inside the area");
	bits_set(used_bm, p, n, true);
	bits_set(start_bm, p, 1, true);
	if (p == hint)
		hint = bits_find(used_bm, p + n, units, false);
	used_units += n;
	_nd_unlock(&pc_lock);

	/* Zero every copy (a freed range keeps its old contents). Outside the
	 * lock: nobody else knows the handle yet. */
	size_t off = p << UNIT_SHIFT;
	for (int c = 0; c < pc.ncpu; c++)
		if (cpu_has_area(c))
			memset(area_of(c) + off, 0, n << UNIT_SHIFT);
	return (nd_percpu_t)off;
}

void nd_percpu_free(nd_percpu_t h)
{
	if (h == 0)
		return;
	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) <= 0 || (h & (UNIT - 1)) ||
	    h >= ((size_t)1 << pc.shift)) {
		_nd_msg_api("nd_percpu_free: %#lx is not a per-CPU handle", (unsigned long)h);
		errno = EINVAL;
		return;
	}
	size_t u = h >> UNIT_SHIFT;
	_nd_lock(&pc_lock);
	if (u < RESERVED_UNITS || !_nd_bit_get(start_bm, u) || !_nd_bit_get(used_bm, u)) {
		_nd_unlock(&pc_lock);
		_nd_msg_api("nd_percpu_free: %#lx is not an allocated per-CPU handle (double free?)",
			    (unsigned long)h);
		errno = EINVAL;
		return;
	}
	/* The allocation runs to the next start bit or the next free unit. */
	size_t end = bits_find(used_bm, u + 1, units, false);
	size_t next = bits_find(start_bm, u + 1, end, true);
	size_t n = next - u;
	bits_set(used_bm, u, n, false);
	bits_set(start_bm, u, 1, false);
	if (u < hint)
		hint = u;
	used_units -= n;
	_nd_unlock(&pc_lock);
}

/* ---- access ------------------------------------------------------------- */

/* 0 is nd_percpu_alloc's failure value: each operation reports it instead
 * of touching an area (which may not even exist yet). One compare on the
 * fast path. */
static bool bad_handle(nd_percpu_t h, const char *who)
{
	if (nd_likely(h != 0))
		return false;
	errno = EINVAL;
	_nd_msg_api("%s: %#lx is not a per-CPU handle (nd_percpu_alloc returns 0 on failure)", who,
		      (unsigned long)h);
	return true;
}

void *nd_percpu_ptr(nd_percpu_t h, int cpu)
{
	if (bad_handle(h, "nd_percpu_ptr"))
		return NULL;
	if (nd_unlikely((unsigned)cpu >= (unsigned)pc.ncpu) || nd_unlikely(!cpu_has_area(cpu)))
		return NULL;
	return area_of(cpu) + h;
}

/* The CPU whose slot the atomic fallback updates. Any slot keeps sums
 * exact (the update is atomic), so a real CPU id is re-read only every 64
 * operations (getcpu may be a system call here); an emulated CPU (the
 * nd_emulate_cpu override) is taken every time. */
static inline int fallback_cpu(void)
{
	_nd_thread_t *t = _nd_tls; /* fb_cpu, fb_count: the thread record's */
	int c = t->cpu_override;
	if (c < 0) {
		if (nd_unlikely(_nd_thread_none(t)) && !(t = _nd_thread_self()))
			return pc.first_cpu;
		if ((t->fb_count++ & 63) == 0)
			t->fb_cpu = _nd_topo_cpu_slow();
		c = t->fb_cpu;
	}
	if (nd_unlikely((unsigned)c >= (unsigned)pc.ncpu || !cpu_has_area(c)))
		c = pc.first_cpu;
	return c;
}

static inline int64_t *fallback_slot(nd_percpu_t h)
{
	return (int64_t *)(area_of(fallback_cpu()) + h);
}

void *nd_this_cpu_ptr(nd_percpu_t h)
{
	if (bad_handle(h, "nd_this_cpu_ptr"))
		return NULL;
	unsigned c;
	if (pc.use_rseq)
		__asm__ volatile("movl %%fs:4(%1), %0" : "=r"(c) : "r"(pc.rseq_off));
	else
		c = (unsigned)_nd_topo_cpu();
	/* A thread glibc did not register (cpu_id -1) gets some CPU's copy. */
	if (nd_unlikely(c >= (unsigned)pc.ncpu || !cpu_has_area((int)c)))
		c = (unsigned)pc.first_cpu;
	return area_of((int)c) + h;
}

/*
 * The restartable sequences. Each one:
 *  - puts its struct rseq_cs (version 0, flags 0, start_ip = 1f,
 *    post_commit_offset = 2f - 1f, abort_ip = 4f) in section __rseq_cs,
 *    32-byte aligned as the ABI requires, and a pointer to it in
 *    __rseq_cs_ptr_array (for debuggers, as librseq does);
 *  - at 0: stores the descriptor's address in the thread's rseq->rseq_cs
 *    (offset 8 of struct rseq), then from 1 reads rseq->cpu_id (offset 4),
 *    computes base + (cpu << shift) + h, and ends with ONE committing store
 *    (the last instruction before 2);
 *  - if the kernel preempts, migrates or signals the thread between 1 and
 *    2, it clears rseq_cs and resumes at the abort handler 4, which is
 *    preceded by the signature glibc registered (RSEQ_SIG 0x53053053,
 *    encoded as the operand of a ud1 so it is an invalid instruction if
 *    ever reached by fall-through), and which restarts from 0.
 * So a store is never made to a CPU's slot unless the thread was on that
 * CPU, uninterrupted, from the cpu_id read to the store.
 */
#define ND_RSEQ_SIG "0x53053053"
#define RSEQ_PROLOGUE                                                        \
	".pushsection __rseq_cs, \"aw\"\n\t"                                 \
	".balign 32\n\t"                                                     \
	"3:\n\t"                                                             \
	".long 0, 0\n\t"                                                     \
	".quad 1f, 2f - 1f, 4f\n\t"                                          \
	".popsection\n\t"                                                    \
	".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"                       \
	".quad 3b\n\t"                                                       \
	".popsection\n\t"                                                    \
	"0:\n\t"                                                             \
	"leaq 3b(%%rip), %%rax\n\t"                                          \
	"movq %%rax, %%fs:8(%[off])\n\t"                                     \
	"1:\n\t"                                                             \
	"movl %%fs:4(%[off]), %%eax\n\t"                                     \
	"shlq %%cl, %%rax\n\t"
#define RSEQ_EPILOGUE                                                        \
	"2:\n\t"                                                             \
	".pushsection __rseq_failure, \"ax\"\n\t"                            \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                         \
	".long " ND_RSEQ_SIG "\n\t"                                          \
	"4:\n\t"                                                             \
	"jmp 0b\n\t"                                                         \
	".popsection\n\t"

/* The operands every sequence shares, and the load of the CPU's copy
 * into r (rax = its address) that the read-modify-write ones start with. */
#define RSEQ_IN [off] "r"(pc.rseq_off), [p] "r"(pc.base + h), "c"(pc.shift)
#define RSEQ_CLOBBERS "rax", "memory", "cc"
#define RSEQ_LOAD_R                   \
	"addq %[p], %%rax\n\t"        \
	"movq (%%rax), %[r]\n\t"

void nd_percpu_add(nd_percpu_t h, int64_t v)
{
	if (bad_handle(h, "nd_percpu_add"))
		return;
	if (nd_likely(pc.use_rseq)) {
		__asm__ __volatile__(RSEQ_PROLOGUE
				     "addq %[v], (%[p], %%rax)\n\t" /* commit */
				     RSEQ_EPILOGUE
				     :
				     : RSEQ_IN, [v] "er"(v)
				     : RSEQ_CLOBBERS);
		return;
	}
	__atomic_fetch_add(fallback_slot(h), v, __ATOMIC_RELAXED);
}

void nd_percpu_inc(nd_percpu_t h)
{
	nd_percpu_add(h, 1);
}

int64_t nd_percpu_add_return(nd_percpu_t h, int64_t v)
{
	if (bad_handle(h, "nd_percpu_add_return"))
		return 0;
	if (nd_likely(pc.use_rseq)) {
		int64_t r;
		__asm__ __volatile__(RSEQ_PROLOGUE RSEQ_LOAD_R
				     "addq %[v], %[r]\n\t"
				     "movq %[r], (%%rax)\n\t" /* commit */
				     RSEQ_EPILOGUE
				     : [r] "=&r"(r)
				     : RSEQ_IN, [v] "er"(v)
				     : RSEQ_CLOBBERS);
		return r;
	}
	return __atomic_add_fetch(fallback_slot(h), v, __ATOMIC_RELAXED);
}

int64_t nd_percpu_cmpxchg(nd_percpu_t h, int64_t expect, int64_t newv)
{
	if (bad_handle(h, "nd_percpu_cmpxchg"))
		return expect + 1; /* "the copy did not equal expect": no store */
	if (nd_likely(pc.use_rseq)) {
		int64_t r;
		__asm__ __volatile__(RSEQ_PROLOGUE RSEQ_LOAD_R
				     "cmpq %[r], %[e]\n\t"
				     "jne 2f\n\t"
				     "movq %[n], (%%rax)\n\t" /* commit */
				     RSEQ_EPILOGUE
				     : [r] "=&r"(r)
				     : RSEQ_IN, [e] "r"(expect), [n] "r"(newv)
				     : RSEQ_CLOBBERS);
		return r;
	}
	int64_t old = expect;
	__atomic_compare_exchange_n(fallback_slot(h), &old, newv, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	return old;
}

int64_t nd_percpu_sum(nd_percpu_t h)
{
	if (ready <= 0 || bad_handle(h, "nd_percpu_sum"))
		return 0;
	int64_t s = 0;
	for (int c = 0; c < pc.ncpu; c++)
		if (cpu_has_area(c))
			s += __atomic_load_n((int64_t *)(area_of(c) + h), __ATOMIC_RELAXED);
	return s;
}

size_t nd_percpu_bytes(void)
{
	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) <= 0)
		return 0;
	_nd_lock(&pc_lock);
	size_t b = (used_units << UNIT_SHIFT) * (size_t)npossible;
	_nd_unlock(&pc_lock);
	return b;
}

bool _nd_percpu_uses_rseq(void)
{
	return setup() && pc.use_rseq;
}


/* ---- test seams --------------------------------------------------------- */

int _nd_percpu_area_node(int cpu)
{
	if (ready <= 0 || (unsigned)cpu >= (unsigned)pc.ncpu)
		return -1;
	return pc.area_node[cpu] < 0 ? -1 : pc.area_node[cpu];
}

size_t _nd_percpu_area_size(void)
{
	return ready > 0 ? (size_t)1 << pc.shift : 0;
}

size_t _nd_percpu_committed(void)
{
	if (ready <= 0)
		return 0;
	_nd_lock(&pc_lock);
	size_t c = committed;
	_nd_unlock(&pc_lock);
	return c;
}
