// SPDX-License-Identifier: MIT
/*
 * Runs outside the slots (docs/arenas.md "Runs outside the slot"): a
 * large run of node N that N's slot cannot hold (the blocks a program
 * holds split it: no stretch of the run's size is free) while N's room
 * allows it gets a mapping of its own, bound to N as the slot is
 * (_nd_room_bind: strict or preferred), charged to N's room, committed
 * and in use as a slot run is. Each is recorded in a table, the only way
 * free, realloc and the lookups find it: _nd_page_desc and
 * _nd_page_node_of fall back to it for an address no slot holds.
 *
 * The table: OUT_MAX entries, mapped at the first such run (os.c), each
 * holding the run's head descriptor (state RUN, npages, node, flags
 * ND_PGF_OUT; use/user belong to the layer above, as for a slot run); an
 * index of the live entries sorted by start finds a pointer's run by
 * binary search. An entry's descriptor stays where it is while its run
 * lives (a caller holds it across the lock); only the index moves. A full
 * table refuses the run (the caller falls back, or ENOMEM).
 *
 * Lock: out_lock (rank ND_RANK_PAGE_OUT, takes no other lock) for the
 * table and its index; `live` is read without it (0: nothing to look up,
 * one load on the lookups of addresses outside the reservation). Fork:
 * the child keeps the mappings, the table and their bindings.
 */
#include <errno.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define g _nd_page_g
#define OUT_MAX 4096u  /* runs outside the slots at once */
#define HUGE_PAGES (ND_HUGE_SIZE >> ND_PAGE_SHIFT)

typedef struct out_entry {
	uintptr_t start;     /* 0: free entry */
	uint32_t next_free;  /* free list link */
	_nd_pagedesc_t head; /* the run's head descriptor */
} out_entry_t;

static struct {
	out_entry_t *e;     /* OUT_MAX entries (mapped at the first run) */
	uint16_t *idx;      /* live entries' indexes, sorted by start */
	uint32_t used;      /* entries ever handed out: those past it are free */
	uint32_t free_head; /* free list (UINT32_MAX: empty) */
} t = { .free_head = UINT32_MAX };
/* Entries in t.idx (written under out_lock, read without it: page.c's
 * lookups of addresses outside the reservation call in only while some
 * exist, so a process without such a run never runs this file's code). */
uint32_t _nd_outrun_live;
#define live _nd_outrun_live
ND_LOCK_DEFINE(out_lock, ND_RANK_PAGE_OUT);

/* A pointer inside a run past its first page: a tail, as a slot run's
 * pages past its head are (use NONE: an invalid free). Never written. */
static const _nd_pagedesc_t tail_desc = { .state = ND_PG_TAIL };

/* Position in idx[0, n) of the last entry starting at or below p, -1 if
 * none. Lock held. */
