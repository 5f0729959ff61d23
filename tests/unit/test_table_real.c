// SPDX-License-Identifier: MIT
/* Large tables on the real machine's topology (whatever it is): the size
 * follows the sizing rule for the memory of the allowed memory nodes,
 * every byte is accounted to a memory node, one memory node means local
 * placement, several mean a spread within 1.05, zero-fill holds. */
#include <errno.h>

#include "check.h"
#include "internal.h"

int main(void)
{
	const _nd_topo_t *topo = _nd_topo();
	uint64_t mem = 0;
	int nmem = 0;
	for (int n = 0; n < topo->node_limit; n++) {
		if (!topo->has_mem[n] || (topo->mem_allowed && !topo->mem_allowed[n]))
			continue;
		mem += topo->mem_total[n];
		nmem++;
	}
	CHECK(nmem >= 1 && mem > 0, "nodes %d mem %llu", nmem, (unsigned long long)mem);
	/* Inode-cache-like with a high limit so the test stays small on big
	 * machines: at most 2^18 entries (2 MiB). */
	nd_table_desc_t d = { .name = "Inode-cache", .bucket_size = 8, .scale = 14, .high_limit = (uint64_t)1 << 18,
			      .flags = ND_TABLE_ZERO };
	uint64_t want = _nd_table_size(&d, mem);
	nd_table_t t;
	CHECK(nd_table_alloc(&d, &t) == 0, "errno %d", errno);
	CHECK_EQ(t.entries, want);
	CHECK_EQ(t.bytes, want * 8);
	CHECK_EQ(t.flags & (ND_TABLE_LOCAL | ND_TABLE_DISTRIBUTE), nmem == 1 ? ND_TABLE_LOCAL : ND_TABLE_DISTRIBUTE);
	static uint64_t per[ND_MAX_NODES];
	int n = nd_table_node_bytes(&t, per, ND_MAX_NODES);
	CHECK_EQ(n, topo->node_limit);
	uint64_t sum = 0, lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < n; i++) {
		sum += per[i];
		if (per[i]) {
			CHECK(topo->has_mem[i], "bytes on node %d without memory", i);
			lo = per[i] < lo ? per[i] : lo;
			hi = per[i] > hi ? per[i] : hi;
		}
	}
	CHECK_EQ(sum, t.bytes);
	CHECK(20 * hi <= 21 * lo, "lo %llu hi %llu", (unsigned long long)lo, (unsigned long long)hi);
	const uint64_t *w = t.base;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < t.entries; i++)
		acc |= w[i];
	CHECK_EQ(acc, 0);
	char line[256];
	CHECK(nd_table_format(&t, line, sizeof line) > 0);
	printf("%s\n", line);
	CHECK(strstr(line, "Inode-cache hash table entries: ") == line, "%s", line);
	/* Writable all over. */
	for (uint64_t i = 0; i < t.entries; i++)
		((uint64_t *)t.base)[i] = i;
	CHECK_EQ(((uint64_t *)t.base)[t.mask], t.mask);
	nd_table_free(&t);
	return CHECK_DONE();
}
