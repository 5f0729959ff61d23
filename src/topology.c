/* Topology: STUB until the foundation issue lands (helper replaces). */
#include "internal.h"

ND_TLS int _nd_topo_cpu_override = -1;
static int one_node_fallback[1] = { 0 };
static const int *const fb[1] = { one_node_fallback };
static const int fb_len[1] = { 1 };
static const uint8_t one[1] = { 1 };
static const uint64_t memt[1] = { 0 };
static const uint8_t dist[1] = { 10 };
static const int cpu_node[1] = { 0 };
static const int tier0[1] = { 0 };
static _nd_topo_t topo = { 1, 1, false, one, one, one, memt, dist, cpu_node, cpu_node, fb, fb, fb_len, tier0 };

int _nd_topo_init(void) { return 0; }
const _nd_topo_t *_nd_topo(void) { return &topo; }
int _nd_topo_emulate(const char *spec, char *err, size_t errlen) { (void)spec; (void)err; (void)errlen; return -1; }
int _nd_topo_load_sysfs(const char *root, char *err, size_t errlen) { (void)root; (void)err; (void)errlen; return -1; }
uint64_t _nd_topo_node_free(int node) { (void)node; return UINT64_MAX; }
int _nd_topo_cpu_slow(void) { return 0; }
