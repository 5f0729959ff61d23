// SPDX-License-Identifier: MIT
/*
 * NODALLOC_THP (issue 13): transparent huge pages for node memory under
 * the default (local) policy too. Parsed: a bad value is reported by name.
 * Applied, read back from the VMA's flags in /proc/self/smaps ("hg":
 * MADV_HUGEPAGE, "nh": MADV_NOHUGEPAGE):
 *  - always: a node run's range is "hg" (small runs too);
 *  - never: "nh", whatever the system's mode;
 *  - madvise (default), where the system's mode is madvise: a run of
 *    2 MiB or more is "hg", a small run "nh", and the big run's range is
 *    "nh" again once freed (small runs placed there later get 4 KiB pages);
 *    a run grown in place to 2 MiB or more, either way, is "hg".
 * NODALLOC_THP_SLOW_US (madvise, where the system's mode is madvise): a
 * fresh big run's first 2 MiB is faulted at once and timed (test seam:
 * the threshold). At 1 us every probe is slow: the run's other pages go
 * back to "nh" (the probed 2 MiB stays "hg") and the next big runs are
 * left "nh" unprobed: 1, then 4 (a back-off of 4x per slow probe), a run
 * outside the slots too (left without MADV_HUGEPAGE); at 10^9 us none
 * is: every run "hg" whole and probed, the outside run too. The large
 * cache's runs (10^9): one it fills whole with moved pages is not probed,
 * one it fills in part has its first fresh 2 MiB probed (resident), not
 * its last. 0: no probe (the madvise case above, so that its steps do not
 * depend on the machine's timing).
 * Each case runs in a child (this binary re-executed with the variable
 * set). Skipped, with the reason, on a kernel without THP.
 * AnonHugePages of a touched 4 MiB run is printed, not asserted (huge
 * pages may be unavailable: fragmentation, defrag settings).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

static char smaps[1 << 20];

/* The VmFlags line (and AnonHugePages in *ahp, kB) of the VMA holding p. */
static const char *vma_flags(const void *p, long *ahp, char *out, size_t len)
{
	int fd = open("/proc/self/smaps", O_RDONLY);
	size_t n = 0;
	ssize_t r;
	while (fd >= 0 && n < sizeof smaps - 1 && (r = read(fd, smaps + n, sizeof smaps - 1 - n)) > 0)
		n += (size_t)r;
	if (fd >= 0)
		close(fd);
	smaps[n] = '\0';
	out[0] = '\0';
	bool in = false;
	for (char *l = smaps; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		char *e;
		unsigned long s = strtoul(l, &e, 16);
		if (*e == '-' && e != l) {
			unsigned long t = strtoul(e + 1, NULL, 16);
			in = (uintptr_t)p >= s && (uintptr_t)p < t;
		} else if (in && strncmp(l, "AnonHugePages:", 14) == 0) {
			*ahp = strtol(l + 14, NULL, 10);
		} else if (in && strncmp(l, "VmFlags:", 8) == 0) {
			size_t k = strcspn(l, "\n");
			k = k < len - 1 ? k : len - 1;
			memcpy(out, l, k);
			out[k] = '\0';
			break;
		}
	}
	return out;
}

static bool has_flag(const char *flags, const char *f)
{
	char w[8] = " ";
	strcat(w, f);
	const char *s = strstr(flags, w);
	return s && (s[3] == ' ' || s[3] == '\0');
}

/* Child: exit 0 if the flags are as `mode` says, else the failing step. */
static int child(const char *mode, bool sys_madvise)
{
	char f[512];
	long ahp = -1;
	int got;
	char *big = _nd_page_alloc(1024, 512, NULL, -1, &got); /* 4 MiB, 2 MiB aligned */
	char *small = _nd_page_alloc(1, 1, NULL, -1, &got);
	if (!big || !small)
		return 10;
	memset(big, 1, 4 << 20);
	small[0] = 1;
	vma_flags(big, &ahp, f, sizeof f);
	printf("  THP=%s: big run: AnonHugePages %ld kB, %s\n", mode, ahp, f);
	bool big_hg = has_flag(f, "hg"), big_nh = has_flag(f, "nh");
	vma_flags(small, &ahp, f, sizeof f);
	bool small_hg = has_flag(f, "hg"), small_nh = has_flag(f, "nh");
	if (strcmp(mode, "always") == 0)
		return big_hg && small_hg ? 0 : 11;
	if (strcmp(mode, "never") == 0)
		return big_nh && small_nh ? 0 : 12;
	if (!sys_madvise) /* system mode always: no advice needed, none given */
		return !big_hg && !big_nh ? 0 : 13;
	if (!big_hg || !small_nh)
		return 14;
	_nd_page_free(big);
	vma_flags(big, &ahp, f, sizeof f);
	if (!has_flag(f, "nh"))
		return 15;
	/* A run grown to 2 MiB or more in place, after its end or before its
	 * start (the large cache), is "hg" as a new run of that size is. */
	char *up = _nd_page_alloc(256, 2048, NULL, -1, &got); /* 1 MiB, the rest of 8 MiB free */
	if (!up || _nd_page_grow(up, 1024) != 0)
		return 16;
	if (!has_flag(vma_flags(up, &ahp, f, sizeof f), "hg"))
		return 17;
	char *z = _nd_page_alloc(2048, 2048, NULL, -1, &got);
	char *t = z ? _nd_page_split(z, 1792) : NULL; /* its last 1 MiB */
	if (!t || _nd_page_free(z) != 0)
		return 18;
	char *down = _nd_page_grow_down(t, 1024);
	if (down != z + (4 << 20))
		return 19;
	return has_flag(vma_flags(down, &ahp, f, sizeof f), "hg") ? 0 : 20;
}

