// SPDX-License-Identifier: MIT
/*
 * `nodactl maps PID`: per-node memory of any process, nodalloc or not,
 * from /proc/PID/numa_maps: numastat -p's table (Huge, Heap, Stack,
 * Private; MB per node and Total, the same categories and layout), then
 * the same memory by policy (the kernel's policy of each mapping: default,
 * bind:0, interleave:0-1, ...), which shows what nodactl's kernel policy
 * and nodalloc's bound arenas did.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "nodactl.h"

#define MAXN 1024
#define MAXPOL 32
enum { K_HUGE, K_HEAP, K_STACK, K_PRIVATE, K__N };
static const char *const kind_names[K__N] = { "Huge", "Heap", "Stack", "Private" };

typedef struct usage {
	double kind[K__N][MAXN]; /* MB */
	const char *pol[MAXPOL]; /* whole (an interleave over many nodes is long) */
	double by_pol[MAXPOL][MAXN];
	int npol;
	unsigned char used[MAXN];
	int top; /* highest node seen + 1 */
} usage_t;

static usage_t u;

static int policy_index(const char *p)
{
	for (int i = 0; i < u.npol; i++)
		if (strcmp(u.pol[i], p) == 0)
			return i;
	if (u.npol == MAXPOL - 1) { /* the rest together, labelled so */
		u.pol[u.npol] = "(other policies)";
		return u.npol++;
	}
	if (u.npol == MAXPOL)
		return MAXPOL - 1;
	u.pol[u.npol] = strdup(p);
	if (!u.pol[u.npol]) {
		fprintf(stderr, "nodactl: maps: out of memory\n");
		exit(1);
	}
	return u.npol++;
}

/* One numa_maps line: "addr policy words... N0=pages ... kernelpagesize_kB=4". */
static void add_line(char *line)
{
	char *save = NULL;
	char *addr = strtok_r(line, " \n", &save);
	char *pol = strtok_r(NULL, " \n", &save);
	if (!addr || !pol)
		return;
	/* numastat -p: the first category whose name appears in the line */
	int kind = K_PRIVATE;
	long pages[MAXN];
	int nodes[MAXN], n = 0;
	double kb = 4;
	bool huge = false, heap = false, stack = false;
	for (char *w; (w = strtok_r(NULL, " \n", &save));) {
		int node;
		long c;
		if (sscanf(w, "N%d=%ld", &node, &c) == 2 && node >= 0 && node < MAXN && n < MAXN) {
			nodes[n] = node;
			pages[n++] = c;
		} else if (strncmp(w, "kernelpagesize_kB=", 18) == 0) {
			kb = atof(w + 18);
		} else if (strstr(w, "huge")) {
			huge = true;
		} else if (strcmp(w, "heap") == 0) {
			heap = true;
		} else if (strcmp(w, "stack") == 0) {
			stack = true;
		}
	}
	if (strstr(pol, "huge"))
		huge = true;
	kind = huge ? K_HUGE : heap ? K_HEAP : stack ? K_STACK : K_PRIVATE;
	int pi = policy_index(pol);
	for (int i = 0; i < n; i++) {
		double mb = (double)pages[i] * kb / 1024.0;
		u.kind[kind][nodes[i]] += mb;
		u.by_pol[pi][nodes[i]] += mb;
		u.used[nodes[i]] = 1;
		if (nodes[i] + 1 > u.top)
			u.top = nodes[i] + 1;
	}
}

/* Columns: the machine's nodes with memory, and any node that has pages. */
static bool column(int n, const _nd_topo_t *t)
{
	return u.used[n] || (n < t->node_limit && t->online[n] && t->has_mem[n]);
}

static void row(const char *label, const double *v, int cols, const _nd_topo_t *t)
{
	double total = 0;
	printf("%-16s", label);
	for (int n = 0; n < cols; n++)
		if (column(n, t)) {
			printf(" %16.2f", v[n]);
			total += v[n];
		}
	printf(" %15.2f\n", total);
}

/* numastat's rule lines: two spaces before the first column's dashes */
static void dashes(const char *label, int cols, const _nd_topo_t *t)
{
	printf("%-16s", label);
	bool first = true;
	for (int n = 0; n < cols; n++)
		if (column(n, t)) {
			printf("%s---------------", first ? "  " : " ");
			first = false;
		}
	printf(" ---------------\n");
}

int nodactl_maps(int argc, char **argv)
{
	if (argc != 3 || argv[2][0] == '-') {
		fprintf(stderr, "nodactl: maps: usage: nodactl maps PID\n");
		return 1;
	}
	char *end;
	errno = 0;
	long pid = strtol(argv[2], &end, 10);
	if (end == argv[2] || *end || errno || pid <= 0 || pid > 0x7fffffff) {
		fprintf(stderr, "nodactl: maps: expects a process id, got '%s'\n", argv[2]);
		return 1;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/numa_maps", pid);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "nodactl: maps: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (no such process, or a kernel without NUMA)" : "");
		return 1;
	}
	/* whole lines: a mapped file's path and a count per node can pass
	 * any fixed size, and a cut line's rest would count as a mapping */
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0)
		add_line(line);
	free(line);
	fclose(f);
	_nd_ensure_init();
	const _nd_topo_t *t = _nd_topo();
	int cols = u.top > t->node_limit ? u.top : t->node_limit;
	if (cols > MAXN)
		cols = MAXN;
	_nd_stats_label_t lb;
	nodactl_label_of((int)pid, &lb);

	/* numastat -p's table */
	printf("\nPer-node process memory usage (in MBs) for PID %ld (%s)\n", pid, lb.program);
	printf("%-16s", "");
	for (int n = 0; n < cols; n++)
		if (column(n, t)) {
			char name[16];
			snprintf(name, sizeof name, "Node %d", n);
			printf(" %16s", name);
		}
	printf(" %15s\n", "Total");
	dashes("", cols, t);
	double total[MAXN] = { 0 };
	for (int k = 0; k < K__N; k++) {
		row(kind_names[k], u.kind[k], cols, t);
		for (int n = 0; n < cols; n++)
			total[n] += u.kind[k][n];
	}
	dashes("----------------", cols, t);
	row("Total", total, cols, t);

	/* nodactl's part: the same memory by the kernel policy of its mapping */
	printf("\nBy policy (MB per node)\n");
	for (int i = 0; i < u.npol; i++)
		row(u.pol[i], u.by_pol[i], cols, t);
	return 0;
}
