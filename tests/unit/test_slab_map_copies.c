// SPDX-License-Identifier: MIT
/* The slab map's copies of chk and tp (nd_slab.h: an entry is the
 * header's offset, mul, chk and tp; slab.c copies every store of chk and
 * tp into the entries of the slab's units not given back). Threads of two
 * emulated nodes churn (exit: heaps parked; start: heaps adopted, slabs
 * stolen and absorbed, glibc's recycled thread pointers), free each
 * other's objects (borrowed lists, flagged stamps, the exchange, remote
 * lists), take policy heaps past the eight a thread keeps (eviction parks
 * one), purge their heap and trim. At every pause (workers waiting on a
 * barrier) and after every round (workers gone) each live slab's entries
 * must agree with its header: offset, mul, chk; tp the header's, or,
 * header flagged (ND_TP_MIX), the owner's pointer unflagged (a borrower
 * flags one unit's copy); a parked heap's slabs stamped 0 everywhere;
 * units given back (gone) not naming the slab. Objects keep their stamp
 * until freed (no wrong-owner push corrupted a list). The same in fork
 * children of the paused workers, whose threads free the dead parent
 * threads' objects. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "borrow_fixture.h"
#include "check.h"

enum { ROUNDS = 24, W = 4, SLOTS = 4096, OPS = 6000 };

static void *slot[SLOTS];
static unsigned sval[SLOTS];
static size_t ssz[SLOTS];
static pthread_mutex_t slot_lock[64];
static pthread_barrier_t bar;
static unsigned long bad_stamp, bad_entry, checked_units, seen_mix, seen_parked, seen_gone;

static size_t pick_size(unsigned *r)
{
	*r = *r * 1103515245u + 12345u;
	unsigned k = (*r >> 8) % 16;
	if (k < 8)
		return 16 + (*r >> 12) % 256;
	if (k < 13)
		return 256 + (*r >> 12) % 2048;
	return 2048 + (*r >> 12) % 30000;
}

static bool holds(const void *p, size_t n, unsigned v)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i] != (unsigned char)v)
			return false;
	return true;
}

static void check_hdr(const _nd_slab_t *s, void *arg)
{
	(void)arg;
	const _nd_heap_t *h = __atomic_load_n(&s->heap, __ATOMIC_RELAXED);
	if (!h)
		return; /* released */
	bool parked = !__atomic_load_n(&h->owner, __ATOMIC_RELAXED) && !h->user;
	uintptr_t tp = s->tp;
	seen_mix += (tp & ND_TP_MIX) != 0;
	seen_parked += parked;
	seen_gone += s->gone != 0;
	if (parked && tp != 0) {
		bad_entry++;
		fprintf(stderr, "slab %p of a parked heap stamped %#lx\n", (void *)s, (unsigned long)tp);
	}
	for (uint32_t p = 0; p < s->npages; p += 4) {
		const intptr_t *e = _nd_meta_map_ent(s->start + ((size_t)p << ND_PAGE_SHIFT));
		if (!e)
			continue;
		intptr_t off = (intptr_t)s - (intptr_t)_nd_slab_map.base;
		if (s->gone >> p & 1) {
			if (e[ND_ENT_OFF] == off) {
				bad_entry++;
				fprintf(stderr, "slab %p: unit %u given back still names it\n", (void *)s, p);
			}
			continue;
		}
		checked_units++;
		uintptr_t et = (uintptr_t)e[ND_ENT_TP];
		bool tp_ok = et == tp || ((tp & ND_TP_MIX) && et == (tp & ND_TP_PTR));
		if (e[ND_ENT_OFF] != off || (uint64_t)e[ND_ENT_MUL] != s->mul || (uint64_t)e[ND_ENT_CHK] != s->chk || !tp_ok) {
			bad_entry++;
			fprintf(stderr,
				"slab %p (class %u, unit %u, gone %#lx): entry off %ld mul %#lx chk %#lx tp %#lx; header off %ld "
				"mul %#lx chk %#lx tp %#lx\n",
				(void *)s, s->cls, p, (unsigned long)s->gone, (long)e[ND_ENT_OFF], (unsigned long)e[ND_ENT_MUL],
				(unsigned long)e[ND_ENT_CHK], (unsigned long)et, (long)off, (unsigned long)s->mul,
				(unsigned long)s->chk, (unsigned long)tp);
		}
	}
}

static void check_all(void)
{
	_nd_meta_hdr_each(check_hdr, NULL);
}

