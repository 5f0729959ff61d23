// SPDX-License-Identifier: MIT
/*
 * Shared helpers of the workload programs (bench/wl_*.c). The workloads
 * use only the standard malloc/free so that any allocator can be put
 * under them with LD_PRELOAD; they never link nodalloc.
 *
 * Every workload prints one machine-readable line on stdout:
 *   RESULT workload=<name> threads=<t> ops=<n> time_s=<s> mops=<m> [extra=...]
 * where ops counts malloc/free pairs (one malloc plus its free) and time_s
 * covers the measured loop only (not process start or the final cleanup).
 */
#ifndef ND_BENCH_WL_COMMON_H
#define ND_BENCH_WL_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double wl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: cheap, deterministic for a given seed, good enough to pick
 * sizes and slots. State must never be 0. */
static inline uint64_t wl_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* uniform in [lo, hi] */
static inline size_t wl_range(uint64_t *s, size_t lo, size_t hi)
{
	return lo + (size_t)((wl_rand(s) >> 11) % (hi - lo + 1));
}

/* A size from three tiers: small_pct% of 16..256 B, mid_pct% of
 * 257..2048 B, the rest 2049..big_max B. */
static inline size_t wl_tier_size(uint64_t *s, unsigned small_pct, unsigned mid_pct, size_t big_max)
{
	unsigned r = (unsigned)(wl_rand(s) % 100);
	if (r < small_pct)
		return wl_range(s, 16, 256);
	if (r < small_pct + mid_pct)
		return wl_range(s, 257, 2048);
	return wl_range(s, 2049, big_max);
}

/* Parses a positive count argument; exits with a message naming it. */
static inline long wl_arg(int argc, char **argv, int i, long dflt, const char *what)
{
	if (i >= argc)
		return dflt;
	char *end;
	errno = 0;
	long v = strtol(argv[i], &end, 10);
	if (errno || *end || v <= 0) {
		fprintf(stderr, "%s: bad %s '%s': expected a positive integer\n", argv[0], what,
			argv[i]);
		exit(2);
	}
	return v;
}

/* The seed of thread i (of nt) in round r of the thread-churn workloads. */
static inline uint64_t wl_seed(long r, long nt, long i)
{
	return 0x9E3779B97F4A7C15ULL * (uint64_t)(r * nt + i + 1);
}

/* Starts fn(arg) in *th; exits with a message if it cannot. */
static inline void wl_spawn(pthread_t *th, void *(*fn)(void *), void *arg, const char *prog)
{
	if (pthread_create(th, NULL, fn, arg)) {
		fprintf(stderr, "%s: pthread_create failed\n", prog);
		exit(1);
	}
}

static inline void wl_oom(const char *prog, size_t size)
{
	fprintf(stderr, "%s: malloc(%zu) failed: out of memory\n", prog, size);
	exit(1);
}

/* The thread count of argument i (at most WL_MAXT), or exit 2. */
#define WL_MAXT 64
static inline long wl_threads_arg(int argc, char **argv, int i, long dflt)
{
	long nt = wl_arg(argc, argv, i, dflt, "threads");
	if (nt > WL_MAXT) {
		fprintf(stderr, "%s: bad threads '%ld': expected at most %d\n", argv[0], nt, WL_MAXT);
		exit(2);
	}
	return nt;
}

/* Runs fn((void *)i) in nt threads (i = 0..nt-1) and joins them: the
 * seconds it took. */
static inline double wl_run_threads(long nt, void *(*fn)(void *), const char *prog)
{
	pthread_t th[WL_MAXT];
	double t0 = wl_now();
	for (long i = 0; i < nt; i++)
		wl_spawn(&th[i], fn, (void *)(uintptr_t)i, prog);
	for (long i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	return wl_now() - t0;
}

/* Current resident set size in KiB from /proc/self/statm (0 if unknown). */
/* Slot churn of wl_large and wl_spread: a new block of sz bytes, written
 * whole (as C++'s make_unique<char[]>(n)), then the slot's old block
 * freed, as an assignment of a new buffer would. */
static inline void wl_slot_replace(char **slot, size_t sz, long i, const char *prog)
{
	char *p = malloc(sz);
	if (!p)
		wl_oom(prog, sz);
	memset(p, (int)(i & 0x7f) + 1, sz);
	free(*slot);
	*slot = p;
}

/* Frees the n slots and their array: how many blocks lost their contents. */
static inline long wl_slots_free(char **buf, long n)
{
	long bad = 0;
	for (long k = 0; k < n; k++) {
		if (buf[k] && buf[k][0] == 0)
			bad++;
		free(buf[k]);
	}
	free(buf);
	return bad;
}

static inline long wl_rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = 0;
	fclose(f);
	return res * 4; /* pages of 4 KiB on x86-64 */
}

static inline void wl_result(const char *name, int threads, long ops, double t, const char *extra)
{
	printf("RESULT workload=%s threads=%d ops=%ld time_s=%.6f mops=%.4g%s%s\n", name, threads,
	       ops, t, t > 0 ? (double)ops / t / 1e6 : 0.0, extra && *extra ? " " : "",
	       extra ? extra : "");
	fflush(stdout);
}

#endif
