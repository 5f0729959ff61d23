// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 11,
 * table.c. */
#ifndef ND_TABLE_H
#define ND_TABLE_H

/* ======================================================================
 * src/table.c: distributed large tables (public API nd_table_*). The pure
 * parts are exposed for unit tests.
 * ====================================================================== */

/* nd_table_alloc after the library's init (api_init.c runs it). */
int _nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out);
/* The kernel's sizing (alloc_large_system_hash, mm/mm_init.c) for mem
 * bytes of memory: the entry count to try first, a power of two >= 1.
 * Does not validate d (nd_table_alloc does). */
uint64_t _nd_table_size(const nd_table_desc_t *d, uint64_t mem);
/* Interleave granule (4096 << shift) for a table of bytes over nnodes:
 * the largest shift <= 9 (2 MiB, huge pages) whose per-node bytes are
 * within max/min <= 1.05; the most even smaller one otherwise. */
unsigned _nd_table_granule_shift(uint64_t bytes, int nnodes);
/* Per-node bytes of a table of bytes interleaved over nnodes with granule
 * 4096 << shift (set index i, not node id): the smallest and largest. */
void _nd_table_spread_minmax(uint64_t bytes, int nnodes, unsigned shift, uint64_t *min, uint64_t *max);
/* The kernel's retry loop: try(bucket_size << *log2qty) and halve on
 * failure while the size is above one page and the halved *log2qty stays
 * above 0. Returns the table (with *log2qty what was obtained) or NULL. */
typedef void *(*_nd_table_try_fn)(size_t bytes, void *ctx);
void *_nd_table_try_halving(size_t bucket_size, unsigned *log2qty, _nd_table_try_fn try_alloc, void *ctx);

#endif /* ND_TABLE_H */
