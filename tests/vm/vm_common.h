// SPDX-License-Identifier: MIT
/*
 * Shared helpers of the in-VM tests (tests/vm/vm_*.c). They run as root in
 * a QEMU guest whose NUMA layout is described by the expected-topology file
 * run.sh writes (argv[1], default /etc/vmtest/topology), and ask the kernel
 * where pages really are: move_pages(2) with nodes = NULL after touching,
 * and /proc/self/pagemap for physical frame numbers.
 *
 * Output conventions (parsed by run.sh and report.sh):
 *   FAIL file:line: ...          a failed check (tests/check.h, stderr)
 *   VMTAB <table> key=value ...  a row of a report table
 * Exit status 0 = pass, 77 = not applicable to this topology, else fail.
 *
 * Bookkeeping memory of the tests comes from mmap, never from malloc: the
 * allocator under test (which also replaces malloc) is only measured.
 */
#ifndef ND_VM_COMMON_H
#define ND_VM_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nodalloc.h"
#include "check.h"

/* Helpers here are static; each test uses some of them. */
#define VM_FN static __attribute__((unused))

/* The library's layers land one by one: a public function that is not
 * there yet resolves to NULL (weak) and the test fails naming it (VM_NEED)
 * instead of the whole bed failing to link. */
#pragma weak nd_node_limit
#pragma weak nd_cpu_limit
#pragma weak nd_node_online
#pragma weak nd_node_has_memory
#pragma weak nd_node_has_cpus
#pragma weak nd_node_distance
#pragma weak nd_node_mem_total
#pragma weak nd_node_of_cpu
#pragma weak nd_mem_node_of_cpu
#pragma weak nd_fallback_list
#pragma weak nd_current_cpu
#pragma weak nd_nodemask_zero
#pragma weak nd_nodemask_set
#pragma weak nd_policy_parse
#pragma weak nd_set_policy
#pragma weak nd_malloc
#pragma weak nd_free
#pragma weak nd_malloc_onnode
#pragma weak nd_malloc_interleaved
#pragma weak nd_malloc_policy
#pragma weak nd_node_of
#pragma weak nd_stats_get

VM_FN int vm_need(int present, const char *name)
{
	CHECK(present, "libnodalloc does not provide %s (yet)", name);
	return present;
}
#define VM_NEED(fn) vm_need((fn) != NULL, #fn)

#define VM_PAGE 4096UL
#define VM_MAX_NODES 64
#define VM_MAX_CPUS 64
#define VM_MIB (1024UL * 1024UL)

/* ---- the expected topology (what QEMU was told) ------------------------ */

typedef struct vm_topo {
	char name[32];
	int smp;                          /* CPUs 0..smp-1 */
	int nnodes;                       /* nodes 0..nnodes-1 */
	long mem_mib[VM_MAX_NODES];       /* 0 = memoryless */
	int has_cpus[VM_MAX_NODES];
	int cpu_node[VM_MAX_CPUS];
	int dist[VM_MAX_NODES][VM_MAX_NODES]; /* row = from */
} vm_topo_t;

static const char *vm_topo_path = "/etc/vmtest/topology";

/* "0", "2-3", "-" (none) */
VM_FN void vm_parse_cpus(vm_topo_t *t, int node, const char *s)
{
	if (strcmp(s, "-") == 0)
		return;
	int a = 0, b = 0;
	if (sscanf(s, "%d-%d", &a, &b) != 2)
		b = a = atoi(s);
	for (int c = a; c <= b && c < VM_MAX_CPUS; c++) {
		t->cpu_node[c] = node;
		t->has_cpus[node] = 1;
	}
}

