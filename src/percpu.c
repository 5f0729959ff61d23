/* Per-CPU areas: STUB until the per-CPU issue lands (helper replaces). */
#include <errno.h>
#include "internal.h"
nd_percpu_t nd_percpu_alloc(size_t size, size_t align) { (void)size; (void)align; errno = ENOSYS; return 0; }
void nd_percpu_free(nd_percpu_t h) { (void)h; }
void *nd_percpu_ptr(nd_percpu_t h, int cpu) { (void)h; (void)cpu; return NULL; }
void *nd_this_cpu_ptr(nd_percpu_t h) { (void)h; return NULL; }
void nd_percpu_add(nd_percpu_t h, int64_t v) { (void)h; (void)v; }
int64_t nd_percpu_sum(nd_percpu_t h) { (void)h; return 0; }
size_t nd_percpu_bytes(void) { return 0; }
int nd_percpu_uses_rseq(void) { return 0; }
