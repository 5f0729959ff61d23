// SPDX-License-Identifier: MIT
/* Spans on the exit paths (594f7d2: _nd_slab_owns masks ND_TP_FLAGS, the
 * span bit too). Thread A makes 8 slabs of 128 B objects a quarter full;
 * T, a live thread of the node, frees 16 of them (borrowed: its list);
 * A exits, B adopts A's parked heap and takes a span (two free slots of
 * one slab S: S's stamp is B | ND_TP_SPAN); T exits and its list goes to
 * the node's exchange (another live thread's objects). So the exchange
 * holds objects of B's own slab S, which holds a span:
 *  - "flush": B's flush of the exchange (bw_send) puts them back onto S,
 *    not onto S's remote list as another thread's free would;
 *  - "exit": B's exit sends them home (split_live), onto S: none stays
 *    in the exchange, where they pinned S's parked heap.
 * Each case runs in a child (exit codes below). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"
#include "pin_fixture.h"

#define K 2048 /* 128 B objects: 8 slabs of 256 */
#define NB 16  /* freed by T: 2 per slab */
static void *obj[K];
static void *bor[NB];
static pthread_barrier_t bar_a, bar_t, bar_b;

struct b_state {
	bool flush;
	const _nd_slab_t *s; /* the span's slab */
	unsigned of_s;       /* objects of s T freed */
	int rc;              /* 0 or an exit code */
};

static const _nd_slab_t *slab_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? (const _nd_slab_t *)d->user : NULL;
}

/* A: the slabs, a quarter full (objects 4j kept), then lives until T
 * has borrowed. */
static void *thread_a(void *arg)
{
	(void)arg;
	for (int i = 0; i < K; i++)
		if (!(obj[i] = malloc(120)))
			abort();
	for (int i = 0; i < K; i++)
		if (i % 4) {
			free(obj[i]);
			obj[i] = NULL;
		}
	pthread_barrier_wait(&bar_a);
	pthread_barrier_wait(&bar_a);
	return NULL;
}

/* T: a heap of its own, then frees 2 kept objects of each slab (A
 * alive: borrowed, on T's list); lives until B took its span. */
static void *thread_t(void *arg)
{
	int *pending = arg;
	void *volatile first = malloc(24);
	free(first);
	for (int j = 0; j < NB; j++)
		free(bor[j]);
	*pending = (int)_nd_slab_remote_pending();
	pthread_barrier_wait(&bar_t);
	pthread_barrier_wait(&bar_t);
	return NULL;
}

static uintptr_t tfree_of(const _nd_slab_t *s)
{
	return __atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & ND_TF_PTR;
}

/* B: adopts A's heap (its first malloc), takes a span, waits for T's
 * exit; "flush": flushes the exchange. The span stays out. */
static void *thread_b(void *arg)
{
	struct b_state *r = arg;
	void *volatile first = malloc(24);
	free(first);
	if (slab_of(obj[0])->heap != _nd_tls->heap) {
		r->rc = 6;
		goto out;
	}
	void *p = malloc(250);
	r->s = p ? slab_of(p) : NULL;
	if (!r->s || r->s->size != 128 || !(__atomic_load_n(&r->s->tp, __ATOMIC_RELAXED) & ND_TP_SPAN)) {
		r->rc = 3;
		goto out;
	}
	for (int j = 0; j < NB; j++)
		r->of_s += slab_of(bor[j]) == r->s;
	pthread_barrier_wait(&bar_b); /* T exits */
	pthread_barrier_wait(&bar_b);
	if (_nd_slab_xfer_count(0) != NB) {
		r->rc = 8; /* T's list did not go to the exchange */
		return NULL;
	}
	if (r->flush) {
		uint32_t used = __atomic_load_n(&r->s->used, __ATOMIC_RELAXED);
		_nd_slab_flush_remote();
		if (tfree_of(r->s) || __atomic_load_n(&r->s->used, __ATOMIC_RELAXED) != used - r->of_s)
			r->rc = 4; /* sent home as another thread's free */
	}
	return NULL;
out:
	pthread_barrier_wait(&bar_b);
	pthread_barrier_wait(&bar_b);
	return NULL;
}

static int run_case(bool flush)
{
	pthread_t a, t, b;
	pthread_barrier_init(&bar_a, NULL, 2);
	pthread_barrier_init(&bar_t, NULL, 2);
	pthread_barrier_init(&bar_b, NULL, 2);
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_barrier_wait(&bar_a);
	for (int j = 0; j < NB; j++)
		bor[j] = obj[(j / 2) * 256 + (j % 2) * 4];
	int pending = 0;
	pthread_create(&t, NULL, thread_t, &pending);
	pthread_barrier_wait(&bar_t);
	if (pending != NB)
		return 9; /* not borrowed */
	pthread_barrier_wait(&bar_a);
	pthread_join(a, NULL);
	struct b_state r = { flush, NULL, 0, 0 };
	pthread_create(&b, NULL, thread_b, &r);
	pthread_barrier_wait(&bar_b);
	pthread_barrier_wait(&bar_t);
	pthread_join(t, NULL);
	pthread_barrier_wait(&bar_b);
	pthread_join(b, NULL);
	if (r.rc)
		return r.rc;
	if (r.of_s == 0)
		return 3;
	/* B exited: the exchange holds nothing of its own slabs */
	if (_nd_slab_xfer_count(0) != 0)
		return 5;
	if (tfree_of(r.s))
		return 4;
	return 0;
}

int main(int argc, char **argv)
{
	pin_here(); /* B's malloc(250) reaches the span search (pin_fixture.h) */
	if (argc > 1)
		return run_case(!strcmp(argv[1], "flush"));
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	static const char *const cases[] = { "flush", "exit" };
	for (int i = 0; i < 2; i++) {
		char out[2048];
		char *const av[] = { exe, (char *)cases[i], NULL };
		int st = run_child(exe, av, NULL, NULL, false, out, sizeof out);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "case %s: status %d (exit 3: no span, 4: the owner's objects sent to its remote list, 5: left in "
		      "the exchange, 6: not adopted, 8: T's list not in the exchange, 9: not borrowed), stderr: %s",
		      cases[i], WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
	}
	return CHECK_DONE();
}
