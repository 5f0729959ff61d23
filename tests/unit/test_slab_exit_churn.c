// SPDX-License-Identifier: MIT
/* A thread's exit keeps live threads' borrowed objects on the node (the
 * exchange, slab_remote.c's exit_keep) while the owners of those objects
 * exit too, at the same moment or just after: no object may be lost (a
 * slab counting it out with no list holding it) or handed out twice.
 * Rounds of threads of node 0 (emulated topology) allocate, trade and
 * free each other's objects (borrowed lists past their cap, the
 * exchange), then all exit together; a long-lived owner's objects are
 * freed by the exiting threads, and every fourth round the owner exits
 * too and a new one takes its place. At the end (every thread gone, the
 * main thread's buffer, lists and its node's exchange sent home) each
 * live slab's objects out are all on its remote list: nothing lost. The
 * stamps of live objects are checked on every free (nothing handed out
 * twice). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "borrow_fixture.h"
#include "check.h"

enum { ROUNDS = 32, W = 4, PER = 400, OWN = 600 };

static void *pool[W][PER];
static void *owned[OWN];
static pthread_barrier_t bar, obar;
static unsigned long bad_stamp, leaked_slabs, leaked_objs;

static size_t size_of(int k) { return (size_t)(16 + (k * 37) % 1500); }

static void stamp(void *p, size_t n, unsigned v) { memset(p, (int)(v & 0xff), n < 48 ? n : 48); }

static void check_free(void *p, size_t n, unsigned v)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < (n < 48 ? n : 48); i++)
		if (c[i] != (unsigned char)v) {
			__atomic_fetch_add(&bad_stamp, 1, __ATOMIC_RELAXED);
			break;
		}
	free(p);
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg % W;
	nd_emulate_cpu(me & 1);
	for (int i = 0; i < PER; i++) {
		pool[me][i] = malloc(size_of(i));
		stamp(pool[me][i], size_of(i), (unsigned)(me * 7 + i));
	}
	pthread_barrier_wait(&bar);
	/* free the next worker's objects (borrowed: its slabs' owner lives)
	 * and a share of the owner's */
	int o = (me + 1) % W;
	for (int i = 0; i < PER; i++)
		check_free(pool[o][i], size_of(i), (unsigned)(o * 7 + i));
	for (int i = me; i < OWN; i += W)
		if (owned[i]) {
			check_free(owned[i], size_of(i), (unsigned)(1000 + i));
			owned[i] = NULL;
		}
	/* some mallocs of the classes (they take borrowed objects back) */
	void *tmp[64];
	for (int i = 0; i < 64; i++) {
		tmp[i] = malloc(size_of(i * 5));
		stamp(tmp[i], size_of(i * 5), 77u);
	}
	for (int i = 0; i < 64; i += 2)
		check_free(tmp[i], size_of(i * 5), 77u);
	pthread_barrier_wait(&bar);
	for (int i = 1; i < 64; i += 2) /* the rest freed by their owner now */
		check_free(tmp[i], size_of(i * 5), 77u);
	return NULL; /* all exit together */
}

static int owner_exit;

static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	for (;;) {
		for (int i = 0; i < OWN; i++) {
			owned[i] = malloc(size_of(i));
			stamp(owned[i], size_of(i), (unsigned)(1000 + i));
		}
		pthread_barrier_wait(&obar); /* objects ready */
		pthread_barrier_wait(&obar); /* the round's workers are gone */
		if (__atomic_load_n(&owner_exit, __ATOMIC_ACQUIRE))
			return NULL;
	}
}

static void check_hdr(const _nd_slab_t *s, void *arg)
{
	(void)arg;
	const _nd_heap_t *hp = __atomic_load_n(&s->heap, __ATOMIC_RELAXED);
	if (!hp || hp->owner == _nd_tls)
		return; /* released, or the main thread's (glibc keeps the DTVs of
			 * the threads it made with their cached stacks) */
	uint32_t out = s->used + s->fbias, rem = (uint32_t)(s->tfree >> ND_TF_CNT_SHIFT);
	if (out != rem) {
		leaked_slabs++;
		leaked_objs += out - rem;
		const _nd_heap_t *h = s->heap;
		fprintf(stderr, "slab %p: %u-byte objects, used %u fbias %u remote %u, heap %p owner %p node %d pol %p tp %#lx\n",
			(void *)s, s->size, s->used, s->fbias, rem, (void *)h, (void *)h->owner, h->node, (void *)h->pol,
			(unsigned long)s->tp);
	}
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(0);
	free(malloc(16)); /* the main thread's node heap: node 0's lists */
	pthread_barrier_init(&bar, NULL, W);
	pthread_barrier_init(&obar, NULL, 2);
	pthread_t ot;
	unsigned long kept = 0; /* objects the exits left in the exchange */
	pthread_create(&ot, NULL, owner, NULL);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_barrier_wait(&obar);
		pthread_t th[W];
		for (int i = 0; i < W; i++)
			pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(round * W + i));
		for (int i = 0; i < W; i++)
			pthread_join(th[i], NULL);
		kept += _nd_slab_xfer_count(0);
		for (int i = 0; i < OWN; i++) /* those the workers left */
			if (owned[i]) {
				check_free(owned[i], size_of(i), (unsigned)(1000 + i));
				owned[i] = NULL;
			}
		bool last = round == ROUNDS - 1;
		if (last || round % 4 == 3)
			__atomic_store_n(&owner_exit, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&obar);
		if (last || round % 4 == 3) {
			pthread_join(ot, NULL);
			if (!last) {
				__atomic_store_n(&owner_exit, 0, __ATOMIC_RELEASE);
				pthread_create(&ot, NULL, owner, NULL);
			}
		}
	}
	_nd_slab_flush_remote();
	CHECK_EQ(_nd_slab_xfer_count(0), 0);
	_nd_meta_hdr_each(check_hdr, NULL);
	CHECK(leaked_slabs == 0, "%lu slabs count %lu objects out that no list holds", leaked_slabs, leaked_objs);
	CHECK(kept > 0 || getenv("NODALLOC_CHECK"), "the exits kept objects in the exchange"); /* check mode borrows none */
	CHECK_EQ(bad_stamp, 0);
	return CHECK_DONE();
}
