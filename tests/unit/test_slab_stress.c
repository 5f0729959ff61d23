// SPDX-License-Identifier: MIT
/* Deterministic multi-thread stress: objects of many sizes filled with a
 * pattern, half of them freed by another thread (remote frees), some
 * realloc'd on the way; then thread churn (2000 short threads leaving
 * objects behind for others to free), checking that RSS stays flat. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define NT 4
#define ROUNDS 60
#define PER 400

typedef struct obj {
	unsigned char *p;
	size_t size;
	unsigned char pat;
} obj_t;

typedef struct queue {
	pthread_mutex_t mu;
	obj_t *items;
	size_t n, cap;
} queue_t;

static queue_t queues[NT];
static long corrupt, handled;

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = rng_next(s);
	switch (r % 16) {
	case 0: return 40000 + r % 300000;   /* large */
	case 1: case 2: return 1024 + r % 31000;
	default: return 1 + r % 600;
	}
}

static void fill(obj_t *o) { memset(o->p, o->pat, o->size); }

static void verify_free(obj_t *o)
{
	for (size_t i = 0; i < o->size; i++)
		if (o->p[i] != o->pat) {
			__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
			break;
		}
	if (malloc_usable_size(o->p) < o->size)
		__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
	free(o->p);
	__atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
}

static void push(int q, obj_t o)
{
	queue_t *Q = &queues[q];
	pthread_mutex_lock(&Q->mu);
	if (Q->n == Q->cap) {
		Q->cap = Q->cap ? Q->cap * 2 : 256;
		Q->items = realloc(Q->items, Q->cap * sizeof(obj_t));
	}
	Q->items[Q->n++] = o;
	pthread_mutex_unlock(&Q->mu);
}

static void drain(int q)
{
	queue_t *Q = &queues[q];
	pthread_mutex_lock(&Q->mu);
	size_t n = Q->n;
	obj_t *items = Q->items;
	Q->items = NULL;
	Q->n = Q->cap = 0;
	pthread_mutex_unlock(&Q->mu);
	for (size_t i = 0; i < n; i++)
		verify_free(&items[i]);
	free(items);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1);
	obj_t *mine = malloc(PER * sizeof(obj_t));
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < PER; k++) {
			obj_t o = { NULL, pick_size(&s), (unsigned char)(id * 31 + r * 7 + k) };
			o.p = malloc(o.size);
			if (!o.p) {
				__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
				o.size = 0;
				continue;
			}
			fill(&o);
			if (k % 5 == 0) { /* realloc keeps the prefix */
				size_t ns = pick_size(&s);
				unsigned char *q = realloc(o.p, ns);
				if (!q) {
					__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
				} else {
					size_t keep = ns < o.size ? ns : o.size;
					for (size_t i = 0; i < keep; i++)
						if (q[i] != o.pat) {
							__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
							break;
						}
					o.p = q;
					o.size = ns;
					fill(&o);
				}
			}
			mine[k] = o;
		}
		for (int k = 0; k < PER; k++) {
			if (!mine[k].p)
				continue;
			if (rng_next(&s) & 1)
				push((id + 1 + (int)(rng_next(&s) % (NT - 1))) % NT, mine[k]);
			else
				verify_free(&mine[k]);
		}
		drain(id);
	}
	free(mine);
	return NULL;
}

/* ---- churn ---- */

static obj_t *left;
static size_t nleft;
static pthread_mutex_t left_mu = PTHREAD_MUTEX_INITIALIZER;

