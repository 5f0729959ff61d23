// SPDX-License-Identifier: MIT
/* The rest of glibc's malloc API (task libc23): the __libc_* names and
 * __posix_memalign are nodalloc's (a block of our malloc freed with
 * __libc_free went to glibc's free: abort); mallinfo2 and mallinfo report
 * nodalloc's figures (glibc's empty arena before); malloc_stats writes
 * nodalloc's report to stderr; mallopt's answers per parameter. Both ways
 * in: this program (the library linked in) and python3 with the library
 * preloaded (ctypes calls the names through the dynamic linker). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
/* weak: glibc has neither (mimalloc and tcmalloc export both) */
extern void __libc_cfree(void *) __attribute__((weak));
extern int __posix_memalign(void **, size_t, size_t) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern struct mallinfo __libc_mallinfo(void);
extern int __libc_mallopt(int, int);

/* mallinfo is deprecated (its ints wrap): what it returns is checked */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define OURS(p) ((p) != NULL && nd_node_of(p) >= 0)

/* In a child: glibc's __libc_free of our block aborts, which must be a
 * failed check here, not the end of the test. Exits with the failures. */
static void libc_names(void)
{
	char *p = malloc(100);
	memset(p, 0x5a, 100);
	__libc_free(p); /* ours: its slab takes it back */
	char *q = __libc_malloc(24);
	CHECK(OURS(q), "__libc_malloc = %p", (void *)q);
	memset(q, 7, 24);
	q = __libc_realloc(q, 5000);
	CHECK(OURS(q) && q[0] == 7 && q[23] == 7, "__libc_realloc = %p", (void *)q);
	free(q);
	p = malloc(3000);
	p = __libc_realloc(p, 100000); /* a large run now */
	CHECK(OURS(p) && malloc_usable_size(p) >= 100000, "__libc_realloc to 100000 = %p", (void *)p);
	__libc_free(p);
	unsigned char *z = __libc_calloc(100, 10);
	int zero = z != NULL;
	for (int i = 0; zero && i < 1000; i++)
		zero = z[i] == 0;
	CHECK(OURS(z) && zero, "__libc_calloc = %p", (void *)z);
	CHECK(__libc_cfree && __posix_memalign, "__libc_cfree %p, __posix_memalign %p", (void *)__libc_cfree,
	      (void *)__posix_memalign);
	if (!__libc_cfree || !__posix_memalign)
		_exit(1);
	__libc_cfree(z);
	void *a = __libc_memalign(256, 100);
	CHECK(OURS(a) && ((uintptr_t)a & 255) == 0, "__libc_memalign(256) = %p", a);
	free(a);
	a = NULL;
	CHECK(__posix_memalign(&a, 4096, 10) == 0 && OURS(a) && ((uintptr_t)a & 4095) == 0, "__posix_memalign = %p", a);
	free(a);
	CHECK(__posix_memalign(&a, 3, 10) == EINVAL, "__posix_memalign(3)");
	a = __libc_valloc(10);
	CHECK(OURS(a) && ((uintptr_t)a & 4095) == 0, "__libc_valloc = %p", a);
	free(a);
	a = __libc_pvalloc(10);
	CHECK(OURS(a) && ((uintptr_t)a & 4095) == 0 && malloc_usable_size(a) >= 4096, "__libc_pvalloc = %p", a);
	free(a);
	_exit(check_fail ? 1 : 0);
}