VM_FN int vm_topo_load(const char *path, vm_topo_t *t)
{
	memset(t, 0, sizeof(*t));
	for (int c = 0; c < VM_MAX_CPUS; c++)
		t->cpu_node[c] = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		char cpus[64];
		int id, n;
		long mem;
		if (sscanf(line, "name %31s", t->name) == 1)
			continue;
		if (sscanf(line, "smp %d", &t->smp) == 1)
			continue;
		if (sscanf(line, "node %d %ld %63s", &id, &mem, cpus) == 3 && id >= 0 && id < VM_MAX_NODES) {
			t->mem_mib[id] = mem;
			vm_parse_cpus(t, id, cpus);
			if (id + 1 > t->nnodes)
				t->nnodes = id + 1;
			continue;
		}
		if (sscanf(line, "dist %d%n", &id, &n) == 1 && id >= 0 && id < VM_MAX_NODES) {
			char *p = line + n;
			for (int j = 0; j < VM_MAX_NODES; j++) {
				char *end;
				long v = strtol(p, &end, 10);
				if (end == p)
					break;
				t->dist[id][j] = (int)v;
				p = end;
			}
		}
	}
	fclose(f);
	return t->nnodes > 0 && t->smp > 0 ? 0 : -1;
}

VM_FN int vm_has_mem(const vm_topo_t *t, int n) { return n >= 0 && n < t->nnodes && t->mem_mib[n] > 0; }

/* Nearest memory node of node n: itself if it has memory, else the memory
 * node at the smallest distance (topologies.sh keeps it unique; on a tie
 * the lowest id). This is what the kernel's numa_mem_id() gives. */
VM_FN int vm_expected_mem_node(const vm_topo_t *t, int n)
{
	if (vm_has_mem(t, n))
		return n;
	int best = -1;
	for (int m = 0; m < t->nnodes; m++)
		if (vm_has_mem(t, m) && (best < 0 || t->dist[n][m] < t->dist[n][best]))
			best = m;
	return best;
}

/* Memory nodes in id order; returns how many. */
VM_FN int vm_mem_nodes(const vm_topo_t *t, int *out)
{
	int k = 0;
	for (int n = 0; n < t->nnodes; n++)
		if (vm_has_mem(t, n))
			out[k++] = n;
	return k;
}

/* The last memory node that is not CPU 0's memory node (the small node a
 * fill targets: vm_strict, vm_pressure); -1 if there is none. */
VM_FN int vm_fill_target(const vm_topo_t *t)
{
	int mem0 = vm_expected_mem_node(t, t->cpu_node[0]);
	int M[VM_MAX_NODES], nm = vm_mem_nodes(t, M);
	for (int i = nm - 1; i >= 0; i--)
		if (M[i] != mem0)
			return M[i];
	return -1;
}

/* ---- setup -------------------------------------------------------------- */

static vm_topo_t vm_topo;

/* Loads the expected topology; 0 or -1 (after a failed CHECK). */
VM_FN int vm_begin(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
		vm_topo_path = argv[1];
	int r = vm_topo_load(vm_topo_path, &vm_topo);
	CHECK(r == 0, "cannot read the expected topology %s", vm_topo_path);
	return r;
}

/* Memory for the tests' own bookkeeping: mmap, zeroed, never the allocator
 * under test. */
VM_FN void *vm_buf(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("vm: mmap");
		exit(2);
	}
	return p;
}
VM_FN void vm_unbuf(void *p, size_t len) { munmap(p, len ? len : 1); }

/* Pin the calling thread to one CPU; 0 if it now runs there. */
VM_FN int vm_pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) != 0)
		return -1;
	return sched_getcpu() == cpu ? 0 : -1;
}

/* Run fn(arg) in a new thread that starts pinned to cpu; returns fn's value. */
VM_FN void *vm_run_on(int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_attr_setaffinity_np(&a, sizeof(s), &s);
	pthread_t th;
	void *ret = NULL;
	if (pthread_create(&th, &a, fn, arg) == 0)
		pthread_join(th, &ret);
	else
		CHECK(0, "pthread_create on cpu %d", cpu);
	pthread_attr_destroy(&a);
	return ret;
}

/* ---- where pages are ---------------------------------------------------- */

/* Write every page of [p, p+len) so the kernel allocates it. */
VM_FN void vm_touch(void *p, size_t len)
{
	volatile char *c = p;
	if (!len)
		return;
	for (size_t off = 0; off < len; off += VM_PAGE)
		c[off] = (char)(off >> 12);
	c[len - 1] = 1;
}

