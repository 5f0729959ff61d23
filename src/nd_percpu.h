// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 10,
 * percpu.c. */
#ifndef ND_PERCPU_H
#define ND_PERCPU_H

/* ======================================================================
 * src/percpu.c: dense per-CPU areas (public API nd_percpu_*); test seams.
 * ====================================================================== */

/* nd_percpu_alloc and nd_percpu_uses_rseq after the library's init
 * (api_init.c runs it): the first call sets the areas up. */
nd_percpu_t _nd_percpu_alloc(size_t size, size_t align);
bool _nd_percpu_uses_rseq(void);
/* The memory node CPU cpu's area is bound to (recorded also under an
 * emulated topology, where no mbind is done); -1 if the CPU is not
 * possible or the areas are not set up yet. */
int _nd_percpu_area_node(int cpu);
/* Span of each CPU's area (1 << area_shift), and bytes committed in each
 * possible CPU's area (the same for all); 0 before the first allocation. */
size_t _nd_percpu_area_size(void);
size_t _nd_percpu_committed(void);

#endif /* ND_PERCPU_H */