static void mallinfo_figures(void)
{
	enum { N = 4000, SMALL = 1000, LARGE = (1 << 20) + 1 };
	static char *ps[N];
	char *big[2];
	struct mallinfo2 m0 = mallinfo2();
	size_t usable = 0;
	for (int i = 0; i < N; i++) {
		ps[i] = malloc(SMALL);
		usable += malloc_usable_size(ps[i]);
	}
	for (int i = 0; i < 2; i++) {
		big[i] = malloc(LARGE);
		usable += malloc_usable_size(big[i]);
	}
	struct mallinfo2 m1 = mallinfo2();
	/* in use: the blocks' usable sizes exactly (the process is quiet) */
	CHECK(m1.uordblks - m0.uordblks == usable, "uordblks grew by %zu, the blocks' usable sizes are %zu (asked %d)",
	      m1.uordblks - m0.uordblks, usable, N * SMALL + 2 * LARGE);
	CHECK(m1.arena >= m1.uordblks && m1.arena == m1.uordblks + m1.fordblks,
	      "arena %zu = uordblks %zu + fordblks %zu", m1.arena, m1.uordblks, m1.fordblks);
	CHECK(m1.hblks == 0 && m1.hblkhd == 0 && m1.usmblks == 0, "hblks %zu hblkhd %zu usmblks %zu", m1.hblks, m1.hblkhd,
	      m1.usmblks);
	CHECK(m1.fsmblks >= m1.smblks * 16 && m1.fordblks >= m1.fsmblks, "fsmblks %zu smblks %zu fordblks %zu", m1.fsmblks,
	      m1.smblks, m1.fordblks);
	struct mallinfo i1 = mallinfo();
	struct mallinfo2 m1b = mallinfo2();
	CHECK(i1.uordblks == (int)m1b.uordblks && i1.arena == (int)m1b.arena, "mallinfo %d %d, mallinfo2 %zu %zu",
	      i1.uordblks, i1.arena, m1b.uordblks, m1b.arena);
	struct mallinfo l1 = __libc_mallinfo();
	CHECK(l1.uordblks == i1.uordblks, "__libc_mallinfo %d, mallinfo %d", l1.uordblks, i1.uordblks);
	for (int i = 0; i < N; i++)
		free(ps[i]);
	for (int i = 0; i < 2; i++)
		free(big[i]);
	struct mallinfo2 m2 = mallinfo2();
	CHECK(m2.uordblks == m0.uordblks, "uordblks %zu after the frees, %zu before the mallocs", m2.uordblks, m0.uordblks);
	/* the freed large runs wait in their node's cache: releasable, free */
	if (nd_node_of(big[0]) >= 0 && !getenv("NODALLOC_LARGE_DECAY_MS"))
		CHECK(m2.keepcost >= 2 * ((size_t)LARGE + 4095) / 4096 * 4096 && m2.ordblks >= 1 &&
			      m2.fordblks >= m2.keepcost,
		      "keepcost %zu ordblks %zu fordblks %zu after freeing 2 large blocks", m2.keepcost, m2.ordblks,
		      m2.fordblks);
	/* mallinfo's int fields saturate (glibc's wrap: 3 GiB read -1 GiB) */
	size_t huge = (size_t)3 << 30;
	void *h = malloc(huge); /* never touched: nothing committed in fact */
	if (h) {
		struct mallinfo2 m3 = mallinfo2();
		struct mallinfo i3 = mallinfo();
		CHECK(m3.uordblks >= huge && i3.uordblks == INT_MAX && i3.arena == INT_MAX,
		      "3 GiB in use: mallinfo2 %zu, mallinfo %d, arena %d", m3.uordblks, i3.uordblks, i3.arena);
		free(h);
	} else {
		printf("test_malloc_libc: malloc(3 GiB) refused, mallinfo's saturation not checked\n");
	}
}

/* In a child on an emulated 2-node machine: a block spread over both
 * nodes (the mixed slot) counts in use too (large.c counted no spread
 * run's pages). Exits with the failures. */
static void spread_figures(void)
{
	nd_policy_t pol;
	char err[128];
	CHECK(nd_policy_parse("interleave:0-1@64K", &pol, err, sizeof err) == 0, "%s", err);
	struct mallinfo2 m0 = mallinfo2();
	void *p = nd_malloc_policy(4 << 20, &pol);
	struct mallinfo2 m1 = mallinfo2();
	CHECK(p && m1.uordblks - m0.uordblks == malloc_usable_size(p), "spread block: uordblks grew by %zu, usable %zu",
	      m1.uordblks - m0.uordblks, p ? malloc_usable_size(p) : 0);
	free(p);
	struct mallinfo2 m2 = mallinfo2();
	CHECK(m2.uordblks == m0.uordblks, "uordblks %zu after the spread block's free, %zu before", m2.uordblks,
	      m0.uordblks);
	_exit(check_fail ? 1 : 0);
}

