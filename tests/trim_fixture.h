// SPDX-License-Identifier: MIT
/* Shared by the malloc_trim tests (test_slab_trim_partial,
 * test_heap_trim_parked): n objects of sz bytes in o, of which every
 * keep-th (index % keep == 0) is live and the rest freed; which pages the
 * freed ones start in hold no live object, and how many of those are
 * resident (mincore). */
#ifndef ND_TRIM_FIXTURE_H
#define ND_TRIM_FIXTURE_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"

static inline int trim_live_page(unsigned char *const *o, int n, size_t sz, int keep, uintptr_t pg)
{
	for (int i = 0; i < n; i += keep) {
		uintptr_t a = (uintptr_t)o[i] & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		uintptr_t b = ((uintptr_t)o[i] + sz - 1) & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		if (pg == a || pg == b)
			return 1;
	}
	return 0;
}

/* Each page counted once (a page's freed objects are neighbours in o);
 * seen: room for n entries. */
static inline void trim_free_pages(unsigned char *const *o, int n, size_t sz, int keep, uintptr_t *seen, int *np,
				   int *res)
{
	int ns = 0;
	*np = *res = 0;
	for (int i = 0; i < n; i++) {
		if (i % keep == 0)
			continue;
		uintptr_t pg = (uintptr_t)o[i] & ~(uintptr_t)(ND_PAGE_SIZE - 1);
		int dup = 0;
		for (int j = ns - 1; j >= 0 && j >= ns - 64 && !dup; j--)
			dup = seen[j] == pg;
		if (dup || trim_live_page(o, n, sz, keep, pg))
			continue;
		seen[ns++] = pg;
		unsigned char v = 0;
		CHECK(mincore((void *)pg, ND_PAGE_SIZE, &v) == 0, "mincore");
		(*np)++;
		*res += v & 1;
	}
}

/* n objects of sz bytes into o, each written (index-dependent bytes),
 * then all but every keep-th freed */
static inline void trim_fill(unsigned char **o, int n, size_t sz, int keep)
{
	for (int i = 0; i < n; i++) {
		o[i] = malloc(sz);
		CHECK(o[i] != NULL);
		if (o[i])
			memset(o[i], (i & 0x7f) + 1, sz);
	}
	for (int i = 0; i < n; i++)
		if (i % keep)
			free(o[i]);
}

/* The live objects whose bytes changed. */
static inline int trim_live_changed(unsigned char *const *o, int n, size_t sz, int keep)
{
	int bad = 0;
	for (int i = 0; i < n; i += keep)
		for (size_t j = 0; j < sz; j++)
			if (o[i][j] != (unsigned char)((i & 0x7f) + 1)) {
				bad++;
				break;
			}
	return bad;
}

/* The freed objects again, written, then every object freed. */
static inline void trim_refill_free(unsigned char **o, int n, size_t sz, int keep)
{
	for (int i = 0; i < n; i++)
		if (i % keep) {
			o[i] = malloc(sz);
			CHECK(o[i] != NULL);
			if (o[i])
				memset(o[i], 0x5a, sz);
		}
	for (int i = 0; i < n; i++)
		free(o[i]);
}
#endif
