// SPDX-License-Identifier: MIT
/*
 * Top layer, next to malloc.c: where memory really is (nd_where, nd_move:
 * the kernel's view, by move_pages) (docs/malloc.md).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* Pages asked of the kernel per move_pages call (on the stack). */
#define BATCH 64

/* The pages [p, p + size) touches: first page and count. false (EINVAL)
 * for NULL or a range that wraps. */
static bool page_range(const void *p, size_t size, uintptr_t *first, size_t *n)
{
	uintptr_t a = (uintptr_t)p, last;
	if (!p || __builtin_add_overflow(a, size ? size - 1 : 0, &last)) {
		errno = EINVAL;
		return false;
	}
	*first = a & ~(uintptr_t)(ND_PAGE_SIZE - 1);
	*n = ((last - *first) >> ND_PAGE_SHIFT) + 1;
	return true;
}

long nd_where(const void *p, size_t size, uint64_t *counts, int max)
{
	uintptr_t a;
	size_t n;
	if (!counts || max < 1) {
		errno = EINVAL;
		return -1;
	}
	memset(counts, 0, (size_t)max * sizeof *counts);
	if (!page_range(p, size, &a, &n))
		return -1;
	long found = 0;
	const void *pages[BATCH];
	int status[BATCH];
	while (n) {
		unsigned long k = n < BATCH ? n : BATCH;
		for (unsigned long i = 0; i < k; i++)
			pages[i] = (const void *)(a + (i << ND_PAGE_SHIFT));
		int r = _nd_os_move_pages(0, k, pages, NULL, status, 0);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		/* status: the node, or -ENOENT (never touched), -EFAULT (not mapped) */
		for (unsigned long i = 0; i < k; i++) {
			if (status[i] >= 0) {
				found++;
				if (status[i] < max)
					counts[status[i]]++;
			}
		}
		a += k << ND_PAGE_SHIFT;
		n -= k;
	}
	return found;
}

int nd_move(void *p, size_t size, int node)
{
	uintptr_t a;
	size_t n;
	if (!_nd_ensure_init()) {
		errno = ENOMEM;
		return -1;
	}
	const _nd_topo_t *t = _nd_topo();
	if (node < 0 || node >= t->node_limit || !t->has_mem[node]) {
		errno = EINVAL;
		return -1;
	}
	if (!page_range(p, size, &a, &n))
		return -1;
	const void *pages[BATCH];
	int nodes[BATCH], status[BATCH];
	int first_err = 0;
	while (n) {
		unsigned long k = n < BATCH ? n : BATCH;
		for (unsigned long i = 0; i < k; i++) {
			pages[i] = (const void *)(a + (i << ND_PAGE_SHIFT));
			nodes[i] = node;
		}
		int r = _nd_os_move_pages(0, k, pages, nodes, status, ND_MPOL_MF_MOVE);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		/* a page never touched (ENOENT) or not mapped (EFAULT) has nothing
		 * to move; any other status < 0 is a page that stayed */
		for (unsigned long i = 0; i < k && !first_err; i++)
			if (status[i] < 0 && status[i] != -ENOENT && status[i] != -EFAULT)
				first_err = -status[i];
		a += k << ND_PAGE_SHIFT;
		n -= k;
	}
	if (first_err) {
		errno = first_err;
		return -1;
	}
	return 0;
}