/* The kernel's node of each page (status[i] = node or -errno). 0 or -1. */
VM_FN int vm_pages_status(void **pages, size_t n, int *status)
{
	for (size_t i = 0; i < n; i += 4096) {
		size_t k = n - i < 4096 ? n - i : 4096;
		if (syscall(SYS_move_pages, 0, k, pages + i, NULL, status + i, 0) != 0) {
			perror("vm: move_pages");
			return -1;
		}
	}
	return 0;
}

/* Per-node page counts. other = pages not present or errors. */
typedef struct vm_hist {
	long node[VM_MAX_NODES];
	long other;
	long total;
} vm_hist_t;
#define VM_HIST_INIT { { 0 }, 0, 0 }

VM_FN void vm_hist_add_status(vm_hist_t *h, const int *status, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (status[i] >= 0 && status[i] < VM_MAX_NODES)
			h->node[status[i]]++;
		else
			h->other++;
		h->total++;
	}
}

/* Kernel nodes of the pages covering [p, p+len) (touch first), added to h.
 * If status_out is given it receives one entry per page (caller sized). */
VM_FN void vm_hist_range(vm_hist_t *h, const void *p, size_t len, int *status_out)
{
	if (!p || !len)
		return;
	uintptr_t a = (uintptr_t)p & ~(VM_PAGE - 1), e = ((uintptr_t)p + len + VM_PAGE - 1) & ~(VM_PAGE - 1);
	size_t n = (e - a) / VM_PAGE;
	void **pages = vm_buf(n * sizeof(void *));
	int *st = status_out ? status_out : vm_buf(n * sizeof(int));
	for (size_t i = 0; i < n; i++)
		pages[i] = (void *)(a + i * VM_PAGE);
	if (vm_pages_status(pages, n, st) == 0)
		vm_hist_add_status(h, st, n);
	else
		h->other += n, h->total += n;
	vm_unbuf(pages, n * sizeof(void *));
	if (!status_out)
		vm_unbuf(st, n * sizeof(int));
}

VM_FN int vm_cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* Kernel nodes of the distinct pages holding n objects of size sz. */
VM_FN void vm_hist_objs(vm_hist_t *h, void **objs, size_t n, size_t sz)
{
	size_t cap = n * 2 + 2, k = 0;
	uintptr_t *pg = vm_buf(cap * sizeof(uintptr_t));
	for (size_t i = 0; i < n; i++) {
		if (!objs[i])
			continue;
		pg[k++] = (uintptr_t)objs[i] & ~(VM_PAGE - 1);
		uintptr_t last = ((uintptr_t)objs[i] + sz - 1) & ~(VM_PAGE - 1);
		if (last != pg[k - 1])
			pg[k++] = last;
	}
	qsort(pg, k, sizeof(*pg), vm_cmp_ptr);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || pg[i] != pg[u - 1])
			pg[u++] = pg[i];
	int *st = vm_buf(u * sizeof(int) + 1);
	if (vm_pages_status((void **)pg, u, st) == 0)
		vm_hist_add_status(h, st, u);
	else
		h->other += u, h->total += u;
	vm_unbuf(st, u * sizeof(int) + 1);
	vm_unbuf(pg, cap * sizeof(uintptr_t));
}

/* "0:256 1:3 ?:2" */
VM_FN const char *vm_hist_str(const vm_hist_t *h, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int n = 0; n < VM_MAX_NODES && o < len; n++)
		if (h->node[n])
			o += snprintf(buf + o, len - o, "%s%d:%ld", o ? "," : "", n, h->node[n]);
	if (h->other && o < len)
		o += snprintf(buf + o, len - o, "%s?:%ld", o ? "," : "", h->other);
	if (o == 0)
		snprintf(buf, len, "none");
	return buf;
}

/* Physical frame numbers of npages pages from p (0 = not present). 0/-1. */
VM_FN int vm_pfns(const void *p, size_t npages, uint64_t *pfn)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	off_t off = (off_t)((uintptr_t)p / VM_PAGE) * 8;
	ssize_t want = (ssize_t)(npages * 8), got = pread(fd, pfn, npages * 8, off);
	close(fd);
	if (got != want)
		return -1;
	for (size_t i = 0; i < npages; i++)
		pfn[i] = (pfn[i] >> 63) & 1 ? pfn[i] & ((1ULL << 55) - 1) : 0;
	return 0;
}