/* Child of the probe's cases: 8 fresh 4 MiB runs; slow: every probe
 * slow (NODALLOC_THP_SLOW_US=1), else none (10^9). */
static int child_probe(bool slow)
{
	char f[512];
	long ahp = -1;
	int got;
	char *r[8];
	for (int k = 0; k < 8; k++)
		if (!(r[k] = _nd_page_alloc(1024, 512, NULL, -1, &got)))
			return 30;
	uint64_t probes, nslow, skipped;
	_nd_room_huge_counts(&probes, &nslow, &skipped);
	printf("  THP_SLOW_US=%s: probes %llu, slow %llu, skipped %llu\n", slow ? "1" : "10^9", (unsigned long long)probes,
	       (unsigned long long)nslow, (unsigned long long)skipped);
	if (probes == 0 && nslow == 0 && skipped == 0) {
		printf("  no probe: MADV_POPULATE_WRITE refused (Linux < 5.14): skipped\n");
		return 0;
	}
	for (int k = 0; k < 8; k++) {
		/* probed: runs 0, 2 and 7 (skips 1, then 4) when slow, all when not */
		bool probed = !slow || k == 0 || k == 2 || k == 7;
		bool head_hg = has_flag(vma_flags(r[k], &ahp, f, sizeof f), "hg");
		bool last_hg = has_flag(vma_flags(r[k] + (2 << 20), &ahp, f, sizeof f), "hg");
		bool last_nh = has_flag(f, "nh");
		printf("  run %d: first 2 MiB %s, last %s\n", k, head_hg ? "hg" : "-", last_hg ? "hg" : last_nh ? "nh" : "-");
		if (!slow && !(head_hg && last_hg))
			return 31 + k;
		if (slow && !(last_nh && head_hg == probed))
			return 41 + k;
	}
	if (slow ? !(probes == 3 && nslow == 3 && skipped == 5) : !(probes == 8 && nslow == 0 && skipped == 0))
		return 50;
	/* A run outside the slots (outrun.c) under the same probe and back-off:
	 * skipped after run 7's slow probe (a skip of 16), probed when not. */
	char *o = _nd_page_alloc_out(got, 1024, 512);
	if (!o)
		return 51;
	bool o_hg = has_flag(vma_flags(o, &ahp, f, sizeof f), "hg");
	uint64_t p2, s2, k2;
	_nd_room_huge_counts(&p2, &s2, &k2);
	printf("  outside run: %s, probes %llu, skipped %llu\n", o_hg ? "hg" : "-", (unsigned long long)p2, (unsigned long long)k2);
	if (slow ? o_hg || k2 != skipped + 1 || p2 != probes : !o_hg || p2 != probes + 1)
		return 52;
	return 0;
}

static bool resident(const void *p)
{
	unsigned char v = 0;
	return mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &v) == 0 && (v & 1);
}

static uint64_t probes_now(void)
{
	uint64_t p, s, k;
	_nd_room_huge_counts(&p, &s, &k);
	return p;
}

/* Child of the large cache's case (no probe slow): the fresh run a cached
 * 8 MiB moves into (16 MiB: its first 8 MiB moved) has its first fresh
 * 2 MiB probed, after the moves; a fresh run filled whole by moves
 * (16 MiB from two cached 8 MiB runs) is not probed. */
