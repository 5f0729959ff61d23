/*
 * Top layer: library init, the public allocation API and the malloc
 * override. BOOTSTRAP: until the slab issue lands this forwards to the C
 * library's own allocator (__libc_malloc), so everything links and runs.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

volatile int _nd_initialized;
static _nd_lock_t init_lock = ND_LOCK_INIT;

bool _nd_init(void)
{
	_nd_lock(&init_lock);
	if (_nd_initialized) {
		_nd_unlock(&init_lock);
		return _nd_initialized > 0;
	}
	_nd_opt_init();
	bool ok = _nd_topo_init() == 0 && _nd_stats_init() == 0 && _nd_policy_init() == 0 &&
		  _nd_page_init() == 0 && _nd_slab_init() == 0;
	__atomic_store_n(&_nd_initialized, ok ? 1 : -1, __ATOMIC_RELEASE);
	_nd_unlock(&init_lock);
	return ok;
}

__attribute__((constructor)) static void nd_constructor(void)
{
	_nd_ensure_init();
}

__attribute__((destructor)) static void nd_destructor(void)
{
	_nd_stats_at_exit();
}

void *nd_malloc(size_t size) { return __libc_malloc(size); }
void *nd_calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *nd_realloc(void *p, size_t size) { return __libc_realloc(p, size); }
void nd_free(void *p) { __libc_free(p); }
void *nd_aligned_alloc(size_t align, size_t size) { return __libc_memalign(align, size); }
size_t nd_usable_size(const void *p) { (void)p; return 0; }
void *nd_malloc_onnode(size_t size, int node) { (void)node; return nd_malloc(size); }
void *nd_malloc_local(size_t size) { return nd_malloc(size); }
void *nd_malloc_interleaved(size_t size, const nd_nodemask_t *nodes, size_t granularity) { (void)nodes; (void)granularity; return nd_malloc(size); }
void *nd_malloc_policy(size_t size, const nd_policy_t *p) { (void)p; return nd_malloc(size); }
int nd_node_of(const void *p) { return _nd_page_node_of(p); }
