/* Policies: STUB until the node-arena issue lands (helper replaces). */
#include "internal.h"
int _nd_policy_init(void) { return 0; }
const nd_policy_t *_nd_policy_current(void) { return NULL; }
bool _nd_policy_is_local(void) { return true; }
int _nd_policy_first(_nd_policy_iter_t *it, const nd_policy_t *pol, int want_node) { (void)it; (void)pol; return want_node < 0 ? 0 : want_node; }
int _nd_policy_next(_nd_policy_iter_t *it) { (void)it; return -1; }
int _nd_policy_node_for_granule(const nd_policy_t *pol, uint64_t g) { (void)pol; (void)g; return 0; }
