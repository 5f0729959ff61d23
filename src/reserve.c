// SPDX-License-Identifier: MIT
/*
 * The page level's reservation (docs/arenas.md "Layout"): its settings
 * from the options, the layout of the slots (eager: every slot mapped
 * now, halved until they fit; lazy under an address space limit: sized to
 * the limit, mapped as slots grow, room.c) and each slot's setup: node,
 * capacity, binding (mbind before anything is touched), huge page advice,
 * free space. Runs under page.c's setup lock.
 */
#include <errno.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define g _nd_page_g
#define SLOT_SHIFT_MIN 24       /* 16 MiB: smallest slot we retry down to */
#define SLOT_SHIFT_MAX 40       /* 1 TiB */
#define SLOT_SHIFT_DEFAULT_MIN 30 /* 1 GiB: smallest slot sized from memory */
#define TOTAL_SHIFT_MAX 44      /* 16 TiB of slots at most (descriptors: 128 GiB VA) */
#define PURGE_ORDER_MAX 16      /* blocks > 256 MiB are always kept clean */

static int warned_mbind;

/* The slot size's shift; sets g.run_order_max, the largest run of all
 * (docs/arenas.md "Runs larger than a slot"): the option's size when the
 * user set it ("no allocation can be larger"), else unbounded (a run
 * larger than the derived slot goes outside it, outrun.c). */
static unsigned slot_shift_wanted(const _nd_topo_t *t)
{
	int64_t opt = _nd_opt_int(ND_OPT_ARENA_RESERVE);
	unsigned shift;
	g.run_order_max = 63 - ND_PAGE_SHIFT;
	if (opt > 0) {
		shift = _nd_page_ceil_log2((uint64_t)opt);
		if (shift < SLOT_SHIFT_MIN) {
			_nd_msg_warn("option arena_reserve (NODALLOC_ARENA_RESERVE): %lld bytes is below the minimum slot of "
				     "%d MiB; using %d MiB (no allocation can be larger)",
				     (long long)opt, 1 << (SLOT_SHIFT_MIN - 20), 1 << (SLOT_SHIFT_MIN - 20));
			shift = SLOT_SHIFT_MIN;
		}
		g.run_order_max = shift - ND_PAGE_SHIFT;
	} else {
		/* 2x the largest node, and the mixed slot must hold one spread
		 * run over all of them (16 x 256 MiB: a 512 MiB slot refused
		 * interleave:all of 60% of the machine as too large) */
		uint64_t m = 0, sum = 0;
		for (int n = 0; n < t->node_limit; n++)
			if (t->has_mem[n]) {
				sum += t->mem_total[n];
				if (t->mem_total[n] > m)
					m = t->mem_total[n];
			}
		shift = _nd_page_ceil_log2(2 * m > sum ? 2 * m : sum ? sum : 1);
		if (shift < SLOT_SHIFT_DEFAULT_MIN)
			shift = SLOT_SHIFT_DEFAULT_MIN;
	}
	if (shift > SLOT_SHIFT_MAX)
		shift = SLOT_SHIFT_MAX;
	/* Every slot together within TOTAL_SHIFT_MAX of address space. */
	while (shift > SLOT_SHIFT_MIN && ((uint64_t)(t->node_limit + 1) << shift) > (1ull << TOTAL_SHIFT_MAX))
		shift--;
	return shift;
}

static bool streq_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if ((*a | 0x20) != *b)
			return false;
	return *a == *b;
}

static bool has_word(const char *s, const char *w)
{
	for (; *s; s++) {
		size_t k = 0;
		while (w[k] && s[k] == w[k])
			k++;
		if (!w[k])
			return true;
	}
	return false;
}

