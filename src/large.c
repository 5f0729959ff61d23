/* Large allocations: STUB until the slab issue lands (helper replaces). */
#include "internal.h"
void *_nd_large_alloc(size_t size, size_t align, const nd_policy_t *pol, int want_node) { (void)size; (void)align; (void)pol; (void)want_node; return NULL; }
void _nd_large_free(void *p, _nd_pagedesc_t *d) { (void)p; (void)d; }
size_t _nd_large_usable(const void *p, const _nd_pagedesc_t *d) { (void)p; (void)d; return 0; }