/* ---- kernel counters ---------------------------------------------------- */

enum { VM_NS_HIT, VM_NS_MISS, VM_NS_FOREIGN, VM_NS_INTERLEAVE, VM_NS_LOCAL, VM_NS_OTHER, VM_NS_N };
static const char *const vm_ns_names[VM_NS_N] = { "numa_hit", "numa_miss", "numa_foreign",
						  "interleave_hit", "local_node", "other_node" };

/* /sys/devices/system/node/nodeN/numastat; 0 or -1. */
VM_FN int vm_numastat(int node, uint64_t out[VM_NS_N])
{
	char path[128], name[64];
	unsigned long long v;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/numastat", node);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	memset(out, 0, VM_NS_N * sizeof(uint64_t));
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		for (int i = 0; i < VM_NS_N; i++)
			if (strcmp(name, vm_ns_names[i]) == 0)
				out[i] = v;
	fclose(f);
	return 0;
}

/* A field of /sys/devices/system/node/nodeN/meminfo in bytes, or 0. */
/* What node can still give by the kernel's figures, the rule of
 * docs/arenas.md "Headroom" (the tests' own reading of /proc/zoneinfo,
 * independent of the library's): per zone free + file/2 - (low, or high
 * with above_high, + boost + lowmem reserve of movable allocations), at
 * least 0. The watermark boost (after a fragmentation event, up to 1.5x
 * high until kswapd runs, which a loaded host delays) counts as taken, as
 * in the kernel's checks. Pages on the CPUs' lists are not in "free":
 * after the earlier tests they hold 8-53 MiB of each node with a CPU of
 * the sixteen-node bed. Bytes. */
VM_FN uint64_t vm_zone_headroom(int node, int above_high)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return 0;
	char line[512];
	int cur = -1, open_zone = 0;
	uint64_t room = 0, fr = 0, wm = 0, bo = 0, pr = 0, fi = 0;
#define VM_ZONE_CLOSE()                                                              \
	do {                                                                         \
		if (open_zone && cur == node && fr + fi / 2 > wm + bo + pr)          \
			room += (fr + fi / 2 - wm - bo - pr) * VM_PAGE;              \
		fr = wm = bo = pr = fi = 0;                                          \
	} while (0)
	while (fgets(line, sizeof line, f)) {
		int nd;
		char zn[32];
		unsigned long long v;
		if (sscanf(line, "Node %d, zone %31s", &nd, zn) == 2) {
			VM_ZONE_CLOSE();
			cur = nd;
			open_zone = 1;
		} else if (sscanf(line, " pages free %llu", &v) == 1) {
			fr = v;
		} else if (sscanf(line, above_high ? " high %llu" : " low %llu", &v) == 1) {
			wm = v;
		} else if (sscanf(line, " boost %llu", &v) == 1) {
			bo = v;
		} else if (sscanf(line, " nr_zone_inactive_file %llu", &v) == 1 ||
			   sscanf(line, " nr_zone_active_file %llu", &v) == 1) {
			fi += v;
		} else if (strstr(line, "protection:")) {
			char *c = strrchr(line, ',');
			pr = c ? strtoull(c + 1, NULL, 10) : 0;
		}
	}
	VM_ZONE_CLOSE();
#undef VM_ZONE_CLOSE
	fclose(f);
	return room;
}

VM_FN uint64_t vm_node_meminfo(int node, const char *field)
{
	char path[128], line[256], key[64];
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	snprintf(key, sizeof(key), " %s:", field);
	FILE *f = fopen(path, "r");
	uint64_t v = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *k = strstr(line, key);
		if (k) {
			v = strtoull(k + strlen(key), NULL, 10) * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

/* Read a small sysfs file into buf (trailing newline removed). */
VM_FN const char *vm_read_str(const char *path, char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return buf;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
	return buf;
}

/* A policy from the grammar, failing the test on a parse error. */
VM_FN int vm_policy(const char *s, nd_policy_t *p)
{
	char err[256] = "";
	memset(p, 0, sizeof(*p));
	int r = nd_policy_parse(s, p, err, sizeof(err));
	CHECK(r == 0, "nd_policy_parse(\"%s\"): %s", s, err);
	return r;
}

#endif
