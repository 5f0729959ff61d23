// SPDX-License-Identifier: MIT
/*
 * The slab layer's metadata (internal.h, "src/meta.c"): a per-node bump
 * allocator for slab headers, heaps and heap arrays (never freed: a late
 * remote free always finds valid memory), the pool of released slab
 * headers, and the slab map (16 KiB unit -> slab header) that free's
 * fast path reads. Below slab.c and heap.c; calls only the layers under
 * the slab layer (page, topology, os, msg, lock).
 */
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

ND_BIG_TABLE _nd_meta_node_t _nd_meta_node[ND_MAX_NODES];
int _nd_meta_ppool_dirty;
static int nodes_used; /* highest node index used + 1 (atomic), for fork */
#define nodes _nd_meta_node /* the registry's name for these locks: "nodes[].lock" */
ND_LOCK_ARRAY(node_lock_class, nodes, lock, 0, &nodes_used, ND_RANK_SLAB_NODE);

#define META_CHUNK_PAGES 16

/* Before a node's lock is first taken (fork takes nodes [0, nodes_used)).
 * Raised under node 0's lock (lock.c, ordered with fork's prepare): the
 * caller holds no node lock. */
void _nd_meta_note_node(int node)
{
	ND_ASSERT(node >= 0 && node < ND_MAX_NODES, "metadata node in range");
	_nd_lock_count_raise(&node_lock_class, node + 1);
}

int _nd_meta_nodes_used(void) { return __atomic_load_n(&nodes_used, __ATOMIC_RELAXED); }

/* A metadata chunk on node, else on its fallback nodes, else plain mmap.
 * Under an address space limit always plain mmap: chunks are never freed,
 * and in a slot every one split the free space around it (after a peak
 * of small objects, the largest free block of a 256 MiB slot was 4 MiB:
 * large blocks failed with most of the limit free). */
static void *meta_chunk(int node, size_t bytes)
{
	size_t np = bytes >> ND_PAGE_SHIFT;
	const _nd_topo_t *t = _nd_topo();
	void *p = NULL;
	if (node >= 0 && node < t->node_limit && !_nd_page_lazy()) {
		p = _nd_page_alloc_low(node, np);
		for (int i = 0; !p && i < t->fallback_len[node]; i++)
			p = _nd_page_alloc_low(t->fallback[node][i], np);
	}
	if (p) {
		_nd_pagedesc_t *d = _nd_page_desc(p);
		if (d)
			d->use = ND_USE_META;
		return p;
	}
	int err;
	return _nd_os_mmap(bytes, false, &err);
}

/* Zeroed, cache-line aligned, never freed. Caller holds the node's lock. */
static void *meta_alloc_locked(int node, size_t size)
{
	_nd_meta_node_t *ns = &_nd_meta_node[node];
	size = ND_ALIGN_UP(size, ND_CACHE_LINE);
	if ((size_t)(ns->meta_end - ns->meta_cur) < size) {
		size_t bytes = ND_ALIGN_UP(size, META_CHUNK_PAGES * ND_PAGE_SIZE);
		char *c = meta_chunk(node, bytes);
		if (!c)
			return NULL;
		ns->meta_cur = c;
		ns->meta_end = c + bytes;
	}
	void *p = ns->meta_cur;
	ns->meta_cur += size;
	memset(p, 0, size); /* page runs may come back dirty */
	return p;
}

void *_nd_meta_alloc(int node, size_t size)
{
	_nd_meta_note_node(node);
	_nd_lock(&_nd_meta_node[node].lock);
	void *p = meta_alloc_locked(node, size);
	_nd_unlock(&_nd_meta_node[node].lock);
	return p;
}

void *_nd_meta_alloc_once(int node, void **slot, size_t size)
{
	_nd_meta_note_node(node);
	_nd_lock(&_nd_meta_node[node].lock);
	void *p = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!p && (p = meta_alloc_locked(node, size)) != NULL)
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	_nd_unlock(&_nd_meta_node[node].lock);
	return p;
}

_nd_slab_t *_nd_meta_hdr_get(int node)
{
	_nd_meta_note_node(node);
	_nd_meta_node_t *ns = &_nd_meta_node[node];
	_nd_lock(&ns->lock);
	_nd_slab_t *s = ns->free_hdrs;
	if (s) {
		ns->free_hdrs = s->hnext;
	} else if ((s = meta_alloc_locked(node, sizeof(_nd_slab_t) + (_nd_slab_check ? ND_SLAB_OUT_BYTES : 0))) != NULL) {
		/* check mode: its out bits follow (nd_slab.h, _nd_slab_out_bits) */
		s->all_next = ns->all_hdrs;
		__atomic_store_n(&ns->all_hdrs, s, __ATOMIC_RELEASE);
	}
	_nd_unlock(&ns->lock);
	return s;
}

void _nd_meta_hdr_put(int node, _nd_slab_t *s)
{
	_nd_meta_node_t *ns = &_nd_meta_node[node];
	_nd_lock(&ns->lock);
	s->hnext = ns->free_hdrs;
	ns->free_hdrs = s;
	_nd_unlock(&ns->lock);
}

/* A given-back block: its first words while it waits in the pool. */
struct blk {
	struct blk *next;
	size_t size;
};

void *_nd_meta_blk_get(int node, size_t size)
{
	_nd_meta_note_node(node);
	_nd_meta_node_t *ns = &_nd_meta_node[node];
	_nd_lock(&ns->lock);
	struct blk *b = ns->free_blks;
	if (b && b->size == size) {
		ns->free_blks = b->next;
		memset(b, 0, size);
	} else {
		b = meta_alloc_locked(node, size);
	}
	_nd_unlock(&ns->lock);
	return b;
}

