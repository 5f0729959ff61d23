// SPDX-License-Identifier: MIT
/* A thread's per-class counts of malloc slow paths (cls_refill, 16 bits)
 * and of frees sent home (cls_sent, 32 bits) are on its record's first
 * page (nd_thread.h: a thread that only frees others' objects leaves the
 * second page alone); from 2^15 (refill) or 2^31 (sent) on a count moves
 * to its 64-bit word on the second page (_nd_thread_count16,
 * _nd_thread_count), so no count wraps. The counts are set just below
 * the wrap here as if that many events had happened; the class
 * statistics must then show them all, the sent ones also after the
 * thread's exit folded them into the totals. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

enum { SZ = 3000, N = 60, FREED = 40 };
#define NEAR 0xfffffff0u
#define RNEAR 0xfff0u /* the 16-bit refill count's */
static void *obj[N];
static unsigned cls;

static _nd_slab_class_stats_t get(void)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK_EQ(_nd_slab_class_stats(st, ND_SLAB_CLASSES), ND_SLAB_CLASSES);
	return st[cls];
}

static uint64_t preset;

static void *consumer(void *arg)
{
	(void)arg;
	free(obj[0]); /* its record (the first remote free makes it) */
	_nd_thread_t *t = _nd_tls;
	CHECK(!_nd_thread_none(t), "a remote free made the thread's record");
	preset = NEAR - t->cls_sent[cls];
	t->cls_sent[cls] = NEAR;
	for (int i = 1; i < FREED; i++)
		free(obj[i]);
	return NULL;
}

int main(void)
{
	cls = _nd_slab_class_of(SZ);
	_nd_thread_t *me = _nd_thread_self();
	CHECK(me && !_nd_thread_none(me), "main's record");
	_nd_slab_class_stats_t s0 = get();
	uint64_t rpreset = RNEAR - me->cls_refill[cls];
	me->cls_refill[cls] = RNEAR;
	for (int i = 0; i < N; i++)
		obj[i] = malloc(SZ);
	_nd_slab_class_stats_t s1 = get();
	uint64_t refills = s1.refills - s0.refills - rpreset;
	printf("refills: %llu past the preset\n", (unsigned long long)refills);
	/* 3072-byte slabs hold 10 objects: at least one slow path a slab */
	CHECK(s1.refills - s0.refills >= rpreset + N / 10 && refills <= 2 * N,
	      "refills %llu -> %llu: the count wrapped or was lost (preset %llu)", (unsigned long long)s0.refills,
	      (unsigned long long)s1.refills, (unsigned long long)rpreset);

	pthread_t th;
	CHECK(pthread_create(&th, NULL, consumer, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	_nd_slab_class_stats_t s2 = get();
	printf("remote frees: %llu past the preset %llu\n", (unsigned long long)(s2.remote_frees - s1.remote_frees - preset),
	       (unsigned long long)preset);
	CHECK_EQ(s2.remote_frees - s1.remote_frees, preset + FREED);
	for (int i = FREED; i < N; i++)
		free(obj[i]);
	return CHECK_DONE();
}
