// SPDX-License-Identifier: MIT
/* nd_malloc_interleaved's fast path pops from the record's ilheap when
 * the call's granularity and nodes->bits[0] equal that heap's il_gran
 * and il_bits (no test of the granularity's value or of the mode: a hit
 * proves a call with those words passed every check). What must hold,
 * each in a thread of its own (a fresh record, no policy heap yet);
 * emulated two nodes:
 *  - before any call the record's ilheap is the noheap, whose words
 *    (granularity 1, bits 0) match a call with granularity 1 and an
 *    empty set: EINVAL all the same (64 B and 3000 B), in a thread
 *    without a record too;
 *  - a change of granularity is seen at the next call: 0, 64K, 4K, 0
 *    over {0,1}, each right after the other, leave the heap of their own
 *    policy (0 and 4K: the same one-page heap) with the call's words;
 *    bad granularities right after hits fail;
 *  - a change of set likewise ({1} right after {0,1});
 *  - when the thread gives ilheap up (its 8 policy heaps full: pheap_get
 *    evicts the oldest), ilheap is the noheap again, never a parked heap,
 *    and the next call makes a heap of its own;
 *  - a record reused after its thread's exit starts with the noheap. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { SZ = 64 };
static nd_nodemask_t both, one, none;

static const _nd_heap_t *ilheap(void)
{
	return (const _nd_heap_t *)(const void *)_nd_tls->ilheap;
}

static void bad(const nd_nodemask_t *m, size_t gran, const char *what)
{
	errno = 0;
	void *p = nd_malloc_interleaved(SZ, m, gran);
	CHECK(p == NULL && errno == EINVAL, "%s: %p, errno %d", what, p, errno);
	nd_free(p);
}

/* A call over m at gran: served, from the heap of that policy, which is
 * now ilheap with the call's words. */
static const _nd_heap_t *call(const nd_nodemask_t *m, size_t gran, unsigned shift, const char *what)
{
	void *p = nd_malloc_interleaved(SZ, m, gran);
	const _nd_heap_t *h = ilheap();
	CHECK(p != NULL, "%s: no block", what);
	CHECK(h != (const _nd_heap_t *)(const void *)&_nd_thread_noheap && h->owner == _nd_tls && h->pol &&
		      h->pol->mode == ND_POLICY_INTERLEAVE && h->pol->granularity_shift == shift &&
		      h->pol->nodes.bits[0] == m->bits[0] && h->il_gran == gran && h->il_bits == m->bits[0],
	      "%s: ilheap %p (noheap %p), shift %u, bits %#llx, il_gran %llu", what, (const void *)h,
	      (const void *)&_nd_thread_noheap, h->pol ? h->pol->granularity_shift : 99,
	      h->pol ? (unsigned long long)h->pol->nodes.bits[0] : 0ull, (unsigned long long)h->il_gran);
	nd_free(p);
	return h;
}

static void *noheap_words(void *arg)
{
	(void)arg;
	/* no record yet: boot's ilheap */
	CHECK(_nd_tls->ilheap == &_nd_thread_noheap, "a thread without a record: noheap");
	bad(&none, 1, "no record: the noheap's words (granularity 1, empty set)");
	errno = 0;
	void *b = nd_malloc_interleaved(3000, &none, 1); /* a class above 256 B of the noheap */
	CHECK(b == NULL && errno == EINVAL, "no record: the noheap's words, 3000 B: %p, errno %d", b, errno);
	bad(&both, 1, "no record: granularity 1");
	void *p = malloc(16); /* a record of its own */
	CHECK(_nd_tls->ilheap == &_nd_thread_noheap, "a fresh record: noheap");
	bad(&none, 1, "fresh record: the noheap's words");
	bad(&both, 1, "fresh record: granularity 1");
	free(p);
	return NULL;
}