static void mallopt_answers(void)
{
	static const struct {
		int param, value, want;
	} t[] = {
		{ M_MXFAST, 64, 1 },           { M_MXFAST, 0, 1 },           { M_MXFAST, 160, 1 },
		{ M_MXFAST, 161, 0 },          { M_MXFAST, -1, 0 },          { M_TRIM_THRESHOLD, 1 << 20, 1 },
		{ M_TOP_PAD, 4096, 1 },        { M_MMAP_THRESHOLD, 1 << 20, 1 }, { M_MMAP_MAX, 0, 1 },
		{ M_CHECK_ACTION, 3, 1 },      { M_PERTURB, 0, 1 },          { M_PERTURB, 0xa5, 0 },
		{ M_ARENA_TEST, 8, 1 },        { M_ARENA_MAX, 1, 1 },        { 2 /* M_NLBLKS */, 1, 1 },
		{ 3 /* M_GRAIN */, 1, 1 },     { 4 /* M_KEEP */, 1, 1 },     { 5, 1, 0 },
		{ -9, 1, 0 },                  { 100, 1, 0 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		CHECK(mallopt(t[i].param, t[i].value) == t[i].want, "mallopt(%d, %d) != %d", t[i].param, t[i].value,
		      t[i].want);
		CHECK(__libc_mallopt(t[i].param, t[i].value) == t[i].want, "__libc_mallopt(%d, %d)", t[i].param,
		      t[i].value);
	}
}

/* Run with the library preloaded. Prints "preload ok". */
static const char *script =
	"import ctypes, sys\n"
	"c = ctypes.CDLL(None)\n"
	"V, S = ctypes.c_void_p, ctypes.c_size_t\n"
	"for n, r, a in (('malloc', V, [S]), ('free', None, [V]), ('__libc_free', None, [V]),\n"
	"                ('__libc_realloc', V, [V, S]), ('__libc_memalign', V, [S, S]),\n"
	"                ('nd_node_of', ctypes.c_int, [V]), ('mallopt', ctypes.c_int, [ctypes.c_int, ctypes.c_int])):\n"
	"    f = getattr(c, n); f.restype = r; f.argtypes = a\n"
	"class MI2(ctypes.Structure):\n"
	"    _fields_ = [(f, S) for f in 'arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost'.split()]\n"
	"c.mallinfo2.restype = MI2\n"
	"p = c.malloc(100); assert c.nd_node_of(p) >= 0, 'malloc'\n"
	"c.__libc_free(p)\n"
	"p = c.__libc_realloc(c.malloc(100), 200000); assert p and c.nd_node_of(p) >= 0, '__libc_realloc'\n"
	"c.free(p)\n"
	"p = c.__libc_memalign(512, 100); assert p and p % 512 == 0 and c.nd_node_of(p) >= 0, '__libc_memalign'\n"
	"c.free(p)\n"
	"pm = c.__posix_memalign; pm.restype = ctypes.c_int; pm.argtypes = [ctypes.POINTER(V), S, S]\n"
	"q = V(); assert pm(ctypes.byref(q), 4096, 10) == 0 and q.value % 4096 == 0\n"
	"assert c.nd_node_of(q) >= 0, '__posix_memalign'\n"
	"c.free(q)\n"
	"m0 = c.mallinfo2()\n"
	"ps = [c.malloc(4000) for i in range(2000)]\n"
	"m1 = c.mallinfo2()\n"
	"for p in ps: c.free(p)\n"
	"m2 = c.mallinfo2()\n"
	"d = m1.uordblks - m0.uordblks\n"
	"assert 2000 * 4000 <= d <= 2000 * 4096 + (1 << 20), ('grew', d)\n"
	"assert m1.uordblks - m2.uordblks >= 2000 * 4000, ('fell', m1.uordblks, m2.uordblks)\n"
	"assert m1.arena == m1.uordblks + m1.fordblks, 'arena'\n"
	"assert (c.mallopt(-8, 2), c.mallopt(-6, 1), c.mallopt(77, 1)) == (1, 0, 0), 'mallopt'\n"
	"c.malloc_stats()\n"
	"print('preload ok', flush=True)\n";

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "spread") == 0)
		spread_figures();
	if (argc > 1 && strcmp(argv[1], "stats") == 0) { /* its stderr is the parent's pipe */
		void *keep = malloc(5000);
		malloc_stats();
		free(keep);
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0)
		libc_names();
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the __libc_* names: status 0x%x (signal %d)", st,
	      WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	mallinfo_figures();
	mallopt_answers();
	static char out[1 << 16];
	st = run_child("/proc/self/exe", (char *const[]){ argv[0], "spread", NULL }, "NODALLOC_TOPOLOGY",
		       "0: cpus=0 mem=2G; 1: cpus=1 mem=2G", false, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the spread block on 2 emulated nodes: status 0x%x:\n%s", st, out);
	run_child("/proc/self/exe", (char *const[]){ argv[0], "stats", NULL }, NULL, NULL, false, out, sizeof out);
	CHECK(strstr(out, "nodalloc malloc_stats") && strstr(out, "in use bytes") &&
		      strstr(out, "nodalloc statistics of pid") && strstr(out, "size class"),
	      "malloc_stats wrote:\n%s", out);

	char lib[4096];
	if (!python3_with_lib("test_malloc_libc", "the preloaded part ", lib, sizeof lib))
		return CHECK_DONE();
	st = run_child("/usr/bin/python3", (char *const[]){ "python3", "-c", (char *)script, NULL }, "LD_PRELOAD", lib,
		       true, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "preload ok") &&
		      strstr(out, "nodalloc malloc_stats") && strstr(out, "nodalloc statistics of pid"),
	      "python3 with the library preloaded: status 0x%x, output:\n%s", st, out);
	return CHECK_DONE();
}
