// SPDX-License-Identifier: MIT
/* Force-included (-include) into the unit stress tests that make tsan
 * reuses: their malloc family becomes nodalloc's nd_* API, since the
 * ThreadSanitizer build has no malloc override (tests/tsan/part.cmake).
 * The C library's headers come first, so later includes see the macros
 * only at call sites. */
#ifndef ND_TSAN_RENAME_H
#define ND_TSAN_RENAME_H
#include <malloc.h>
#include <stdlib.h>

#include "nodalloc.h"

#define malloc(n) nd_malloc(n)
#define free(p) nd_free(p)
#define calloc(n, s) nd_calloc(n, s)
#define realloc(p, n) nd_realloc(p, n)
#define aligned_alloc(a, n) nd_aligned_alloc(a, n)
#define malloc_usable_size(p) nd_usable_size(p)
#endif
