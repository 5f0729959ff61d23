// SPDX-License-Identifier: MIT
/*
 * bench_percpu: cost of one counter increment and memory per counter.
 *
 *  1. Increment cost, 1 and 2 threads (thread i pinned to allowed CPU i):
 *       percpu   nd_percpu_inc (rseq when available: no lock, no atomic)
 *       atomic   one shared counter, lock xadd (the cache line ping-pongs)
 *       thread   a per-thread (TLS) counter, plain add: the floor
 *     and, re-executed with GLIBC_TUNABLES=glibc.pthread.rseq=0, the
 *     per-CPU counter's atomic fallback (lock add on the CPU's slot).
 *     Best of REPS runs (the machine is shared: load only adds time).
 *  2. Memory per 4-byte counter at N CPUs: this design (4 bytes per CPU,
 *     packed) vs the pointer-array design the seed replaced (N pointers +
 *     N objects: the seed's 32-byte SLAB minimum, or a cache line each).
 *
 * Usage: bench_percpu [ops-per-thread]   (default 20000000)
 * Built by bench/part.cmake (linked with the whole static library).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nodalloc.h"

#define REPS 5

static long ops = 20000000;
static nd_percpu_t h;
static int64_t shared_ctr __attribute__((aligned(64)));
static __thread volatile int64_t thread_ctr;
static int cpus[CPU_SETSIZE], ncpus;

enum { M_PERCPU, M_ATOMIC, M_THREAD, M__N };
static const char *const mname[M__N] = { "percpu", "atomic", "thread" };

typedef struct {
	int method, idx;
	pthread_barrier_t *bar;
	double cpu_s; /* the thread's CPU time in its loop */
} arg_t;

