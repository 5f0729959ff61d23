// SPDX-License-Identifier: MIT
/* Every kind of bad topology spec is rejected with a message naming the
 * node, the field and the column; nothing is half-applied (the live
 * topology stays the same object with the same tables). */
#include <string.h>

#include "check.h"
#include "internal.h"

static const struct {
	const char *spec;
	const char *want; /* substring of the message */
} bad[] = {
	{ "", "topology spec: no nodes" },
	{ " ; ;", "topology spec: no nodes" },
	{ "0: cpus=0-1", "topology spec: node 0: mem: missing" },
	{ "0: cpus=0-1 mem=1G; 0: cpus=2 mem=1G", "node 0: defined twice at column 21" },
	{ "0: cpus=0-1 mem=1G; 1: cpus=1 mem=1G", "node 1: cpus: CPU 1 is already on another node at column 29" },
	{ "0: cpus=3-1 mem=1G", "node 0: cpus: range runs backwards in '3-1'" },
	{ "0: cpus=0-99999 mem=1G", "node 0: cpus: number out of range" },
	{ "0: cpus=a mem=1G", "node 0: cpus: expected a number in 'a'" },
	{ "0: cpus=0-3x mem=1G", "node 0: cpus: unexpected 'x' after the value at column 12" },
	{ "0: cpus=0 mem=1G size=3", "node 0: unknown field 'size=3' (expected cpus=, ncpus= or mem=) at column 18" },
	{ "0: cpus=0 mem=1G mem=2G", "node 0: mem: given twice at column 18" },
	{ "0: cpus=0 mem=1Gx", "node 0: mem: bad size '1Gx' at column 15" },
	{ "0: cpus=0 mem=", "node 0: mem: bad size ''" },
	{ "0: cpus=0 mem=-1G", "node 0: mem: bad size '-1G'" },
	{ "0: ncpus=0 mem=1G", "node 0: ncpus: bad count '0'" },
	{ "0: cpus=0 ncpus=2 mem=1G", "node 0: ncpus: given twice (or with cpus=)" },
	{ "1024: cpus=0 mem=1G", "topology spec: node id out of range (0-1023) at column 1" },
	{ "3-1: cpus=0 mem=1G", "node range 3-1 runs backwards" },
	{ "x: mem=1G", "expected a node id, 'node N:' or 'distance:', got 'x:'" },
	{ "0 cpus=0 mem=1G", "expected ':' after the node id at column 3" },
	{ "0: cpus=0 mem=0", "no node has memory" },
	{ "0: mem=1G", "no node has CPUs" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 0-2=20", "distance: node 2 is not defined at column 49" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 1>7=20", "distance: node 7 is not defined at column 49" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 1>1023=20", "distance: node 1023 is not defined" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 0-1=5", "distance: 0 to 1: 5 out of range (remote distances are 11-255)" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 0-1=256", "distance: 0 to 1: 256 out of range" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 1-1=12", "distance: node 1 to itself must be 10, not 12" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 0=1=20", "distance: expected '-' (both ways) or '>' (one way)" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 0-1", "distance: pair '0-1' needs '=DISTANCE' (e.g. 0-1=20) at column 47" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 0-1=", "distance: expected a distance, got ''" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 10 20 / 20", "distance: row 2 has 1 columns, expected 2 (one per node)" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 10 20 / 20 10 / 10 20", "distance: more rows than the 2 nodes" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 10 20 30 / 20 10", "distance: row 1 has more than 2 columns" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 10 20", "distance: 1 rows, expected 2 (one per node)" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G; distance: 12 20 / 20 10", "distance: node 0 to itself must be 10, not 12" },
	{ "0: cpus=0 mem=1G; distance 0-0=10", "distance: expected ':' after 'distance'" },
	{ "0: cpus=0 mem=1G; 1: cpus=1 mem=1G junk", "node 1: unknown field 'junk'" },
	{ "0: cpus=0 mem=1G;; 2: cpus=1 mem=1G; distance: 0-2=20 extra", "distance: expected a node id, got 'extra'" },
};

int main(void)
{
	char err[256];
	/* Install a known-good one first (before any stdio: see
	 * test_topo_emulate.c); every bad spec must leave it untouched. */
	int rc = nd_topology_emulate("0: cpus=0-1 mem=1G; 1: cpus=2-3 mem=0", err, sizeof err);
	/* Nothing has allocated yet (the binary runs on nodalloc's malloc,
	 * whose first page freezes the topology), so the swap must work and
	 * every check below runs. */
	CHECK(rc == 0, "emulate: %s", err);
	CHECK(!_nd_topo_frozen());
	bool can_swap = rc == 0;
	const _nd_topo_t *before = _nd_topo();
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		const _nd_topo_t *t = _nd_topo_build_spec(bad[i].spec, err, sizeof err);
		CHECK(t == NULL, "spec '%s' was accepted", bad[i].spec);
		CHECK(strstr(err, bad[i].want) != NULL, "spec '%s': got \"%s\", want \"%s\"", bad[i].spec, err, bad[i].want);
		if (can_swap && !_nd_topo_frozen()) {
			char err2[256] = "";
			CHECK_EQ(_nd_topo_emulate(bad[i].spec, err2, sizeof err2), -1);
			CHECK_STR(err2, err);
			CHECK(_nd_topo() == before, "spec '%s' replaced the topology", bad[i].spec);
		}
	}
	/* The live tables are the good spec's. */
	if (can_swap) {
		const _nd_topo_t *t = _nd_topo();
		CHECK_EQ(t->node_limit, 2);
		CHECK_EQ(t->cpu_limit, 4);
		CHECK_EQ(t->has_mem[1], 0);
		CHECK_EQ(t->cpu_mem_node[3], 0);
		CHECK_EQ(t->fallback_len[1], 1);
	}
	/* A NULL spec and an unterminated but valid-looking one. */
	CHECK(_nd_topo_build_spec(NULL, err, sizeof err) == NULL);
	/* Good specs with odd but legal spacing, separators and case. */
	const char *good[] = {
		"0:cpus=0-1,mem=1G",
		"  NODE 0 :  cpus=0-1 , mem=1g ;  ",
		"node2: ncpus=4 mem=512M; node 7: ncpus=4 mem=0; dist: 2-7=15",
		"0-15: ncpus=2 mem=1G",
		"0: cpus=0 mem=1G; Distance= 0>0=10",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		const _nd_topo_t *t = _nd_topo_build_spec(good[i], err, sizeof err);
		CHECK(t != NULL, "spec '%s' rejected: %s", good[i], err);
		_nd_topo_discard(t);
	}
	const _nd_topo_t *t = _nd_topo_build_spec("0-15: ncpus=2 mem=1G", err, sizeof err);
	if (t) {
		CHECK_EQ(t->node_limit, 16);
		CHECK_EQ(t->cpu_limit, 32);
		CHECK_EQ(t->cpu_node[31], 15);
		CHECK_EQ(t->cpu_node[2], 1);
		_nd_topo_discard(t);
	}
	return CHECK_DONE();
}