static int child_cache(void)
{
	const size_t M = (size_t)1 << 20;
	char *b[3];
	for (int k = 0; k < 3; k++)
		if (!(b[k] = _nd_large_alloc(8 * M, 0, NULL, 0)))
			return 60;
	/* lowest and highest freed: never adjacent (the middle one between) */
	for (int k = 0; k < 3; k++)
		for (int j = k + 1; j < 3; j++)
			if (b[j] < b[k]) {
				char *t = b[k];
				b[k] = b[j];
				b[j] = t;
			}
	uint64_t p0 = probes_now();
	if (!p0) {
		printf("  no probe: MADV_POPULATE_WRITE refused (Linux < 5.14): skipped\n");
		return 0;
	}
	_nd_large_free(b[0], _nd_page_desc(b[0]));
	char *d = _nd_large_alloc(16 * M, 0, NULL, 0); /* b[0]'s 4 huge pages moved, 8 MiB fresh */
	if (!d)
		return 61;
	uint64_t p1 = probes_now();
	bool first = resident(d + 8 * M), last = resident(d + 14 * M);
	printf("  partly moved: probes +%llu, first fresh 2 MiB %s, last %s\n", (unsigned long long)(p1 - p0),
	       first ? "resident" : "not resident", last ? "resident" : "not resident");
	if (p1 != p0 + 1 || !first || last)
		return 62;
	_nd_large_free(d, _nd_page_desc(d));
	_nd_large_free(b[2], _nd_page_desc(b[2]));
	/* cached: d (16 MiB) and b[2] (8 MiB); 24 MiB: d's 8 and b[2]'s 4 moved */
	char *e = _nd_large_alloc(24 * M, 0, NULL, 0);
	uint64_t p2 = probes_now();
	printf("  moved whole: probes +%llu\n", (unsigned long long)(p2 - p1));
	if (!e)
		return 63;
	return p2 == p1 ? 0 : 64;
}

static void no_probe(void *arg)
{
	setenv("NODALLOC_THP_SLOW_US", (const char *)arg, 1);
}

static int run(const char *mode, bool sys_madvise, char *out, size_t len)
{
	char *argv[] = { "test_page_thp", (char *)mode, sys_madvise ? "1" : "0", NULL };
	int st = run_child_then("/proc/self/exe", argv, "NODALLOC_THP", mode, true, out, len, no_probe, "0");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_probe(const char *what, const char *us, char *out, size_t len)
{
	char *argv[] = { "test_page_thp", (char *)what, (char *)us, NULL };
	int st = run_child("/proc/self/exe", argv, "NODALLOC_THP_SLOW_US", us, true, out, len);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "probe") == 0)
		return child_probe(strcmp(argv[2], "1") == 0);
	if (argc > 2 && strcmp(argv[1], "cache") == 0)
		return child_cache();
	if (argc > 2)
		return child(argv[1], argv[2][0] == '1');
	char sys[128] = "";
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, sys, sizeof sys - 1);
	if (fd >= 0)
		close(fd);
	sys[n > 0 ? n : 0] = '\0';
	if (n <= 0) {
		printf("test_page_thp: skipped: this kernel has no transparent huge pages "
		       "(/sys/kernel/mm/transparent_hugepage/enabled unreadable)\n");
		return 0;
	}
	bool sys_madvise = strstr(sys, "[madvise]") != NULL;
	printf("system THP mode: %s", sys);
	static char out[1 << 14];
	const char *modes[] = { "always", "never", "madvise" };
	for (int i = 0; i < 3; i++) {
		int rc = run(modes[i], sys_madvise, out, sizeof out);
		CHECK(rc == 0, "NODALLOC_THP=%s: step %d failed\n%s", modes[i], rc, out);
	}
	/* The probe of a fresh big run's huge page, slow every time or never. */
	for (int i = 0; sys_madvise && i < 2; i++) {
		const char *us = i ? "1000000000" : "1";
		int rc = run_probe("probe", us, out, sizeof out);
		printf("%s", out);
		CHECK(rc == 0, "NODALLOC_THP_SLOW_US=%s: step %d failed\n%s", us, rc, out);
	}
	/* The large cache's runs: probed after the moves, where fresh. */
	if (sys_madvise) {
		int rc = run_probe("cache", "1000000000", out, sizeof out);
		printf("%s", out);
		CHECK(rc == 0, "large cache: step %d failed\n%s", rc, out);
	}
	/* A bad value is named, madvise stays. */
	int rc = run("sometimes", sys_madvise, out, sizeof out);
	CHECK(strstr(out, "NODALLOC_THP") && strstr(out, "sometimes"), "no warning naming the option:\n%s", out);
	CHECK(rc == 0, "bad value: the default (madvise) not in force: step %d", rc);
	return CHECK_DONE();
}