static double now(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *p)
{
	arg_t *a = p;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpus[a->idx % ncpus], &s);
	sched_setaffinity(0, sizeof s, &s);
	pthread_barrier_wait(a->bar);
	double t0 = now(CLOCK_THREAD_CPUTIME_ID);
	switch (a->method) {
	case M_PERCPU:
		for (long i = 0; i < ops; i++)
			nd_percpu_inc(h);
		break;
	case M_ATOMIC:
		for (long i = 0; i < ops; i++)
			__atomic_fetch_add(&shared_ctr, 1, __ATOMIC_RELAXED);
		break;
	case M_THREAD:
		for (long i = 0; i < ops; i++)
			thread_ctr++;
		break;
	}
	a->cpu_s = now(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

/* CPU ns per increment, averaged over the threads, best of REPS. Thread
 * CPU time, not wall time: with other programs on the machine a thread is
 * often descheduled, and that is not the increment's cost. */
static double run(int method, int nthreads)
{
	double best = 1e30;
	for (int r = 0; r < REPS; r++) {
		pthread_barrier_t bar;
		pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
		pthread_t t[8];
		arg_t a[8];
		int64_t before = method == M_PERCPU ? nd_percpu_sum(h) : shared_ctr;
		for (int i = 0; i < nthreads; i++) {
			a[i] = (arg_t){ method, i, &bar, 0 };
			pthread_create(&t[i], NULL, worker, &a[i]);
		}
		pthread_barrier_wait(&bar);
		double dt = 0;
		for (int i = 0; i < nthreads; i++) {
			pthread_join(t[i], NULL);
			dt += a[i].cpu_s / nthreads;
		}
		pthread_barrier_destroy(&bar);
		int64_t after = method == M_PERCPU ? nd_percpu_sum(h) : shared_ctr;
		if (method != M_THREAD && after - before != (int64_t)nthreads * ops) {
			fprintf(stderr, "bench_percpu: %s lost updates: %lld != %lld\n", mname[method],
				(long long)(after - before), (long long)nthreads * ops);
			exit(1);
		}
		if (dt < best)
			best = dt;
	}
	return best * 1e9 / (double)ops;
}

int main(int argc, char **argv)
{
	int fallback_child = argc > 1 && strcmp(argv[1], "--fallback") == 0;
	if (argc > 1 + fallback_child)
		ops = atol(argv[1 + fallback_child]);
	if (ops <= 0)
		ops = 20000000;
	cpu_set_t s;
	sched_getaffinity(0, sizeof s, &s);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s))
			cpus[ncpus++] = c;
	h = nd_percpu_alloc(8, 8);
	if (!h) {
		perror("nd_percpu_alloc");
		return 1;
	}

	if (fallback_child) {
		/* Re-executed with rseq off: print the fallback's figures only. */
		printf("%d %.3f %.3f\n", nd_percpu_uses_rseq(), run(M_PERCPU, 1), run(M_PERCPU, 2));
		return 0;
	}

	printf("bench_percpu: %ld increments per thread, best of %d; %d CPUs allowed; "
	       "per-CPU operations use %s\n",
	       ops, REPS, ncpus, nd_percpu_uses_rseq() ? "rseq" : "the atomic fallback");
	double ns[M__N][3];
	for (int n = 1; n <= 2; n++)
		for (int m = 0; m < M__N; m++)
			ns[m][n] = run(m, n);

	/* The fallback, in a child with glibc's rseq registration off. */
	double fb[3] = { 0, 0, 0 };
	int fb_rseq = -1;
	int pfd[2];
	if (pipe(pfd) == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			dup2(pfd[1], 1);
			char nbuf[32];
			snprintf(nbuf, sizeof nbuf, "%ld", ops);
			char *args[] = { argv[0], "--fallback", nbuf, NULL };
			char *env[] = { "GLIBC_TUNABLES=glibc.pthread.rseq=0", NULL };
			execve("/proc/self/exe", args, env);
			_exit(127);
		}
		close(pfd[1]);
		char buf[128] = "";
		ssize_t k = read(pfd[0], buf, sizeof buf - 1);
		buf[k > 0 ? k : 0] = 0;
		close(pfd[0]);
		waitpid(pid, NULL, 0);
		if (sscanf(buf, "%d %lf %lf", &fb_rseq, &fb[1], &fb[2]) != 3)
			fb_rseq = -1;
	}

	printf("\nincrement cost, CPU ns per increment per thread (lower is better)\n");
	printf("%-34s %10s %10s\n", "method", "1 thread", "2 threads");
	printf("%-34s %10.2f %10.2f\n", "percpu nd_percpu_inc (rseq)", ns[M_PERCPU][1], ns[M_PERCPU][2]);
	printf("%-34s %10.2f %10.2f\n", "shared atomic counter (lock xadd)", ns[M_ATOMIC][1], ns[M_ATOMIC][2]);
	printf("%-34s %10.2f %10.2f\n", "per-thread counter (plain add)", ns[M_THREAD][1], ns[M_THREAD][2]);
	if (fb_rseq == 0)
		printf("%-34s %10.2f %10.2f\n", "percpu, atomic fallback (no rseq)", fb[1], fb[2]);
	else
		printf("%-34s (not measured)\n", "percpu, atomic fallback (no rseq)");
	printf("ratios: atomic/percpu %.2fx (1 thread) %.2fx (2 threads); "
	       "percpu/thread %.2fx %.2fx",
	       ns[M_ATOMIC][1] / ns[M_PERCPU][1], ns[M_ATOMIC][2] / ns[M_PERCPU][2],
	       ns[M_PERCPU][1] / ns[M_THREAD][1], ns[M_PERCPU][2] / ns[M_THREAD][2]);
	if (fb_rseq == 0)
		printf("; fallback/rseq %.2fx %.2fx", fb[1] / ns[M_PERCPU][1], fb[2] / ns[M_PERCPU][2]);
	printf("\n");

	/* Memory per 4-byte counter. The measured figure: what one more
	 * counter adds to nd_percpu_bytes (the seed's cpu_bytes). */
	size_t b0 = nd_percpu_bytes();
	nd_percpu_t c4 = nd_percpu_alloc(4, 0);
	size_t b1 = nd_percpu_bytes();
	nd_percpu_t c4b = nd_percpu_alloc(4, 0);
	printf("\nmemory per 4-byte counter (bytes over all CPUs)\n");
	printf("measured here: nd_percpu_alloc(4) adds %zu bytes at %d CPUs; the next one is %ld bytes "
	       "further in the same line\n",
	       b1 - b0, nd_cpu_limit(), (long)(c4b - c4));
	printf("%6s %12s %18s %18s %10s %10s\n", "CPUs", "percpu 4N", "ptr+32B obj 40N", "ptr+line 72N",
	       "40N/4N", "72N/4N");
	int ns_list[] = { 2, 4, 32, 64, 256, 1024, nd_cpu_limit() };
	for (unsigned i = 0; i < sizeof ns_list / sizeof ns_list[0]; i++) {
		long n = ns_list[i];
		printf("%6ld %12ld %18ld %18ld %9.1fx %9.1fx%s\n", n, 4 * n, 40 * n, 72 * n, 10.0, 18.0,
		       i + 1 == sizeof ns_list / sizeof ns_list[0] ? "  (this machine)" : "");
	}
	printf("(seed at 32 CPUs: 1280 B vs 128 B; a counter shares its CPU's cache line with 15 "
	       "others here, vs one line per object per CPU)\n");
	printf("RESULT bench=percpu ns_percpu_1t=%.2f ns_percpu_2t=%.2f ns_atomic_1t=%.2f "
	       "ns_atomic_2t=%.2f ns_thread_1t=%.2f ns_thread_2t=%.2f ns_fallback_1t=%.2f "
	       "ns_fallback_2t=%.2f bytes_per_counter=%zu\n",
	       ns[M_PERCPU][1], ns[M_PERCPU][2], ns[M_ATOMIC][1], ns[M_ATOMIC][2], ns[M_THREAD][1],
	       ns[M_THREAD][2], fb[1], fb[2], b1 - b0);
	nd_percpu_free(c4);
	nd_percpu_free(c4b);
	nd_percpu_free(h);
	return 0;
}
