// SPDX-License-Identifier: MIT
/* A large block larger than a whole node slot, when the node has the
 * memory, is served outside the slot, bound to the node (outrun.c;
 * docs/arenas.md "Runs larger than a slot"; task outrun3). The case
 * task outrun2 reproduced: 8 emulated nodes of 4 GiB under an address
 * space limit of about 3.9 GiB (ulimit -v 4000000) get 2 GiB slots, and
 * malloc(2500 MiB) was NULL with ENOMEM under local and bind:0 (glibc
 * serves it). In a child (the limit is the process's): the block, under
 * local (the thread on CPU 1: node 1), preferred:2 and bind:0, has its
 * contents, its node (nd_node_of), is counted outside the slot and
 * freed; realloc grows one slot run past the slot (moved outside);
 * interleave:all of it still fails (a spread run has no outside form);
 * a block the address space limit cannot hold (64 MiB more than it
 * leaves, under the node's 4 GiB) is NULL with ENOMEM, and a 2500 MiB block is served again after. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "vm_bytes.h"

#define MIB (1ull << 20)
#define BIG (2500 * MIB)
#define STEP (64 * MIB) /* pages written: one every STEP (the nodes are emulated: few touched) */

static char err[256];

static _nd_page_info_t info(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

static void set_policy(const char *spec)
{
	nd_policy_t pol;
	CHECK(nd_policy_parse(spec, &pol, err, sizeof err) == 0, "%s: %s", spec, err);
	CHECK(nd_set_policy(&pol) == 0, "%s", spec);
}

static void fill(unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t o = 0; o < n; o += STEP)
		p[o] = (unsigned char)(seed + o / STEP);
	p[n - 1] = seed;
}

static bool same(const unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t o = 0; o < n; o += STEP)
		if (p[o] != (unsigned char)(seed + o / STEP))
			return false;
	return p[n - 1] == seed;
}

/* malloc(BIG) under spec lands on node, outside the slot, and is freed. */
static void big_on(const char *spec, int node)
{
	set_policy(spec);
	errno = 0;
	unsigned char *p = malloc(BIG);
	CHECK(p, "%s: malloc(2500 MiB) with 2 GiB slots: errno %d", spec, errno);
	if (!p)
		return;
	/* the slot's refusal before the run outside it leaves errno alone */
	CHECK(errno == 0, "%s: errno %d after a successful malloc", spec, errno);
	CHECK(nd_node_of(p) == node, "%s: node %d, want %d", spec, nd_node_of(p), node);
	const _nd_pagedesc_t *d = _nd_page_desc(p);
	CHECK(d && (d->flags & ND_PGF_OUT), "%s: not a run outside the slot", spec);
	CHECK(info(node).out_pages >= BIG >> ND_PAGE_SHIFT, "%s: out_pages %llu", spec,
	      (unsigned long long)info(node).out_pages);
	CHECK(malloc_usable_size(p) >= (size_t)BIG);
	fill(p, BIG, 7);
	CHECK(same(p, BIG, 7), "%s: contents", spec);
	free(p);
	CHECK(info(node).out_runs == 0, "%s: the run is unmapped at free", spec);
}

static int child(void)
{
	CHECK(nd_topology_emulate("0: cpus=0 mem=4G; 1: cpus=1 mem=4G; 2: cpus=2 mem=4G; 3: cpus=3 mem=4G; "
				  "4: cpus=4 mem=4G; 5: cpus=5 mem=4G; 6: cpus=6 mem=4G; 7: cpus=7 mem=4G",
				  err, sizeof err) == 0, "%s", err);
	uint64_t one[16] = { 2 }; /* CPU 1: node 1 is local */
	CHECK(_nd_os_sched_setaffinity(0, sizeof one, one) == 0);
	/* ulimit -v 4000000 as outrun2 reproduced it, past what is mapped now
	 * (the test binary's own reservation of the machine's topology) */
	CHECK(as_limit_room(4000000ul * 1024) == 0);
	free(malloc(64)); /* the init: the layout sized to the limit */
	uint64_t slot = info(0).slot_pages << ND_PAGE_SHIFT;
	CHECK(slot && slot < BIG, "slot of %llu MiB: the block must be larger", (unsigned long long)(slot / MIB));

	big_on("local", 1);
	big_on("preferred:2", 2);
	big_on("bind:0", 0);

	/* a slot run grown past the slot: moved into a run outside it */
	set_policy("bind:3");
	unsigned char *p = malloc(1000 * MIB);
	CHECK(p && !(_nd_page_desc(p)->flags & ND_PGF_OUT), "a 1000 MiB block in node 3's slot");
	if (p)
		fill(p, 1000 * MIB, 3);
	unsigned char *q = p ? realloc(p, BIG) : NULL;
	CHECK(q && nd_node_of(q) == 3 && (_nd_page_desc(q)->flags & ND_PGF_OUT), "realloc to 2500 MiB: outside, node 3");
	CHECK(q && same(q, 1000 * MIB, 3), "realloc kept the contents");
	free(q ? q : p);

	/* no outside form for a spread run: as before, ENOMEM */
	set_policy("interleave:all");
	errno = 0;
	p = malloc(BIG);
	CHECK(!p && errno == ENOMEM, "interleave:all of 2500 MiB: %p errno %d", (void *)p, errno);
	free(p);

	/* the address space lacks it (the node has 4 GiB): NULL, ENOMEM */
	set_policy("bind:0");
	size_t over = ((size_t)_nd_os_as_room() + 64 * MIB) & ~(MIB - 1);
	CHECK(over > BIG && over < 4000 * MIB, "the limit leaves %zu MiB", over / MIB - 64);
	errno = 0;
	p = malloc(over);
	CHECK(!p && errno == ENOMEM, "%zu MiB, 64 more than the limit leaves: %p errno %d", over / MIB, (void *)p, errno);
	free(p);
	CHECK(info(0).out_runs == 0 && info(0).used_pages < (64 * MIB) >> ND_PAGE_SHIFT, "the refusal left nothing charged");
	big_on("local", 1); /* and served again */
	return CHECK_DONE();
}

int main(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		int rc = child();
		fflush(stdout);
		_exit(rc);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
	return CHECK_DONE();
}
