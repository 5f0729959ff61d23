// SPDX-License-Identifier: MIT
/*
 * nodactl's numactl command line (docs/numactl.md): abbreviations as
 * getopt_long allows, "Conflicting policies", relative lists and `same`,
 * options in any order (--topology after the lists it checks), a
 * memoryless node for --cpunodebind, --dry-run, --show against numactl
 * --show, --version, mistyped commands, and the kernel policy reaching the
 * program on this machine (/proc/self/numa_maps of the program).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodactl_test.h"


/* node 2: CPUs, no memory; node 3: memory, no CPUs */
#define SPEC "--topology='0: cpus=0 mem=256M; 1: cpus=1 mem=256M; 2: cpus=2 mem=0; 3: mem=256M'"

static bool has(const char *s) { return strstr(run_out, s) != NULL; }

int main(void)
{
	/* Two policy options: numactl's "Conflicting policies", even twice the same. */
	CHECK_EQ(run(NODACTL " -m 0 -i 0 -- true"), 1);
	CHECK(has("nodactl: Conflicting policies: --interleave after --membind"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -m 0 -m 0 -- true"), 1);
	CHECK(has("Conflicting policies"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -l --preferred-many=0 -- true"), 1);
	CHECK(has("Conflicting policies: --preferred-many after --localalloc"), "got: %s", run_out);

	/* Abbreviations: unique prefixes work, ambiguous ones are named. */
	CHECK_EQ(run(NODACTL " --mem=0 --dry -- true"), 0);
	CHECK(has("kernel policy: bind 0\n") && has("nodalloc policy: bind:0\n"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --pre 0 -- true"), 1);
	CHECK(has("nodactl: option '--pre' is ambiguous; possibilities: '--preferred' '--preferred-many'"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --inter=0 --gran=2M --dry-run -- true"), 0);
	CHECK(has("nodalloc policy: interleave:0@2M\n"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --bogus -- true"), 1);
	CHECK(has("nodactl: unrecognized option '--bogus'"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -Z -- true"), 1);
	CHECK(has("nodactl: invalid option '-Z'"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -m"), 1);
	CHECK(has("option '-m' needs a value"), "got: %s", run_out);
	/* numactl's shared-memory options: refused by name; -c is -N */
	CHECK_EQ(run(NODACTL " --shm=seg -m 0 -- true"), 1);
	CHECK(has("nodactl: --shm is numactl's policy for shared memory and files"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -t -- true"), 1);
	CHECK(has("nodactl: -t is numactl's policy"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -c 0 --dry-run -- true"), 0);
	CHECK(has("cpu binding: 0-1\n") || has("cpu binding: 0\n"), "got: %s", run_out);
	/* --hardware abbreviated is still the inspector */
	CHECK_EQ(run(NODACTL " --hard " SPEC), 0);
	CHECK(has("available: 4 nodes (0-3)"), "got: %s", run_out);

	/* Any order: --topology after the lists it checks; relative lists
	 * count the memory nodes (0, 1, 3), `same` repeats the list before. */
	CHECK_EQ(run(NODACTL " -m +2 --dry-run " SPEC " -- true"), 0);
	CHECK(has("nodalloc policy: bind:3\n"), "+2 is the third memory node: %s", run_out);
	CHECK_EQ(run(NODACTL " -i '!+0' --dry-run " SPEC " -- true"), 0);
	CHECK(has("nodalloc policy: interleave:1,3\n"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -m +3 --dry-run " SPEC " -- true"), 1);
	CHECK(has("relative node +3, but only 3 are allowed (nodes 0-1,3)"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -N 1 -m same --dry-run " SPEC " -- true"), 0);
	CHECK(has("nodalloc policy: bind:1\n"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -m same " SPEC " -- true"), 1);
	CHECK(has("--membind=same: no node list before it"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -m 2 " SPEC " -- true"), 1);
	CHECK(has("nodactl: --membind: node list: node 2 has no memory (nodes 0-1,3)"), "got: %s", run_out);
	/* numactl's parser refuses an empty entry; a number past strtol's
	 * range is named as typed (it was "node 9223372036854775807") */
	CHECK_EQ(run(NODACTL " -m 0, " SPEC " -- true"), 1);
	CHECK(has("nodactl: --membind: node list: '0,' ends with ','"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -C 0,1, " SPEC " -- true"), 1);
	CHECK(has("nodactl: --physcpubind: cpu list: '0,1,' ends with ','"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -m 0,99999999999999999999 " SPEC " -- true"), 1);
	CHECK(has("nodactl: --membind: node list: '99999999999999999999' is out of range (nodes 0-1,3)"), "got: %s",
	      run_out);
	CHECK_EQ(run(NODACTL " -i 1-4294967296 " SPEC " -- true"), 1);
	CHECK(has("nodactl: --interleave: node list: '1-4294967296' is out of range"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -p 0,1 " SPEC " -- true"), 1);
	CHECK(has("--preferred expects one node, got '0,1'"), "got: %s", run_out);
	/* --cpunodebind of a memoryless node is a CPU binding: fine. A node
	 * without CPUs is not. */
	CHECK_EQ(run(NODACTL " --cpunodebind=2 --dry-run " SPEC " -- true"), 0);
	CHECK(has("cpu binding: none (emulated topology)"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -N 3 " SPEC " -- true"), 1);
	CHECK(has("nodactl: --cpunodebind: node list: node 3 has no CPUs (nodes 0-2)"), "got: %s", run_out);

	/* --dry-run: says what the program would get, runs nothing. */
	CHECK_EQ(run(NODACTL " --dry-run -i all --weights=0=3,1=1 --stats=json " SPEC " -- sh -c 'echo RAN'"), 0);
	CHECK(!has("RAN"), "dry run ran the program: %s", run_out);
	CHECK(has("program: /") && has("nodalloc policy: weighted:0=3,1=1\n"), "got: %s", run_out);
	CHECK(has("kernel policy: unchanged (emulated topology)\n"), "got: %s", run_out);
	CHECK(has("statistics: JSON of the launched program, reported by nodactl when it ends; descendants: none\n") &&
	      has("environment: LD_PRELOAD=" ND_BINARY_DIR "/libnodalloc.so"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --dry-run -C 0 -i 0 -- " ND_BINARY_DIR "/vm-bin/probe_nodactl_static"), 0);
	CHECK(has("(static: only the kernel policy and CPU binding apply)"), "got: %s", run_out);
	CHECK(has("kernel policy: interleave 0\n") && has("cpu binding: 0\n"), "got: %s", run_out);

	/* --version, mistyped commands (an error, not a program run). */
	CHECK_EQ(run(NODACTL " --version"), 0);
	CHECK(has("nodactl (nodalloc) 0.1"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " stats 1234"), 1);
	CHECK(has("nodactl: unknown command 'stats' (did you mean 'stat'?); to run a program of that name: nodactl -- stats"),
	      "got: %s", run_out);
	CHECK_EQ(run(NODACTL " hardwre"), 1);
	CHECK(has("did you mean 'hardware'?"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -- stats 1234"), 127); /* asked for: a program */

	/* The kernel policy reaches the program, whatever its allocator:
	 * numa_maps shows the task policy on every mapping without its own. */
	CHECK_EQ(run(NODACTL " -i 0 -- grep -c 'interleave:0 ' /proc/self/numa_maps"), 0);
	CHECK(atoi(run_out) >= 5, "interleave not on grep's own mappings: %s", run_out);
	CHECK_EQ(run(NODACTL " -i 0 -- grep -c ' interleave:0 stack' /proc/self/numa_maps"), 0);
	CHECK_EQ(run(NODACTL " -m 0 -- grep -c ' bind:0 stack' /proc/self/numa_maps"), 0);
	CHECK_EQ(run(NODACTL " -- grep -c ' default stack' /proc/self/numa_maps"), 0); /* inherited */
	/* weighted interleave where the kernel has it (Linux 6.9), else
	 * interleave and a note, said once */
	CHECK_EQ(run(NODACTL " --weights=0=2 -- grep -c 'interleave:0 ' /proc/self/numa_maps"), 0);
	if (has("note:"))
		CHECK(has("nodactl: note: this kernel has no MPOL_WEIGHTED_INTERLEAVE"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --weights=0=2 -- grep -c 'weighted interleave:0 ' /proc/self/numa_maps"), has("note:") ? 1 : 0);

	/* --show: numactl --show's lines, for the same options, then nodalloc's. */
	static const char *const cases[] = { "", "-m 0", "-i 0", "-p 0", "-P 0", "-C 1", "-N 0 -m same" };
	bool numactl = run("numactl --show") == 0;
	if (!numactl)
		printf("note: numactl not installed (apt-get install numactl): --show not compared\n");
	for (size_t i = 0; numactl && i < sizeof cases / sizeof cases[0]; i++) {
		static char want[sizeof run_out];
		CHECK_EQ(run("numactl %s --show", cases[i]), 0);
		snprintf(want, sizeof want, "%s", run_out);
		CHECK_EQ(run(NODACTL " %s --show", cases[i]), 0);
		CHECK(strncmp(run_out, want, strlen(want)) == 0, "'%s --show':\nnumactl:\n%s\nnodactl:\n%s", cases[i], want, run_out);
		CHECK(strstr(run_out + strlen(want), "nodalloc policy: ") != NULL, "no nodalloc lines: %s", run_out);
	}
	CHECK_EQ(run(NODACTL " -m 0 -s"), 0);
	CHECK(has("policy: bind\n") && has("nodalloc policy: bind:0\n"), "got: %s", run_out);
	return CHECK_DONE();
}
