// SPDX-License-Identifier: MIT
/* A thread's exit purges the free pages of its partial slabs of the
 * classes above 2 KiB (slab_purge.c, _nd_slab_purge_park) while other
 * threads free its objects (borrowed lists on its node, remote frees from
 * the other node), and the next threads adopt the parked heaps and take
 * the withheld objects back (_nd_slab_unpurge) while objects of those
 * heaps kept from earlier rounds are freed, and main purges the parked
 * heaps meanwhile (malloc_trim's walk) (audit19: a stress of the
 * races thrpeak2 added; no bug found). Each object carries its own stamp
 * over its whole length (a purged page under a live object reads zero),
 * checked at its free: nothing handed out twice, no live page given back.
 * At the end (every worker gone, main's lists and node 0's exchange sent
 * home) each live slab's objects out are all on its remote list: none
 * lost. Emulated: node 0 CPUs 0-1, node 1 CPUs 2-3. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "borrow_fixture.h"
#include "check.h"

enum { ROUNDS = 16, W = 4, PER = 96, HELD = 3 };

static unsigned char *pool[W][PER];
static unsigned char *held[HELD][W][PER / 4]; /* kept alive for HELD - 1 rounds */
static unsigned held_v[HELD][W][PER / 4];
static pthread_barrier_t bar;
static unsigned long bad_stamp, leaked_slabs, leaked_objs;

/* 2.1 .. 20 KiB: the classes the exit purges */
static size_t size_of(int i) { return 2100 + (size_t)(i * 1237) % 18000; }

static unsigned val_of(int round, int w, int i) { return (unsigned)(round * 131 + w * 31 + i) % 251 + 1; }

static void stamp(unsigned char *p, size_t n, unsigned v) { memset(p, (int)v, n); }

/* the first and last 16 bytes and one in every 256: a page read as zero,
 * or another object's stamp, shows */
static void check_free(unsigned char *p, size_t n, unsigned v)
{
	bool ok = true;
	for (size_t j = 0; j < n; j += (j < 16 || j + 16 >= n) ? 1 : 256)
		ok &= p[j] == (unsigned char)v;
	ok &= p[n - 1] == (unsigned char)v;
	if (!ok)
		__atomic_fetch_add(&bad_stamp, 1, __ATOMIC_RELAXED);
	free(p);
}

static int cur_round;

/* w 0..W-2 on node 0 (CPUs 0, 1, 0): allocate, free one in four of their
 * own (partial slabs) and one in four of the next one's (borrowed), hold
 * one in four; then the even ones exit at once while worker 1 and w W-1,
 * on node 1 (allocates nothing: its frees of node 0's objects go home by
 * its buffer), free their objects left and earlier rounds' held ones */
static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg, r = cur_round;
	bool remote = me == W - 1;
	nd_emulate_cpu(remote ? 2 : me & 1);
	if (!remote)
		for (int i = 0; i < PER; i++) {
			pool[me][i] = malloc(size_of(i));
			if (!pool[me][i])
				abort(); /* CHECK's counters are main's */
			stamp(pool[me][i], size_of(i), val_of(r, me, i));
		}
	pthread_barrier_wait(&bar);
	if (!remote) {
		for (int i = 1; i < PER; i += 4)
			check_free(pool[me][i], size_of(i), val_of(r, me, i));
		int o = (me + 1) % (W - 1);
		for (int i = 2; i < PER; i += 4)
			check_free(pool[o][i], size_of(i), val_of(r, o, i));
		for (int i = 0; i < PER; i += 4) {
			held[r % HELD][me][i / 4] = pool[me][i];
			held_v[r % HELD][me][i / 4] = val_of(r, me, i);
		}
	}
	pthread_barrier_wait(&bar);
	if (me % 2 == 0)
		return NULL; /* exits (purge, park) while the others free its objects */
	/* the even workers' 3 mod 4, half each, while they exit */
	for (int e = 0; e < W - 1; e += 2)
		for (int i = 3; i < PER; i += 4)
			if ((i / 4) % 2 == (remote ? 1 : 0))
				check_free(pool[e][i], size_of(i), val_of(r, e, i));
	/* those held two rounds ago: into parked or adopted heaps */
	int hr = (r + 1) % HELD;
	for (int w = remote ? 2 : 0; w < (remote ? 3 : 2); w++)
		for (int i = 0; i < PER / 4; i++)
			if (held[hr][w][i]) {
				check_free(held[hr][w][i], size_of(4 * i), held_v[hr][w][i]);
				held[hr][w][i] = NULL;
			}
	if (!remote) /* its own 3 mod 4 */
		for (int i = 3; i < PER; i += 4)
			check_free(pool[me][i], size_of(i), val_of(r, me, i));
	return NULL;
}

static void check_hdr(const _nd_slab_t *s, void *arg)
{
	(void)arg;
	const _nd_heap_t *hp = __atomic_load_n(&s->heap, __ATOMIC_RELAXED);
	if (!hp || hp->owner == _nd_tls)
		return; /* released, or the main thread's */
	uint32_t out = s->used + s->fbias, rem = (uint32_t)(s->tfree >> ND_TF_CNT_SHIFT);
	if (out != rem) {
		leaked_slabs++;
		leaked_objs += out - rem;
		fprintf(stderr, "slab %p: %u-byte objects, used %u fbias %u remote %u, purged %#lx\n", (void *)s, s->size,
			s->used, s->fbias, rem, (unsigned long)s->purged);
	}
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(0);
	free(malloc(16)); /* main's node heap: node 0's lists */
	CHECK(_nd_slab_class_size(_nd_slab_class_of(size_of(0))) > 2048, "the sizes are of classes the exit purges");
	pthread_barrier_init(&bar, NULL, W);
	for (int r = 0; r < ROUNDS; r++) {
		cur_round = r;
		pthread_t th[W];
		for (int i = 0; i < W; i++)
			CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
		if (r % 2)
			_nd_heap_trim_parked(); /* malloc_trim's: parked heaps purged while threads park and adopt */
		for (int i = 0; i < W; i++)
			pthread_join(th[i], NULL);
	}
	for (int h = 0; h < HELD; h++)
		for (int w = 0; w < W; w++)
			for (int i = 0; i < PER / 4; i++)
				if (held[h][w][i])
					check_free(held[h][w][i], size_of(4 * i), held_v[h][w][i]);
	_nd_slab_flush_remote();
	CHECK_EQ(_nd_slab_xfer_count(0), 0);
	_nd_meta_hdr_each(check_hdr, NULL);
	CHECK(leaked_slabs == 0, "%lu slabs count %lu objects out that no list holds", leaked_slabs, leaked_objs);
	CHECK_EQ(bad_stamp, 0);
	return CHECK_DONE();
}