void _nd_reserve_read_options(void)
{
	g.strict = _nd_opt_int(ND_OPT_STRICT) != 0;
	g.huge_spread = _nd_opt_int(ND_OPT_HUGE_SPREAD) != 0;
	const char *pm = _nd_opt_str(ND_OPT_PURGE);
	g.advice = MADV_DONTNEED;
	if (streq_nocase(pm, "free"))
		g.advice = MADV_FREE;
	else if (pm[0] && !streq_nocase(pm, "dontneed"))
		_nd_opt_config_error("NODALLOC_PURGE: bad value '%s' (expected dontneed or free); using dontneed", pm);
	int64_t th = _nd_opt_int(ND_OPT_PURGE_THRESHOLD);
	g.purge_pages = th <= (int64_t)ND_PAGE_SIZE ? 1 : ((uint64_t)th + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	g.purge_order = _nd_page_ceil_log2(g.purge_pages);
	if (g.purge_order > PURGE_ORDER_MAX) { /* keeps dirty blocks small */
		g.purge_order = PURGE_ORDER_MAX;
		g.purge_pages = 1ull << PURGE_ORDER_MAX;
	}
	g.dirty_limit = 4ull << g.purge_order;
	if (g.dirty_limit < 256)
		g.dirty_limit = 256;
	int64_t ms = _nd_opt_int(ND_OPT_PURGE_DECAY_MS);
	if (ms < 0)
		_nd_opt_config_error("NODALLOC_PURGE_DECAY_MS: negative value %lld: no decay (as 0)", (long long)ms);
	/* clamped as large.c's delay: ms * 10^6 must not wrap to a short decay */
	g.decay_ns = ms > 0 ? (uint64_t)(ms > INT64_MAX / 1000000 ? INT64_MAX / 1000000 : ms) * 1000000u : 0;
	const char *thp = _nd_opt_str(ND_OPT_THP);
	g.thp = ND_THP_MADVISE;
	if (streq_nocase(thp, "never"))
		g.thp = ND_THP_NEVER;
	else if (streq_nocase(thp, "always"))
		g.thp = ND_THP_ALWAYS;
	else if (thp[0] && !streq_nocase(thp, "madvise"))
		_nd_opt_config_error("option thp (NODALLOC_THP): bad value '%s' (never, madvise or always); using madvise", thp);
	/* madvise: only where the kernel would not give huge pages anyway
	 * ("[madvise]" in the system's mode; under "always" it does, under
	 * "never" nothing can). */
	char mode[128];
	g.thp_runs = g.thp == ND_THP_MADVISE &&
		     _nd_os_read_file("/sys/kernel/mm/transparent_hugepage/enabled", mode, sizeof mode) > 0 &&
		     has_word(mode, "[madvise]");
	int64_t us = _nd_opt_int(ND_OPT_THP_SLOW_US);
	if (us < 0)
		_nd_opt_config_error("NODALLOC_THP_SLOW_US: negative value %lld: no probe (as 0)", (long long)us);
	g.thp_slow_ns = us > 0 ? (uint64_t)(us > INT64_MAX / 1000 ? INT64_MAX / 1000 : us) * 1000u : 0;
}

/* Lazy layout (an address space limit): a range of total bytes aligned
 * to align that nothing maps now, far below the mappings (the kernel
 * maps top-down from near a fresh mapping's address, so the space at
 * half of it stays free); nothing is mapped there yet. NULL if none. */
static void *lazy_base(size_t total, size_t align, int *err)
{
	void *probe = _nd_os_mmap(ND_PAGE_SIZE, true, err);
	if (!probe)
		return NULL;
	_nd_os_munmap(probe, ND_PAGE_SIZE);
	uintptr_t top = (uintptr_t)probe;
	for (unsigned k = 1; k <= 4; k++) {
		uintptr_t b = (top >> k) & ~(uintptr_t)(align - 1);
		if (b < align || b + total > top)
			continue;
		int r = _nd_os_mmap_at((void *)b, ND_PAGE_SIZE, true);
		if (r == 0) {
			_nd_os_munmap((void *)b, ND_PAGE_SIZE);
			return (void *)b;
		}
		*err = r;
	}
	return NULL;
}

/* The slot size under an address space limit leaving room bytes: one
 * node slot may take all of it, and twice that when the descriptors
 * (1/128 of the layout) stay within 1/16 of it: a large run then finds
 * an aligned block above the peak of a phase of small runs, whose last
 * slabs stay where they were (a slot of the room's size: its largest
 * free block 64 MiB of 195 after 156 MiB of 64 B objects were freed). */
static unsigned lazy_shift(unsigned wanted, int nslots, uint64_t room)
{
	unsigned shift = _nd_page_ceil_log2(room) + 1;
	if (shift > wanted)
		shift = wanted;
	while (shift > SLOT_SHIFT_MIN && ((((uint64_t)nslots << shift) >> ND_PAGE_SHIFT) * sizeof(_nd_pagedesc_t)) > room / 16)
		shift--;
	return shift < SLOT_SHIFT_MIN ? SLOT_SHIFT_MIN : shift;
}

static void report_failure(int nslots, unsigned shift, int err)
{
	uint64_t room = _nd_os_as_room();
	if (room != UINT64_MAX)
		_nd_msg_error("initialization failed: cannot reserve %d arena slots of %zu MiB (errno %d; "
			      "the address space limit, ulimit -v, leaves %llu MiB); every allocation fails with ENOMEM",
			      nslots, ((size_t)1 << shift) >> 20, -err, (unsigned long long)(room >> 20));
	else
		_nd_msg_error("initialization failed: cannot reserve %d arena slots of %zu MiB (errno %d); "
			      "every allocation fails with ENOMEM", nslots, ((size_t)1 << shift) >> 20, -err);
}

/* The reservation and its descriptors: *res, *desc, *shift. Eager (no
 * limit): every slot mapped now, halving the slot size on failure; lazy:
 * only the layout (see lazy_base). 0, or -1 reported. */
int _nd_reserve_layout(const _nd_topo_t *t, int nslots, void **res, void **desc, unsigned *shift_out)
{
	unsigned shift = slot_shift_wanted(t), first = shift;
	uint64_t room = _nd_os_as_room();
	g.lazy = room != UINT64_MAX;
	if (g.lazy)
		shift = first = lazy_shift(shift, nslots, room);
	int err = 0;
	for (;;) {
		size_t total = (size_t)nslots << shift;
		size_t desc_bytes = (total >> ND_PAGE_SHIFT) * sizeof(_nd_pagedesc_t);
		*desc = _nd_os_mmap(desc_bytes, true, &err);
		if (*desc) {
			*res = g.lazy ? lazy_base(total, (size_t)1 << shift, &err)
				      : _nd_os_mmap_aligned(total, (size_t)1 << shift, true, &err);
			if (*res)
				break;
			_nd_os_munmap(*desc, desc_bytes);
		}
		if (shift <= SLOT_SHIFT_MIN) {
			report_failure(nslots, shift, err);
			return -1;
		}
		shift--;
	}
	if (shift != first)
		_nd_msg_warn("page: could not reserve %d slots of %zu MiB; using %zu MiB slots", nslots,
			     ((size_t)1 << first) >> 20, ((size_t)1 << shift) >> 20);
	*shift_out = shift;
	return 0;
}

/* Slot s of the new layout: its node, capacity, binding, free space. */
void _nd_reserve_slot_init(_nd_arena_t *a, int s, const _nd_topo_t *t)
{
	uint64_t slot_pages = 1ull << g.order_max;
	a->lock = (_nd_lock_t)ND_LOCK_INIT;
	a->mixed = s == t->node_limit;
	a->node = a->mixed ? -1 : s;
	a->base = (char *)g.base + ((size_t)s << g.slot_shift);
	_nd_buddy_init(&a->bd, g.desc + ((size_t)s << g.order_max), g.order_max, g.purge_order);
	a->usable = a->mixed || t->has_mem[s];
	a->cap = UINT64_MAX;
	if (!a->usable)
		return;
	if (a->mixed && g.bind) {
		/* The mixed slot's descriptors (32 B per page: 21 MiB for a
		 * 2.7 GiB spread run) are written page by page by the placing
		 * thread; by first touch they all landed on its node, after
		 * that node's headroom check: the 16-node VM OOM-killed
		 * vm_spread there. Interleaved (not bound: metadata never
		 * fails), they follow the runs' own spread. */
		uint64_t mem[ND_MAX_NODES / 64] = { 0 };
		for (int n = 0; n < t->node_limit; n++)
			if (t->has_mem[n])
				mem[n / 64] |= 1ull << (n % 64);
		_nd_os_mbind(a->bd.desc, (size_t)slot_pages * sizeof(_nd_pagedesc_t), ND_MPOL_INTERLEAVE, mem,
			     (unsigned long)g.node_limit, 0);
	}
	if (!a->mixed) {
		if (t->emulated)
			a->cap = t->mem_total[s] >> ND_PAGE_SHIFT;
		a->floor = _nd_topo_floor(t->mem_total[s]);
		if (g.bind) {
			/* lazy: chunks are bound as they are mapped (room.c);
			 * whether the node is allowed is probed on one page */
			size_t blen = g.lazy ? ND_PAGE_SIZE : (size_t)1 << g.slot_shift;
			int r = g.lazy ? _nd_os_mmap_at(a->base, blen, true) : 0;
			bool probe = g.lazy && r == 0;
			if (r == 0)
				r = _nd_room_bind(a->base, blen, s);
			if (probe)
				_nd_os_munmap(a->base, blen);
			if (r == -EINVAL) {
				_nd_msg_warn("page: node %d refused by mbind (not in Mems_allowed?); not used", s);
				a->usable = false;
				return;
			}
			if (r < 0 && !warned_mbind++)
				_nd_msg_warn("page: mbind of node %d's slot failed (errno %d); placement left to the kernel", s, -r);
			/* The slot's descriptors live on its node too, as the
			 * kernel keeps struct page with its memory; preferred,
			 * never bind: metadata must not fail on a full node. */
			uint64_t one[ND_MAX_NODES / 64] = { 0 };
			one[s / 64] |= 1ull << (s % 64);
			_nd_os_mbind(a->bd.desc, (size_t)slot_pages * sizeof(_nd_pagedesc_t), ND_MPOL_PREFERRED, one,
				     (unsigned long)g.node_limit, 0);
		}
	}
	/* Every slot starts as one hole that the buddy allocator grows into
	 * (room.c): split from one block of the whole slot, the first run
	 * wrote a free head at page 2^k for every order k below the slot's,
	 * each on a page of descriptors of its own (64 KiB resident in every
	 * process, issue 11). The hole's head is implied (mapped: room.c
	 * never writes it), so a slot never used (the mixed one, other
	 * nodes') leaves its descriptors untouched. Eager: mapped and advised
	 * now, as a whole. */
	a->mapped = 0;
	if (g.lazy)
		return;
	_nd_room_fresh(a, 0, slot_pages);
	if (!a->mixed)
		_nd_room_stats(_nd_stats_reserved, s, (int64_t)slot_pages);
}

