/* Statistics: STUB until the node-arena issue lands (helper replaces). */
#include "internal.h"
int _nd_stats_init(void) { return 0; }
void _nd_stats_count(int want, int got, int cpu_node, bool interleave) { (void)want; (void)got; (void)cpu_node; (void)interleave; }
void _nd_stats_in_use(int node, int64_t delta) { (void)node; (void)delta; }
void _nd_stats_committed(int node, int64_t delta) { (void)node; (void)delta; }
void _nd_stats_reserved(int node, int64_t delta) { (void)node; (void)delta; }
void _nd_stats_at_exit(void) {}