static void one_op(unsigned *r, int me, const nd_policy_t *pols, int npol)
{
	*r = *r * 1103515245u + 12345u;
	int i = (int)((*r >> 4) % SLOTS);
	pthread_mutex_t *lk = &slot_lock[i % 64];
	pthread_mutex_lock(lk);
	if (slot[i]) {
		if (!holds(slot[i], ssz[i] < 64 ? ssz[i] : 64, sval[i]))
			__atomic_fetch_add(&bad_stamp, 1, __ATOMIC_RELAXED);
		free(slot[i]);
		slot[i] = NULL;
	} else {
		size_t n = pick_size(r);
		unsigned k = (*r >> 20) % 8;
		void *p = k == 0 && npol ? nd_malloc_policy(n, &pols[(*r >> 24) % (unsigned)npol])
			  : k == 1	? nd_malloc_onnode(n, (int)(*r >> 25) & 1)
					: malloc(n);
		if (p) {
			sval[i] = (unsigned)(me * 31 + i) | 1;
			ssz[i] = n;
			memset(p, (int)(sval[i] & 0xff), n < 64 ? n : 64);
			slot[i] = p;
		}
	}
	pthread_mutex_unlock(lk);
}

static nd_policy_t pols[12];

#ifndef __SANITIZE_THREAD__
/* A fork child of the paused workers: its threads (glibc may give them
 * the parent workers' stacks and thread pointers) free and allocate the
 * slots, whose objects are mostly the dead parent threads'; the map
 * still agrees with the headers and every object kept its stamp. */
static void *child_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned r = (unsigned)me * 40503u + 11;
	nd_emulate_cpu(me & 3);
	for (int i = 0; i < OPS; i++)
		one_op(&r, 100 + me, pols, 12);
	return NULL;
}

static int fork_child(void)
{
	pthread_t th[W];
	for (int i = 0; i < W; i++)
		pthread_create(&th[i], NULL, child_worker, (void *)(intptr_t)i);
	for (int i = 0; i < W; i++)
		pthread_join(th[i], NULL);
	check_all();
	for (int i = 0; i < SLOTS; i++)
		if (slot[i]) {
			if (!holds(slot[i], ssz[i] < 64 ? ssz[i] : 64, sval[i]))
				bad_stamp++;
			free(slot[i]);
			slot[i] = NULL;
		}
	check_all();
	return bad_entry || bad_stamp ? 1 : 0;
}
#endif

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned r = (unsigned)me * 2654435761u + 7;
	nd_emulate_cpu(me & 3);
	for (int i = 0; i < OPS; i++) {
		one_op(&r, me, pols, 12);
		if (i % 1500 == 1499) {
			_nd_thread_t *t = _nd_tls;
			if (t->heap)
				_nd_slab_purge_heap(t->heap);
		}
	}
	pthread_barrier_wait(&bar); /* main checks the map */
	pthread_barrier_wait(&bar);
	for (int i = 0; i < OPS / 2; i++)
		one_op(&r, me, pols, 12);
	if (me & 1)
		malloc_trim(0);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	for (int i = 0; i < 64; i++)
		pthread_mutex_init(&slot_lock[i], NULL);
	for (int i = 0; i < 12; i++) {
		memset(&pols[i], 0, sizeof pols[i]);
		pols[i].mode = i < 6 ? ND_POLICY_BIND : ND_POLICY_INTERLEAVE;
		nd_nodemask_set(&pols[i].nodes, i & 1);
		if (i >= 6)
			nd_nodemask_set(&pols[i].nodes, 1);
		pols[i].granularity_shift = (unsigned)(12 + i % 3);
		pols[i].flags = 0;
	}
	pthread_barrier_init(&bar, NULL, W + 1);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t th[W];
		for (int i = 0; i < W; i++)
			pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(round * W + i));
		pthread_barrier_wait(&bar);
		check_all();
#ifndef __SANITIZE_THREAD__ /* ThreadSanitizer does not follow threads made after a multi-threaded fork */
		if (round % 8 == 5) {
			pid_t pid = fork();
			if (pid == 0)
				_exit(fork_child());
			int st = 0;
			CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "fork child of round %d: status %#x", round, st);
		}
#endif
		pthread_barrier_wait(&bar);
		for (int i = 0; i < W; i++)
			pthread_join(th[i], NULL);
		check_all();
	}
	for (int i = 0; i < SLOTS; i++)
		free(slot[i]);
	check_all();
	printf("units %lu, flagged %lu, parked %lu, with units given back %lu (slab sightings)\n", checked_units, seen_mix,
	       seen_parked, seen_gone);
	CHECK(checked_units > 1000, "units checked: %lu", checked_units);
	CHECK_EQ(bad_entry, 0);
	CHECK_EQ(bad_stamp, 0);
	return CHECK_DONE();
}
