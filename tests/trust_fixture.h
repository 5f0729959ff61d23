// SPDX-License-Identifier: MIT
/* Shared by the trust tests (test_trust_*.c, task trust27). */
#ifndef ND_TRUST_FIXTURE_H
#define ND_TRUST_FIXTURE_H
#include <malloc.h>

#include "internal.h"

/* malloc_trim(0); the ThreadSanitizer build (no override: malloc_trim is
 * the C library's) makes its calls itself, in its order. */
static inline void trust_trim(void)
{
#ifdef ND_NO_OVERRIDE
	_nd_slab_flush_remote();
	_nd_heap_trim_self(false);
	_nd_heap_trim_parked();
	_nd_large_flush(-1);
	_nd_page_trim(-1);
#else
	malloc_trim(0);
#endif
}
#endif