static void *changes(void *arg)
{
	(void)arg;
	const _nd_heap_t *h0 = call(&both, 0, 0, "{0,1} @0");
	call(&both, 0, 0, "{0,1} @0 again (a hit)");
	CHECK(ilheap() == h0, "the hit keeps its heap");
	const _nd_heap_t *h4 = call(&both, 65536, 4, "{0,1} @64K right after @0");
	CHECK(h4 != h0, "64K has a heap of its own");
	bad(&both, 65536 + 4096, "64K + 4K right after 64K");
	bad(&both, 65536 >> 1 | 65536, "96K right after 64K");
	CHECK(call(&both, 4096, 0, "{0,1} @4K right after @64K") == h0, "4K: the one-page heap");
	bad(&both, 4096 + 1, "4K + 1 right after 4K");
	CHECK(call(&both, 0, 0, "{0,1} @0 right after @4K") == h0, "0: the one-page heap");
	bad(&both, 1, "granularity 1 right after @0");
	bad(&both, (size_t)1 << 40, "2^40 right after @0");
	bad(&none, 0, "empty set right after @0");
	bad(NULL, 0, "NULL set right after @0");
	for (int i = 0; i < 2; i++) { /* a miss, then a hit of a class above 256 B */
		char *m = nd_malloc_interleaved(3000, &both, 0);
		CHECK(m && ilheap() == h0 && nd_usable_size(m) >= 3000, "3000 B on {0,1} @0 (%d)", i);
		if (m)
			memset(m, 1, 3000);
		nd_free(m);
	}
	const _nd_heap_t *h1 = call(&one, 0, 0, "{1} @0 right after {0,1}");
	CHECK(h1 != h0, "{1} has a heap of its own");
	void *p = nd_malloc_interleaved(SZ, &one, 0);
	CHECK(p && nd_node_of(p) == 1, "{1}: node %d", p ? nd_node_of(p) : -9);
	nd_free(p);
	return NULL;
}

static void *evict(void *arg)
{
	(void)arg;
	char err[256];
	call(&both, 0, 0, "{0,1} @0, the thread's first policy heap");
	/* 8 more policy heaps (interleave at other granularities): the
	 * eighth finds ph[] full and evicts the oldest, ilheap's */
	static const char *const specs[] = { "interleave:0-1@8K",   "interleave:0-1@16K", "interleave:0-1@32K",
					     "interleave:0-1@128K", "interleave:0-1@256K", "interleave:0-1@512K",
					     "interleave:0-1@1M",   "interleave:0-1@2M" };
	void *q[8];
	for (int i = 0; i < 8; i++) {
		nd_policy_t p;
		CHECK(nd_policy_parse(specs[i], &p, err, sizeof err) == 0, "%s", err);
		q[i] = nd_malloc_policy(SZ, &p);
		CHECK(q[i] != NULL, "%s", specs[i]);
	}
	CHECK(_nd_tls->ilheap == &_nd_thread_noheap, "ilheap evicted: noheap, not the parked heap %p",
	      (void *)_nd_tls->ilheap);
	call(&both, 0, 0, "{0,1} @0 after the eviction");
	for (int i = 0; i < 8; i++)
		nd_free(q[i]);
	return NULL;
}

static void *fresh(void *arg)
{
	(void)arg;
	void *p = malloc(16);
	CHECK(_nd_tls->ilheap == &_nd_thread_noheap, "a reused record: noheap, not %p", (void *)_nd_tls->ilheap);
	free(p);
	return NULL;
}

static void run(void *(*fn)(void *))
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, fn, NULL) == 0, "pthread_create");
	pthread_join(th, NULL);
}

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate("0: cpus=0 mem=256M; 1: cpus=1 mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	nd_nodemask_zero(&both);
	nd_nodemask_set(&both, 0);
	nd_nodemask_set(&both, 1);
	nd_nodemask_zero(&one);
	nd_nodemask_set(&one, 1);
	nd_nodemask_zero(&none);
	run(noheap_words);
	run(changes);
	run(evict);
	run(changes); /* a record after threads that set ilheap and exited */
	run(fresh);
	return CHECK_DONE();
}
