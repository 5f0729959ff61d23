// SPDX-License-Identifier: MIT
/* nd_aligned_alloc_policy's fast path (audit14: the class of the size
 * rounded to the alignment, from the heap of the thread's entry 0, as
 * nd_aligned_alloc_onnode does; 65.2 -> 57.2 instructions a pair on
 * bench/policy.sh's row, 53.2 since its miss is a function of its own:
 * aligned_policy_slow, the dry class's refill). What must hold whatever the entry holds, under
 * two emulated nodes, for prepared and plain policy objects of bind:1,
 * preferred-many, interleave and weighted, alignments 16..4096 and sizes
 * 1..300 plus a few large ones: the block is aligned, holds the size, is
 * on node 1 under bind:1, and a bad alignment right after hits of a good
 * one fails with EINVAL. Each block is written whole and freed at the
 * end, so that overlapping blocks would show. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "nodalloc.h"

enum { MAXB = 40000 };
static unsigned char *blk[MAXB];
static size_t len[MAXB];
static int nb;

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate("0: cpus=0 mem=256M; 1: cpus=1 mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	static const char *specs[] = { "bind:1", "preferred-many:0-1", "interleave:0-1", "weighted:0=1,1=2" };
	static const size_t aligns[] = { 16, 32, 64, 128, 256, 4096 };
	for (unsigned k = 0; k < sizeof specs / sizeof specs[0]; k++) {
		static nd_policy_t plain;
		CHECK(nd_policy_parse(specs[k], &plain, err, sizeof err) == 0, "%s: %s", specs[k], err);
		const nd_policy_t *prep = nd_policy_prepare(&plain);
		CHECK(prep != NULL, "prepare %s", specs[k]);
		for (int kind = 0; kind < 2; kind++) {
			const nd_policy_t *p = kind ? prep : &plain;
			nb = 0;
			for (unsigned ai = 0; ai < sizeof aligns / sizeof aligns[0]; ai++) {
				size_t al = aligns[ai];
				for (size_t sz = 1; sz <= 300; sz += (sz < 40 ? 1 : 7)) {
					for (int rep = 0; rep < 3 && nb < MAXB; rep++) {
						unsigned char *b = nd_aligned_alloc_policy(al, sz, p);
						CHECK(b != NULL, "%s %s: aligned_alloc(%zu, %zu)", kind ? "prepared" : "plain",
						      specs[k], al, sz);
						if (!b)
							continue;
						CHECK((uintptr_t)b % al == 0 && nd_usable_size(b) >= sz,
						      "%s %s: aligned_alloc(%zu, %zu) = %p, usable %zu",
						      kind ? "prepared" : "plain", specs[k], al, sz, (void *)b, nd_usable_size(b));
						if (k == 0)
							CHECK(nd_node_of(b) == 1, "bind:1: aligned_alloc(%zu, %zu) on node %d", al,
							      sz, nd_node_of(b));
						memset(b, (int)(nb & 0xff), sz);
						blk[nb] = b;
						len[nb++] = sz;
					}
				}
				errno = 0;
				void *q = nd_aligned_alloc_policy(al * 3, 64, p);
				CHECK(q == NULL && errno == EINVAL, "%s: alignment %zu: %p errno %d", specs[k], al * 3, q, errno);
				errno = 0;
				q = nd_aligned_alloc_policy(0, 64, p);
				CHECK(q == NULL && errno == EINVAL, "%s: alignment 0: %p errno %d", specs[k], q, errno);
			}
			for (int i = 0; i < nb; i++) {
				size_t j = 0;
				while (j < len[i] && blk[i][j] == (unsigned char)(i & 0xff))
					j++;
				CHECK(j == len[i], "block %d (%zu B) overwritten at %zu", i, len[i], j);
				nd_free(blk[i]);
			}
		}
	}
	return CHECK_DONE();
}