static void *short_thread(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 0x2545F4914F6CDD1Dull + 1;
	obj_t o[64];
	for (int k = 0; k < 64; k++) {
		o[k].size = k == 0 ? 70000 : 1 + rng_next(&s) % 3000;
		o[k].pat = (unsigned char)(k + (uintptr_t)arg);
		o[k].p = malloc(o[k].size);
		if (!o[k].p) {
			__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
			o[k].size = 0;
			continue;
		}
		fill(&o[k]);
	}
	/* three quarters freed here, the rest after this thread is gone */
	pthread_mutex_lock(&left_mu);
	for (int k = 0; k < 64; k++) {
		if (k % 4 == 3)
			left[nleft++] = o[k];
	}
	pthread_mutex_unlock(&left_mu);
	for (int k = 0; k < 64; k++)
		if (k % 4 != 3 && o[k].p)
			verify_free(&o[k]);
	return NULL;
}

/* What the churn check compares: resident KiB, or under ThreadSanitizer
 * (whose shadow memory and thread histories grow with every thread and
 * are counted in RSS) the library's own committed KiB over all nodes. */
static long rss_kib(void)
{
#ifdef __SANITIZE_THREAD__
	nd_stats_t st;
	st.version = ND_STATS_VERSION;
	nd_stats_get(&st);
	uint64_t b = 0;
	for (int n = 0; n < st.node_limit && n < ND_STATS_NODES; n++)
		b += st.nodes[n].bytes_committed;
	return (long)(b >> 10);
#else
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
#endif
}

/* The same run in check mode (NODALLOC_CHECK=1: every free searched on
 * the owner's lists, every allocation validated), in a child. */
static int run_checked(const char *self)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("NODALLOC_CHECK", "1", 1);
		execl(self, self, "checked", (char *)NULL);
		_exit(127);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	int checked = argc > 1 && !strcmp(argv[1], "checked");
	for (int i = 0; i < NT; i++)
		pthread_mutex_init(&queues[i].mu, NULL);
	pthread_t t[NT];
	for (int i = 0; i < NT; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NT; i++)
		drain(i);
	CHECK_EQ(corrupt, 0);
	CHECK_EQ(handled, (long)NT * ROUNDS * PER);

	/* churn: 25 rounds of 80 threads, 16 alive at a time */
	enum { CROUNDS = 25, PERROUND = 80, BATCH = 16 };
	left = malloc(PERROUND * 16 * sizeof(obj_t));
	long rss_after[CROUNDS];
	for (int r = 0; r < CROUNDS; r++) {
		for (int b = 0; b < PERROUND; b += BATCH) {
			pthread_t ct[BATCH];
			for (int i = 0; i < BATCH; i++)
				CHECK_EQ(pthread_create(&ct[i], NULL, short_thread, (void *)(uintptr_t)(r * PERROUND + b + i)), 0);
			for (int i = 0; i < BATCH; i++)
				pthread_join(ct[i], NULL);
		}
		/* the dead threads' objects, freed from here */
		for (size_t i = 0; i < nleft; i++)
			if (left[i].p)
				verify_free(&left[i]);
		nleft = 0;
		rss_after[r] = rss_kib();
	}
	CHECK_EQ(corrupt, 0);
	/* A leak of even one page per thread would add 6 MiB over the last
	 * 1600 threads; the page level's purging makes RSS wobble by a few
	 * MiB, so compare the peaks of early and late rounds. */
	long base = 0, last = 0;
	for (int r = 1; r < 6; r++)
		base = rss_after[r] > base ? rss_after[r] : base;
	for (int r = CROUNDS - 5; r < CROUNDS; r++)
		last = rss_after[r] > last ? rss_after[r] : last;
	printf("churn: peak footprint (rss_kib) in rounds 2-6 %ld KiB, in rounds %d-%d %ld KiB\n", base, CROUNDS - 4, CROUNDS, last);
	CHECK(last <= base + 6144, "footprint (rss_kib) grew across churn: %ld -> %ld KiB", base, last);
	free(left);
	if (!checked) {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		CHECK(n > 0);
		exe[n > 0 ? n : 0] = '\0';
		CHECK_EQ(run_checked(exe), 0);
	} else {
		CHECK(_nd_opt_int(ND_OPT_CHECK) == 1);
	}
	return CHECK_DONE();
}
