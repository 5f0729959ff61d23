/* Slab caches: STUB until the slab issue lands (helper replaces). */
#include "internal.h"
int _nd_slab_init(void) { return 0; }
void *_nd_slab_alloc(size_t size, int node) { (void)size; (void)node; return NULL; }
void _nd_slab_free(void *p, _nd_pagedesc_t *d) { (void)p; (void)d; }
size_t _nd_slab_usable(const void *p, const _nd_pagedesc_t *d) { (void)p; (void)d; return 0; }
void _nd_slab_fork_prepare(void) {}
void _nd_slab_fork_parent(void) {}
void _nd_slab_fork_child(void) {}
