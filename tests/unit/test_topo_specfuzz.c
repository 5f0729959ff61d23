// SPDX-License-Identifier: MIT
/* Random specs from the grammar's pieces (deterministic seed): a rejected
 * spec always has a "topology spec: ... at column N" message with N inside
 * the spec; an accepted one always yields consistent tables: every online
 * node's fallback list holds each memory node exactly once (no node
 * without memory), the local node first when it has memory, and each
 * CPU's memory node is the head of its node's list. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *pieces[] = {
	"0", "1", "2", "3", "5", "7", ":", ": ", ";", "; ", " ", ",", "-", ">", "=", "/",
	"cpus=", "ncpus=", "mem=", "node ", "distance: ", "dist=", "0-1", "2-3", "1G", "0",
	"512M", "x", "10", "20", "15", "30", "255", "256", "9", "0-1=20", "1>0=30", "2-3=25",
};

static void check_consistent(const _nd_topo_t *t, const char *spec)
{
	int L = t->node_limit;
	for (int n = 0; n < L; n++) {
		if (!t->online[n]) {
			CHECK_EQ(t->fallback_len[n], 0);
			continue;
		}
		int mem_nodes = 0;
		for (int m = 0; m < L; m++)
			mem_nodes += t->has_mem[m] != 0;
		CHECK(t->fallback_len[n] == mem_nodes, "spec '%s' node %d: %d of %d", spec, n, t->fallback_len[n], mem_nodes);
		for (int order = 0; order < 2; order++) {
			const int *l = order ? t->fallback_tier[n] : t->fallback[n];
			uint8_t seen[ND_MAX_NODES] = { 0 };
			for (int i = 0; i < t->fallback_len[n]; i++) {
				int m = l[i];
				CHECK(m >= 0 && m < L && t->has_mem[m] && !seen[m], "spec '%s' node %d entry %d = %d", spec, n, i, m);
				if (m >= 0 && m < L)
					seen[m] = 1;
			}
			if (t->has_mem[n])
				CHECK(l[0] == n, "spec '%s': node %d not first in its own list", spec, n);
			/* tier order: tiers never decrease after the local node */
			for (int i = 2; order && i < t->fallback_len[n]; i++)
				CHECK(t->tier[l[i - 1]] <= t->tier[l[i]] || (i - 1 == 0 && l[0] == n), "spec '%s' tier order", spec);
		}
	}
	for (int c = 0; c < t->cpu_limit; c++)
		if (t->cpu_node[c] >= 0)
			CHECK(t->cpu_mem_node[c] == t->fallback[t->cpu_node[c]][0], "spec '%s' cpu %d", spec, c);
}

int main(void)
{
	char spec[256], err[300];
	int accepted = 0, rejected = 0;
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = 0;
		spec[0] = '\0';
		if (iter % 2 == 0) {
			/* A structured, mostly valid spec: random sparse node
			 * ids, CPU-less and memoryless nodes, asymmetric
			 * distances; a third of them get one random piece. */
			int ids[6], nn = 1 + (int)rnd(6);
			for (int k = 0; k < nn; k++) {
				ids[k] = k * 3 + (int)rnd(3);
				const char *mem = rnd(3) == 0 ? "0" : rnd(2) ? "1G" : "3G";
				if (rnd(4))
					len += (size_t)snprintf(spec + len, sizeof spec - len, "%d: ncpus=%u mem=%s;", ids[k], 1 + rnd(3), mem);
				else
					len += (size_t)snprintf(spec + len, sizeof spec - len, "%d: mem=%s;", ids[k], mem);
			}
			len += (size_t)snprintf(spec + len, sizeof spec - len, "distance:");
			for (int k = 0; k < 4 && nn > 1 && len < 200; k++) {
				int a = ids[rnd((unsigned)nn)], b = ids[rnd((unsigned)nn)];
				if (a != b)
					len += (size_t)snprintf(spec + len, sizeof spec - len, " %d%c%d=%u", a, rnd(2) ? '>' : '-', b, 11 + rnd(50));
			}
			if (rnd(3) == 0) {
				const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
				size_t at = rnd((unsigned)len + 1), pl = strlen(p);
				if (len + pl + 1 < sizeof spec) {
					memmove(spec + at + pl, spec + at, len - at + 1);
					memcpy(spec + at, p, pl);
					len += pl;
				}
			}
		} else {
		/* Half start from a valid prefix so that deeper parts are hit. */
		if (rnd(2)) {
			const char *base = rnd(2) ? "0: cpus=0-1 mem=1G; 1: ncpus=2 mem=0; 2: mem=2G;"
						  : "1: cpus=0 mem=1G; 3: cpus=1 mem=1G; distance: ";
			len = strlen(base);
			memcpy(spec, base, len + 1);
		}
		int n = 1 + (int)rnd(12);
		for (int k = 0; k < n; k++) {
			const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
			size_t pl = strlen(p);
			if (len + pl + 1 >= sizeof spec)
				break;
			memcpy(spec + len, p, pl + 1);
			len += pl;
		}
		}
		err[0] = '\0';
		const _nd_topo_t *t = _nd_topo_build_spec(spec, err, sizeof err);
		if (t) {
			accepted++;
			check_consistent(t, spec);
			_nd_topo_discard(t);
			continue;
		}
		rejected++;
		CHECK(strncmp(err, "topology spec: ", 15) == 0, "spec '%s': %s", spec, err);
		const char *col = strstr(err, " at column ");
		int c = col ? atoi(col + 11) : -1;
		/* "no node has memory" names no column: it is about the whole. */
		if (!strstr(err, "no node has memory"))
			CHECK(c >= 1 && c <= (int)len + 1, "spec '%s': %s", spec, err);
	}
	printf("accepted %d, rejected %d\n", accepted, rejected);
	CHECK(accepted > 100, "too few valid specs generated: %d", accepted);
	CHECK(rejected > 100);
	return CHECK_DONE();
}
