/*
 * Large allocations (above ND_SLAB_MAX): page runs straight from the page
 * level, under the policy in force. The run head's descriptor carries
 * use = ND_USE_LARGE and user = the requested size; the run length is the
 * page level's (d->npages).
 */
#include <errno.h>

#include "internal.h"

static bool spreads(const nd_policy_t *pol, size_t npages)
{
	if (pol->mode != ND_POLICY_INTERLEAVE && pol->mode != ND_POLICY_WEIGHTED)
		return false;
	/* one granule or less: the round-robin choice of a whole run */
	return npages > ((size_t)1 << pol->granularity_shift);
}

void *_nd_large_alloc(size_t size, size_t align, const nd_policy_t *pol, int want_node)
{
	if (size > SIZE_MAX - ND_PAGE_SIZE || size == 0) {
		if (size == 0)
			size = 1;
		else {
			errno = ENOMEM;
			return NULL;
		}
	}
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	size_t ap = align > ND_PAGE_SIZE ? align >> ND_PAGE_SHIFT : 1;
	if (!pol || pol->mode == ND_POLICY_DEFAULT)
		pol = _nd_policy_current();
	void *p;
	if (want_node < 0 && ap == 1 && spreads(pol, np)) {
		p = _nd_page_alloc_spread(np, pol);
	} else {
		int got = -1;
		p = _nd_page_alloc(np, ap, pol, want_node, &got);
	}
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (d) {
		d->use = ND_USE_LARGE;
		d->user = size;
	}
	return p;
}

void _nd_large_free(void *p, _nd_pagedesc_t *d)
{
	if (((uintptr_t)p & (ND_PAGE_SIZE - 1)) || d->state != ND_PG_RUN)
		_nd_msg_fatal("free(): invalid pointer %p (inside a %llu-byte allocation, not its start)", p,
			      (unsigned long long)d->user);
	d->use = ND_USE_NONE;
	d->user = 0;
	if (_nd_page_free(p) != 0)
		_nd_msg_fatal("free(): invalid pointer %p (not the start of a page run)", p);
}

size_t _nd_large_usable(const void *p, const _nd_pagedesc_t *d)
{
	(void)p;
	return (size_t)d->npages << ND_PAGE_SHIFT;
}

void _nd_large_resize(void *p, _nd_pagedesc_t *d, size_t size)
{
	(void)p;
	d->user = size;
}

/* New memory of a realloc goes where the policy in force puts a fresh
 * run; growing in place is right only when that is the run's own node.
 * Interleave and weighted never grow in place: their choice moves a
 * cursor, and a big run of theirs is spread (mixed slot) anyway. */
static bool policy_keeps_node(const void *p)
{
	const nd_policy_t *pol = _nd_policy_current();
	if (pol->mode == ND_POLICY_INTERLEAVE || pol->mode == ND_POLICY_WEIGHTED)
		return false;
	int node = _nd_page_node_of(p);
	_nd_policy_iter_t it;
	return node >= 0 && _nd_policy_first(&it, pol, -1) == node;
}

bool _nd_large_grow(void *p, _nd_pagedesc_t *d, size_t size)
{
	if (size > SIZE_MAX - ND_PAGE_SIZE || !policy_keeps_node(p))
		return false;
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	if (_nd_page_grow(p, np) != 0)
		return false;
	d->user = size;
	return true;
}

bool _nd_large_shrink(void *p, _nd_pagedesc_t *d, size_t size)
{
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	if (np == 0 || _nd_page_shrink(p, np) != 0)
		return false;
	d->user = size;
	return true;
}
