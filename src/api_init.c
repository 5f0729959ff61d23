// SPDX-License-Identifier: MIT
/*
 * Public calls of the lower layers that run the library's init first
 * (_nd_ensure_init, malloc.c): the topology calls (nd_node_*, nd_cpu_*,
 * nd_fallback_list, nd_topology_emulate, nd_emulate_cpu), per-CPU setup
 * and table allocation. They sit in the top layer so that the layers below
 * never call up (src/README.md): one init order, top-down.
 */
#include <errno.h>

#include "internal.h"


static const _nd_topo_t *pt(void)
{
	_nd_ensure_init();
	return _nd_topo();
}

int nd_node_limit(void) { return pt()->node_limit; }
int nd_cpu_limit(void) { return pt()->cpu_limit; }

int nd_node_online(int node)
{
	const _nd_topo_t *t = pt();
	return _nd_topo_valid_node(t, node);
}

int nd_node_has_memory(int node)
{
	const _nd_topo_t *t = pt();
	return _nd_topo_valid_node(t, node) && t->has_mem[node];
}

int nd_node_has_cpus(int node)
{
	const _nd_topo_t *t = pt();
	return _nd_topo_valid_node(t, node) && t->has_cpu[node];
}

int nd_node_distance(int from, int to)
{
	const _nd_topo_t *t = pt();
	if (!_nd_topo_valid_node(t, from) || !_nd_topo_valid_node(t, to))
		return -1;
	return t->distance[(size_t)from * (size_t)t->node_limit + (size_t)to];
}

uint64_t nd_node_mem_total(int node)
{
	const _nd_topo_t *t = pt();
	return _nd_topo_valid_node(t, node) && t->has_mem[node] ? t->mem_total[node] : 0;
}

int nd_node_of_cpu(int cpu)
{
	const _nd_topo_t *t = pt();
	return cpu >= 0 && cpu < t->cpu_limit ? t->cpu_node[cpu] : -1;
}

int nd_mem_node_of_cpu(int cpu)
{
	const _nd_topo_t *t = pt();
	return cpu >= 0 && cpu < t->cpu_limit ? t->cpu_mem_node[cpu] : -1;
}

int nd_fallback_list(int node, int tier, int *out, int max)
{
	const _nd_topo_t *t = pt();
	if (!_nd_topo_valid_node(t, node) || max < 0 || (max > 0 && !out))
		return -1;
	const int *l = tier ? t->fallback_tier[node] : t->fallback[node];
	int n = t->fallback_len[node] < max ? t->fallback_len[node] : max;
	for (int i = 0; i < n; i++)
		out[i] = l[i];
	return n;
}

int nd_current_cpu(void)
{
	_nd_ensure_init();
	return _nd_topo_cpu();
}

int nd_topology_emulate(const char *spec, char *err, size_t errlen)
{
	_nd_ensure_init();
	if (err && errlen)
		return _nd_topo_emulate(spec, err, errlen);
	/* No buffer to explain in: errno, and the line under NODALLOC_VERBOSE. */
	char buf[300];
	int r = _nd_topo_emulate(spec, buf, sizeof buf);
	if (r) {
		_nd_msg_api("nd_topology_emulate: %s", buf);
		errno = EINVAL;
	}
	return r;
}

void nd_emulate_cpu(int cpu)
{
	const _nd_topo_t *t = pt();
	_nd_thread_t *th = _nd_thread_self();
	if (!th)
		return;
	if (cpu < 0) {
		th->cpu_override = -1;
		_nd_thread_invalidate(th); /* the slab layer re-reads the CPU */
		return;
	}
	if (!t->emulated) {
		_nd_msg_api("nd_emulate_cpu(%d) ignored: the topology is not emulated", cpu);
		return;
	}
	if (cpu >= t->cpu_limit || t->cpu_node[cpu] < 0) {
		_nd_msg_api("nd_emulate_cpu(%d) ignored: no such CPU in the emulated topology", cpu);
		return;
	}
	th->cpu_override = cpu;
	_nd_thread_invalidate(th);
}


/* ---- per-CPU areas and tables: their setup needs options and topology -- */

nd_percpu_t nd_percpu_alloc(size_t size, size_t align)
{
	/* The areas need only options and topology: they work even if a later
	 * init step (the page reservation) failed. */
	_nd_ensure_init();
	return _nd_percpu_alloc(size, align);
}

int nd_percpu_uses_rseq(void)
{
	_nd_ensure_init();
	return _nd_percpu_uses_rseq();
}

int nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out)
{
	if (d && out && !_nd_ensure_init()) {
		__builtin_memset(out, 0, sizeof *out);
		errno = ENOMEM;
		return -1;
	}
	return _nd_table_alloc(d, out);
}

/* nd_stats_classes: the slab layer's figures in the public layout. */
int nd_stats_classes(nd_class_stats_t *out, int max)
{
	if (max < 0 || (max > 0 && !out)) {
		errno = EINVAL;
		return -1;
	}
	_nd_slab_class_stats_t all[ND_SLAB_CLASSES];
	int n = _nd_ensure_init() ? _nd_slab_class_stats(all, ND_SLAB_CLASSES) : 0;
	for (int c = 0; c < n && c < max; c++)
		out[c] = (nd_class_stats_t){ .size = all[c].size,
					     .slabs = all[c].slabs,
					     .slab_bytes = all[c].slab_bytes,
					     .capacity = all[c].capacity,
					     .objects = all[c].objects,
					     .remote_frees = all[c].remote_frees,
					     .refills = all[c].refills };
	return n;
}
