// SPDX-License-Identifier: MIT
/* Per-CPU counters: many threads increment the same counters while being
 * moved between CPUs (sched_setaffinity); the sums are exact. Run once
 * with rseq (glibc registers it) and once re-executed with
 * GLIBC_TUNABLES=glibc.pthread.rseq=0 (atomic fallback). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define THREADS 4 /* more threads than the machine's CPUs: preemption */
#define ITERS 1000000
#define CAS_ITERS 200000
#define MOVE_EVERY 2048

static nd_percpu_t h_inc, h_add, h_ret, h_cas;
static int cpus[CPU_SETSIZE], ncpus;
static volatile int64_t ret_bad; /* add_return gave a value not above the last */

static void move_to(int i)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpus[i % ncpus], &s);
	sched_setaffinity(0, sizeof s, &s);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % MOVE_EVERY == 0)
			move_to(id + i / MOVE_EVERY);
		nd_percpu_inc(h_inc);
		nd_percpu_add(h_add, 3);
		int64_t r = nd_percpu_add_return(h_ret, 1);
		if (r < 1)
			__atomic_fetch_add(&ret_bad, 1, __ATOMIC_RELAXED);
	}
	/* A counter maintained only with compare-and-exchange on the current
	 * CPU's copy: exact only if a stale comparison never stores. */
	for (int i = 0; i < CAS_ITERS; i++) {
		if (i % MOVE_EVERY == 0)
			move_to(id + 1 + i / MOVE_EVERY);
		int64_t seen = 0;
		for (;;) {
			int64_t prev = nd_percpu_cmpxchg(h_cas, seen, seen + 1);
			if (prev == seen)
				break;
			seen = prev;
		}
	}
	return NULL;
}

/* Signals: a handler that updates the same counter in the middle of the
 * interrupted thread's load-add-store must not be lost (the kernel aborts
 * the interrupted sequence, which then restarts). */
static nd_percpu_t h_sig;
static volatile sig_atomic_t nsig;
static void on_alarm(int sig)
{
	(void)sig;
	nd_percpu_add(h_sig, 1000);
	nsig++;
}

static void signals(void)
{
	h_sig = nd_percpu_alloc(8, 8);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 20 }, { 0, 20 } };
	setitimer(ITIMER_REAL, &it, NULL);
	long n = 0;
	while (nsig < 300 && n < 200000000) {
		nd_percpu_add_return(h_sig, 1);
		n++;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK(nsig >= 300, "only %d signals", (int)nsig);
	CHECK_EQ(nd_percpu_sum(h_sig), n + 1000 * (int64_t)nsig);
}

static int64_t slot(nd_percpu_t h, int cpu)
{
	return *(int64_t *)nd_percpu_ptr(h, cpu);
}

static void run(void)
{
	h_inc = nd_percpu_alloc(8, 8);
	h_add = nd_percpu_alloc(8, 8);
	h_ret = nd_percpu_alloc(8, 8);
	h_cas = nd_percpu_alloc(8, 8);
	CHECK(h_inc && h_add && h_ret && h_cas);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(nd_percpu_sum(h_inc), (int64_t)THREADS * ITERS);
	CHECK_EQ(nd_percpu_sum(h_add), (int64_t)THREADS * ITERS * 3);
	CHECK_EQ(nd_percpu_sum(h_ret), (int64_t)THREADS * ITERS);
	CHECK_EQ(nd_percpu_sum(h_cas), (int64_t)THREADS * CAS_ITERS);
	CHECK_EQ(ret_bad, 0);
	/* The threads really ran on every allowed CPU: each slot got some. */
	for (int i = 0; i < ncpus; i++)
		CHECK(slot(h_inc, cpus[i]) > 0, "CPU %d's slot is %lld", cpus[i],
		      (long long)slot(h_inc, cpus[i]));

	/* Pinned: add_return counts up on the CPU's own copy, which is the
	 * one nd_this_cpu_ptr and nd_percpu_ptr name. */
	for (int i = 0; i < ncpus; i++) {
		move_to(i);
		nd_percpu_t h = nd_percpu_alloc(8, 0);
		CHECK_EQ(nd_percpu_add_return(h, 5), 5);
		CHECK_EQ(nd_percpu_add_return(h, 5), 10);
		CHECK_EQ(nd_percpu_add_return(h, -3), 7);
		CHECK(nd_this_cpu_ptr(h) == nd_percpu_ptr(h, cpus[i]));
		CHECK_EQ(slot(h, cpus[i]), 7);
		CHECK_EQ(nd_percpu_cmpxchg(h, 6, 100), 7); /* no store */
		CHECK_EQ(nd_percpu_cmpxchg(h, 7, 100), 7);
		CHECK_EQ(slot(h, cpus[i]), 100);
		CHECK_EQ(nd_percpu_sum(h), 100);
		nd_percpu_free(h);
	}
	signals();
}

int main(int argc, char **argv)
{
	cpu_set_t s;
	CHECK(sched_getaffinity(0, sizeof s, &s) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s))
			cpus[ncpus++] = c;

	if (argc > 1 && strcmp(argv[1], "no-rseq") == 0) {
		/* Re-executed with glibc's rseq registration turned off. */
		CHECK_EQ(_nd_os_rseq_size(), 0);
		CHECK_EQ(nd_percpu_uses_rseq(), 0);
		run();
		return CHECK_DONE();
	}

	if (_nd_os_rseq_size() > 0)
		CHECK_EQ(nd_percpu_uses_rseq(), 1);
	run();
	move_to(0);

	/* The same with the atomic fallback. */
	pid_t pid = fork();
	if (pid == 0) {
		char *args[] = { argv[0], "no-rseq", NULL };
		char *env[] = { "GLIBC_TUNABLES=glibc.pthread.rseq=0", NULL };
		execve("/proc/self/exe", args, env);
		_exit(127);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fallback run: status %#x", st);
	return CHECK_DONE();
}
