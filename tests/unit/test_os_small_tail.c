// SPDX-License-Identifier: MIT
/* os.c's small page and its tail (_nd_os_small_tail): the statistics'
 * slots end the page the init's small tables share, the rest of them
 * following it in .bss (issue 11: their own mapping was one more
 * resident page in every process).
 *  - after the init the tail is taken (the statistics'): a second one is
 *    refused;
 *  - the front's blocks never reach the tail's head: the small page's
 *    blocks handed out until it is full (then whole-page mappings) end
 *    at or before the process-wide slot, and are zeroed;
 *  - the tail's head is the last 256 bytes of that page. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

int main(void)
{
	free(malloc(16)); /* the init */
	size_t slen = 0;
	uintptr_t head = (uintptr_t)_nd_stats_private_map(&slen);
	CHECK(head && slen == 1025 * 128, "the statistics' private slots (%#lx, %zu bytes)", (unsigned long)head, slen);
	CHECK(head % 4096 == 4096 - 256, "the statistics' slots start %lu bytes into a page (4096 - 256 expected)",
	      (unsigned long)(head % 4096));
	uintptr_t page = head - (4096 - 256);
	CHECK((uintptr_t)_nd_topo() / 4096 == page / 4096, "the topology (%p) is not on the tail's page (%#lx)",
	      (const void *)_nd_topo(), (unsigned long)page);
	CHECK(_nd_os_small_tail(1024, 128) == NULL, "a second tail");

	int in_page = 0, mapped = 0;
	for (int i = 0; i < 64; i++) {
		int err = 0;
		unsigned char *p = _nd_os_small(100, &err);
		CHECK(p != NULL, "_nd_os_small(100): error %d", err);
		if ((uintptr_t)p / 4096 == page / 4096) {
			in_page++;
			CHECK((uintptr_t)p + 100 <= head, "a small block at %p runs into the tail's head at %#lx", (void *)p,
			      (unsigned long)head);
		} else {
			mapped++;
		}
		for (int j = 0; j < 100; j++)
			CHECK(p[j] == 0, "byte %d of a small block at %p is %u", j, (void *)p, p[j]);
		p[0] = 1;
		p[99] = 1;
	}
	printf("small blocks: %d on the page, %d mapped\n", in_page, mapped);
	CHECK(mapped > 0, "64 blocks of 128 bytes all fit the small page");
	/* the slots are intact: nothing above wrote the tail's head */
	nd_stats_t st = { .version = ND_STATS_VERSION };
	CHECK(nd_stats_get(&st) == 0, "nd_stats_get");
	CHECK(st.nodes[0].numa_hit > 0, "node 0's numa_hit %llu", (unsigned long long)st.nodes[0].numa_hit);
	return CHECK_DONE();
}
