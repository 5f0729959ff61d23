// SPDX-License-Identifier: MIT
/* nd_malloc_policy's ifunc (place.c) asks glibc whether AVX2 is usable
 * (CPU_FEATURE_ACTIVE, glibc 2.33), so GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2
 * forces its SSE2 body, the way to run that body through the real dispatch
 * on an AVX2 machine. A child of this test reports _nd_place_avx2() (the
 * resolver's one test) and serves a plain object through nd_malloc_policy:
 * without the tunable the answer is the CPU's (libgcc's), with it false.
 * Fails on an AVX2 machine with _nd_place_avx2 reading cpuid alone (the
 * tunable then changes nothing). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

/* The CPU's answer, not glibc's: libgcc's (cpuid's AVX2, and XCR0's SSE
 * and AVX state), which no tunable changes. */
static bool cpu_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

static int child(void)
{
	nd_policy_t p;
	char err[200];
	if (nd_policy_parse("bind:0", &p, err, sizeof err) != 0)
		return 2;
	int served = 0;
	for (int i = 0; i < 100; i++) {
		void *q = nd_malloc_policy(48, &p);
		served += q && nd_node_of(q) == 0;
		free(q);
	}
	fprintf(stderr, "avx2 %d served %d\n", (int)_nd_place_avx2(), served);
	return 0;
}

static int run(const char *tunables)
{
	char out[256];
	int st = run_child("/proc/self/exe", (char *const[]){ "test_place_avx2_tunable", "child", NULL }, "GLIBC_TUNABLES",
			   tunables, false, out, sizeof out);
	int avx2 = -1, served = -1;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && sscanf(out, "avx2 %d served %d", &avx2, &served) == 2,
	      "GLIBC_TUNABLES='%s': child status %d, said '%s'", tunables, st, out);
	CHECK(served == 100, "GLIBC_TUNABLES='%s': %d of 100 served on node 0", tunables, served);
	return avx2;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	bool cpu = cpu_avx2();
	printf("this CPU: AVX2 %s\n", cpu ? "usable" : "not usable");
	CHECK(run("") == (int)cpu, "no tunable: the resolver's answer is not the CPU's");
#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
	CHECK(run("glibc.cpu.hwcaps=-AVX2") == 0, "glibc.cpu.hwcaps=-AVX2: the AVX2 body is still chosen");
#else
	printf("glibc before 2.33: no tunable to test\n");
#endif
#endif
	return CHECK_DONE();
}