static int find_pos_in(uintptr_t p, uint32_t n)
{
	int lo = 0, hi = (int)n - 1, r = -1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (t.e[t.idx[mid]].start <= p) {
			r = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return r;
}

static int find_pos(uintptr_t p)
{
	return find_pos_in(p, live);
}

/* The entry whose run holds p, NULL if none. Lock held. */
static out_entry_t *find(uintptr_t p)
{
	int k = find_pos(p);
	if (k < 0)
		return NULL;
	out_entry_t *e = &t.e[t.idx[k]];
	return p - e->start < (e->head.npages << ND_PAGE_SHIFT) ? e : NULL;
}

/* Records run [p, p + n pages) of node: its entry, NULL when the table is
 * full (or cannot be mapped). */
static out_entry_t *record(uintptr_t p, uint64_t n, int node)
{
	_nd_lock(&out_lock);
	if (!t.e) {
		int err;
		size_t bytes = ND_ALIGN_UP(OUT_MAX * (sizeof(out_entry_t) + sizeof(uint16_t)), ND_PAGE_SIZE);
		char *m = _nd_os_mmap(bytes, false, &err);
		if (m) {
			t.idx = (uint16_t *)(m + OUT_MAX * sizeof(out_entry_t));
			t.e = (out_entry_t *)m;
		}
	}
	uint32_t i = UINT32_MAX;
	if (t.e && t.free_head != UINT32_MAX) {
		i = t.free_head;
		t.free_head = t.e[i].next_free;
	} else if (t.e && t.used < OUT_MAX) {
		i = t.used++;
	}
	out_entry_t *e = NULL;
	if (i != UINT32_MAX) {
		e = &t.e[i];
		e->start = p;
		e->head = (_nd_pagedesc_t){ .state = ND_PG_RUN, .flags = ND_PGF_OUT | ND_PGF_FRESH, .node = node, .npages = n };
		int at = find_pos(p) + 1;
		for (int k = (int)live; k > at; k--)
			t.idx[k] = t.idx[k - 1];
		t.idx[at] = (uint16_t)i;
		__atomic_store_n(&live, live + 1, __ATOMIC_RELEASE);
	}
	_nd_unlock(&out_lock);
	return e;
}

/* Removes the entry of the run starting at p (claims the run: a second
 * free finds none). Its page count in *n and node in *node; false if p
 * is no run's start. */
static bool unrecord(uintptr_t p, uint64_t *n, int *node)
{
	_nd_lock(&out_lock);
	int k = find_pos(p);
	out_entry_t *e = k >= 0 ? &t.e[t.idx[k]] : NULL;
	bool ok = e && e->start == p && e->head.state == ND_PG_RUN;
	if (ok) {
		*n = e->head.npages;
		*node = e->head.node;
		uint32_t i = t.idx[k];
		for (uint32_t j = (uint32_t)k; j + 1 < live; j++)
			t.idx[j] = t.idx[j + 1];
		__atomic_store_n(&live, live - 1, __ATOMIC_RELEASE);
		e->start = 0;
		e->head = (_nd_pagedesc_t){ 0 };
		e->next_free = t.free_head;
		t.free_head = i;
	}
	_nd_unlock(&out_lock);
	return ok;
}

void *_nd_outrun_alloc(int node, uint64_t n, uint64_t align)
{
	if (node < 0 || node >= g.node_limit || !g.arenas[node].usable)
		return NULL;
	_nd_arena_t *a = &g.arenas[node];
	/* every page fresh: the room's headroom check counts them all */
	if (!_nd_room_take(a, n, n))
		return NULL;
	size_t len = (size_t)n << ND_PAGE_SHIFT;
	size_t al = (size_t)align << ND_PAGE_SHIFT;
	if (n >= HUGE_PAGES && al < ND_HUGE_SIZE) /* huge pages possible, as a slot's naturally aligned block */
		al = ND_HUGE_SIZE;
	int err;
	char *p = al > ND_PAGE_SIZE ? _nd_os_mmap_aligned(len, al, false, &err) : _nd_os_mmap(len, false, &err);
	if (!p) {
		_nd_room_give(a, n);
		return NULL;
	}
	/* bound before the first touch, as the slot; a refusal leaves the
	 * placement to the kernel, as reserve.c does for a slot */
	if (g.bind)
		(void)_nd_room_bind(p, len, node);
	/* the whole mapping, past its last whole huge page too (no huge page
	 * there, the VMA too short): one VMA, which a realloc's mremap moves.
	 * Probed and backed off as a slot's new big run (room.c); not advised
	 * (a slow probe, a back-off in force): NOHUGEPAGE whole, which joins
	 * the probed 2 MiB's VMA back to the rest (its huge page stays). */
	if (n >= HUGE_PAGES && g.thp_runs && !_nd_room_huge(p, len, true))
		_nd_os_madvise(p, len, MADV_NOHUGEPAGE);
	if (!record((uintptr_t)p, n, node)) {
		_nd_os_munmap(p, len);
		_nd_room_give(a, n);
		return NULL;
	}
	_nd_room_committed(a, (int64_t)n);
	_nd_room_stats(_nd_stats_in_use, node, (int64_t)n);
	return p;
}

_nd_pagedesc_t *_nd_outrun_desc(const void *p)
{
	if (nd_likely(!__atomic_load_n(&live, __ATOMIC_ACQUIRE)))
		return NULL;
	_nd_lock(&out_lock);
	out_entry_t *e = find((uintptr_t)p);
	_nd_pagedesc_t *d = !e ? NULL : (uintptr_t)p - e->start < ND_PAGE_SIZE ? &e->head : (_nd_pagedesc_t *)&tail_desc;
	_nd_unlock(&out_lock);
	return d;
}

int _nd_outrun_node_of(const void *p)
{
	if (nd_likely(!__atomic_load_n(&live, __ATOMIC_ACQUIRE)))
		return -1;
	_nd_lock(&out_lock);
	out_entry_t *e = find((uintptr_t)p);
	int node = e ? e->head.node : -1;
	_nd_unlock(&out_lock);
	return node;
}

int _nd_outrun_free(void *p)
{
	uint64_t n;
	int node;
	if (!__atomic_load_n(&live, __ATOMIC_ACQUIRE) || !unrecord((uintptr_t)p, &n, &node))
		return -1;
	_nd_arena_t *a = &g.arenas[node];
	_nd_os_munmap(p, (size_t)n << ND_PAGE_SHIFT);
	_nd_room_committed(a, -(int64_t)n);
	_nd_room_give(a, n);
	_nd_room_stats(_nd_stats_in_use, node, -(int64_t)n);
	return 0;
}

int _nd_outrun_shrink(void *p, uint64_t new_npages)
{
	if (!new_npages || !__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		return -1;
	_nd_lock(&out_lock);
	out_entry_t *e = find((uintptr_t)p);
	uint64_t n = e && e->start == (uintptr_t)p ? e->head.npages : 0;
	int node = e ? e->head.node : -1;
	if (new_npages < n)
		e->head.npages = new_npages; /* the tail is ours until unmapped: lookups stop at the new end */
	_nd_unlock(&out_lock);
	if (new_npages >= n)
		return -1;
	_nd_arena_t *a = &g.arenas[node];
	uint64_t cut = n - new_npages;
	_nd_os_munmap((char *)p + (new_npages << ND_PAGE_SHIFT), (size_t)cut << ND_PAGE_SHIFT);
	_nd_room_committed(a, -(int64_t)cut);
	_nd_room_give(a, cut);
	_nd_room_stats(_nd_stats_in_use, node, -(int64_t)cut);
	return 0;
}

/* Entry e's run now starts at `to`: the index kept sorted (e's own
 * place taken out, e put back after the entries at or below to). */
static void rekey(out_entry_t *e, uintptr_t to)
{
	_nd_lock(&out_lock);
	uint16_t i = (uint16_t)(e - t.e);
	uint32_t k = 0;
	while (t.idx[k] != i)
		k++;
	for (; k + 1 < live; k++)
		t.idx[k] = t.idx[k + 1];
	e->start = to;
	uint32_t at = (uint32_t)(find_pos_in(to, live - 1) + 1);
	for (k = live - 1; k > at; k--)
		t.idx[k] = t.idx[k - 1];
	t.idx[at] = i;
	_nd_unlock(&out_lock);
}

/* Moves run e ([p, p + len)) with its pages, grown to nlen, into a fresh
 * reservation aligned as a new run of nlen would be (2 MiB from a huge
 * page on: the huge pages move whole): mremap MAYMOVE|FIXED, no copy.
 * The table says the new start before the move: p's range, free once the
 * pages left it, may become another run's at once. Its new address, or
 * NULL with nothing changed (the run spans VMAs: the caller copies). */
static char *move_run(out_entry_t *e, char *p, size_t len, size_t nlen)
{
	int err;
	char *q = _nd_os_mmap_aligned(nlen, nlen >= ND_HUGE_SIZE ? ND_HUGE_SIZE : ND_PAGE_SIZE, true, &err);
	if (!q)
		return NULL;
	rekey(e, (uintptr_t)q);
	int r = _nd_os_mremap_move(p, len, nlen, q);
	if (r == 0)
		return q;
	rekey(e, (uintptr_t)p);
	/* The reservation goes, but never what another thread may have mapped
	 * where the kernel unmapped it. An ENOMEM of the map count
	 * (vm.max_map_count) comes before the kernel touches it: whole, ours,
	 * unmapped (before, it stayed, a map more at each refusal near the
	 * limit: audit27, test_large_outrun_maps). Any other refusal may come
	 * after the unmap (the run spans VMAs, the commit charge): unmapped
	 * only if taken back whole. */
	if (r == -ENOMEM && _nd_os_move_refused_whole((uint64_t)(nlen - len)))
		_nd_os_munmap(q, nlen);
	else if (_nd_os_mmap_at(q, nlen, true) == 0)
		_nd_os_munmap(q, nlen);
	return NULL;
}

void *_nd_outrun_grow(void *p, uint64_t new_npages)
{
	if (!__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		return NULL;
	_nd_lock(&out_lock);
	out_entry_t *e = find((uintptr_t)p);
	if (e && (e->start != (uintptr_t)p || e->head.state != ND_PG_RUN))
		e = NULL;
	_nd_unlock(&out_lock);
	/* the caller's run: its entry and npages stay (only the owner frees,
	 * shrinks or grows it; others move only the index) */
	uint64_t n = e ? e->head.npages : 0;
	/* NODALLOC_ARENA_RESERVE set by the user bounds a grown block too
	 * (page.c prepare: g.run_order_max) */
	if (!e || new_npages <= n || _nd_page_ceil_log2(new_npages) > g.run_order_max)
		return NULL;
	int node = e->head.node;
	_nd_arena_t *a = &g.arenas[node];
	uint64_t add = new_npages - n;
	if (!_nd_room_take(a, add, add)) /* every added page fresh */
		return NULL;
	size_t len = (size_t)n << ND_PAGE_SHIFT, nlen = (size_t)new_npages << ND_PAGE_SHIFT;
	/* in place: the VMA of its last page takes the range after it */
	char *q = p;
	if (_nd_os_mremap_grow(q + len - ND_PAGE_SIZE, ND_PAGE_SIZE, nlen - len + ND_PAGE_SIZE) != 0 &&
	    !(q = move_run(e, p, len, nlen))) {
		_nd_room_give(a, add);
		return NULL;
	}
	/* the added range has the VMA's policy already; bound as a new run's
	 * (before the first touch) in case it had none */
	if (g.bind)
		(void)_nd_room_bind(q + len, nlen - len, node);
	if (new_npages >= HUGE_PAGES && g.thp_runs) /* unless backing off (room.c): then as it was */
		_nd_room_huge(q, nlen, false);
	_nd_lock(&out_lock);
	e->head.npages = new_npages;
	e->head.flags &= (uint8_t)~ND_PGF_FRESH; /* its old pages were handed out */
	_nd_unlock(&out_lock);
	_nd_room_committed(a, (int64_t)add);
	_nd_room_stats(_nd_stats_in_use, node, (int64_t)add);
	return q;
}

void _nd_outrun_info(int node, uint64_t *runs, uint64_t *pages)
{
	*runs = *pages = 0;
	if (!__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		return;
	_nd_lock(&out_lock);
	for (uint32_t k = 0; k < live; k++) {
		const out_entry_t *e = &t.e[t.idx[k]];
		if (node < 0 || e->head.node == node) {
			(*runs)++;
			*pages += e->head.npages;
		}
	}
	_nd_unlock(&out_lock);
}
