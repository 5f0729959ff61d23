/* Node arenas: STUB until the node-arena issue lands (helper replaces). */
#include "internal.h"
int _nd_page_init(void) { return 0; }
void *_nd_page_alloc_exact(int node, size_t npages, size_t align_pages) { (void)node; (void)npages; (void)align_pages; return NULL; }
void *_nd_page_alloc(size_t npages, size_t align_pages, const nd_policy_t *pol, int want_node, int *got_node) { (void)npages; (void)align_pages; (void)pol; (void)want_node; (void)got_node; return NULL; }
void *_nd_page_alloc_spread(size_t npages, const nd_policy_t *pol) { (void)npages; (void)pol; return NULL; }
int _nd_page_free(void *p) { (void)p; return -1; }
_nd_pagedesc_t *_nd_page_desc(const void *p) { (void)p; return NULL; }
int _nd_page_node_of(const void *p) { (void)p; return -1; }
void _nd_page_fork_prepare(void) {}
void _nd_page_fork_parent(void) {}
void _nd_page_fork_child(void) {}
