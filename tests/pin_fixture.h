// SPDX-License-Identifier: MIT
/* Pins the calling thread (and the threads and children it makes after)
 * to the CPU it runs on. malloc's fast path keys the thread's heap on its
 * CPU: after a migration the next malloc misses the key and takes the slow
 * path (heap.c, malloc_slow). That path refilled the class directly,
 * without _nd_heap_refill's borrowed lists or spans, until it did the
 * keyed refill (test_slab_key_miss); a migration can still move the
 * thread to another node's heap, so a test whose premise is what the
 * refill of one malloc finds pins itself. */
#ifndef ND_PIN_FIXTURE_H
#define ND_PIN_FIXTURE_H

#include <stdint.h>

#include "internal.h"

static inline void pin_here(void)
{
	unsigned cpu = 0, node;
	uint64_t one[16] = { 0 };
	if (_nd_os_getcpu(&cpu, &node) != 0 || cpu >= 64 * 16)
		cpu = 0;
	one[cpu / 64] = (uint64_t)1 << (cpu % 64);
	_nd_os_sched_setaffinity(0, sizeof one, one);
}

#endif