void _nd_meta_blk_put(int node, void *p, size_t size)
{
	_Static_assert(sizeof(struct blk) <= ND_CACHE_LINE, "a block holds its pool link");
	_nd_meta_node_t *ns = &_nd_meta_node[node];
	struct blk *b = p;
	_nd_lock(&ns->lock);
	b->next = ns->free_blks;
	b->size = size;
	ns->free_blks = b;
	_nd_unlock(&ns->lock);
}

void _nd_meta_hdr_each(void (*fn)(const _nd_slab_t *s, void *arg), void *arg)
{
	int n = __atomic_load_n(&nodes_used, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		for (const _nd_slab_t *s = __atomic_load_n(&_nd_meta_node[i].all_hdrs, __ATOMIC_ACQUIRE); s;
		     s = s->all_next)
			fn(s, arg);
}

/* Until the map exists every lookup decodes to its `none` (lim 0): frees
 * take malloc.c's slow path, which finds slabs by page descriptor. Laid
 * out as _nd_slab_map_t with one entry (its pair: offset 0, mul 0); mask 0. */
static _Alignas(ND_CACHE_LINE) struct {
	_nd_slab_hot_t none;
	intptr_t ent0, mul0;
} boot_map = { .none.chk = ND_SLAB_CHK_B << ND_SLAB_ROT };
_Static_assert(offsetof(_nd_slab_map_t, ent) == offsetof(__typeof__(boot_map), ent0), "the boot map is a map of one entry");
_Alignas(16) _nd_slab_mapv_t _nd_slab_map = { (_nd_slab_map_t *)&boot_map, 0 };
static int map_tried; /* written under node 0's lock */

/* The map: virtual (MAP_NORESERVE), committed a page of entries at a
 * time. Made at the slab init for the largest reservation the page level
 * can have (16 TiB: 2^30 units, 16 GiB of entry pairs), so that no mapping
 * appears later in the program's life; if that is refused, made at the
 * first slab for the reservation as it is (slot 0 to the mixed slot).
 * Failure leaves the boot map (slower frees, same results). */
#define MAP_MAX_UNITS ((uintptr_t)1 << (44 - ND_SLAB_UNIT_SHIFT))

static bool map_make(uintptr_t n, bool quiet)
{
	size_t bytes = ND_ALIGN_UP(sizeof(_nd_slab_map_t) + 2 * n * sizeof(intptr_t), ND_PAGE_SIZE);
	int err;
	_nd_slab_map_t *m = _nd_os_mmap(bytes, true, &err);
	if (!m) {
		if (!quiet)
			_nd_msg_warn("slab: cannot map the %zu MiB slab map (errno %d): frees take the slow path",
				     bytes >> 20, -err);
		return false;
	}
	_nd_os_madvise(m, bytes, MADV_NOHUGEPAGE); /* sparse, like the descriptors */
	m->none.chk = _nd_slab_chk(NULL, 0, 0); /* lim 0: every check fails */
	/* base, then mask (nd_slab.h: a lookup loads them the other way) */
	__atomic_store_n(&_nd_slab_map.base, m, __ATOMIC_RELEASE);
	__atomic_store_n(&_nd_slab_map.mask, (n - 1) << 1, __ATOMIC_RELEASE);
	return true;
}

static void map_create(void)
{
	_nd_page_info_t a, b;
	if (_nd_page_info(0, &a) != 0 || _nd_page_info(-1, &b) != 0)
		return;
	uintptr_t base = (uintptr_t)a.base, end = (uintptr_t)b.base + b.slot_bytes;
	if (end <= base)
		return;
	/* at least 2^13 entries: an address that aliases onto a slab's unit
	 * then differs from it by 2^27 or more (_nd_slab_chk's bound) */
	uintptr_t units = (end - base) >> ND_SLAB_UNIT_SHIFT, n = (uintptr_t)1 << 13;
	while (n < units)
		n <<= 1;
	map_make(n, false);
}

void _nd_meta_map_ensure(void)
{
	if (nd_likely(__atomic_load_n(&map_tried, __ATOMIC_ACQUIRE)))
		return;
	_nd_meta_note_node(0);
	_nd_lock(&_nd_meta_node[0].lock);
	if (!map_tried)
		map_create();
	__atomic_store_n(&map_tried, 1, __ATOMIC_RELEASE);
	_nd_unlock(&_nd_meta_node[0].lock);
}

void _nd_meta_map_init(void)
{
	if (!__atomic_load_n(&map_tried, __ATOMIC_ACQUIRE) && map_make(MAP_MAX_UNITS, true))
		__atomic_store_n(&map_tried, 1, __ATOMIC_RELEASE);
}

void _nd_meta_map_set(const void *unit, const _nd_slab_t *s)
{
	_nd_slab_map_t *m = _nd_slab_map.base;
	if (m == (_nd_slab_map_t *)&boot_map)
		return;
	ND_ASSERT(!((uintptr_t)unit & (((uintptr_t)1 << ND_SLAB_UNIT_SHIFT) - 1)), "a map unit starts 16 KiB-aligned");
	uintptr_t i = ((uintptr_t)unit >> (ND_SLAB_UNIT_SHIFT - 1)) & _nd_slab_map.mask;
	if (i == 0)
		return; /* pair 0 stays none: a lookup may pair an old mask 0 with this map (nd_slab.h) */
	/* mul before the offset, the offset cleared first (nd_slab.h) */
	if (s) {
		__atomic_store_n(&m->ent[i + 1], (intptr_t)s->mul, __ATOMIC_RELAXED);
		__atomic_store_n(&m->ent[i], (intptr_t)s - (intptr_t)m, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&m->ent[i], 0, __ATOMIC_RELEASE);
		__atomic_store_n(&m->ent[i + 1], 0, __ATOMIC_RELAXED);
	}
}
