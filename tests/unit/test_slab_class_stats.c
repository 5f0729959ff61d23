// SPDX-License-Identifier: MIT
/* Per size class figures (issue 13): _nd_slab_class_stats derives live
 * slabs, their bytes and capacity, and objects out from the slab headers,
 * and remote frees and malloc slow paths from counters kept off the fast
 * paths. The 3072-byte class is used (nothing else in this program
 * allocates it). Objects freed by another thread stay out until the owner
 * collects them; its remote-free count survives the thread's exit. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

enum { SZ = 3000, N = 50 };
static void *obj[N];

static _nd_slab_class_stats_t get(void)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK_EQ(_nd_slab_class_stats(st, ND_SLAB_CLASSES), ND_SLAB_CLASSES);
	return st[_nd_slab_class_of(SZ)];
}

static void *remote(void *arg)
{
	(void)arg;
	void *mine = malloc(100); /* a record: its frees are batched */
	free(mine);
	for (int i = 20; i < 30; i++)
		free(obj[i]);
	return NULL;
}

int main(void)
{
	_nd_slab_class_stats_t s0 = get();
	CHECK_EQ(s0.size, 3072);
	CHECK_EQ(s0.objects, 0);
	for (int i = 0; i < N; i++)
		obj[i] = malloc(SZ);
	_nd_slab_class_stats_t s1 = get();
	CHECK_EQ(s1.objects, N);
	/* 3072-byte slabs: 32 KiB runs of 10 objects (docs/malloc.md) */
	CHECK(s1.slabs >= N / 10, "slabs %llu", (unsigned long long)s1.slabs);
	CHECK_EQ(s1.capacity, s1.slabs * 10);
	CHECK_EQ(s1.slab_bytes, s1.slabs * 32768);
	CHECK(s1.refills > s0.refills, "slow paths counted: %llu", (unsigned long long)s1.refills);
	for (int i = 0; i < 20; i++)
		free(obj[i]);
	CHECK_EQ(get().objects, N - 20);
	pthread_t t;
	pthread_create(&t, NULL, remote, NULL);
	pthread_join(t, NULL);
	_nd_slab_class_stats_t s2 = get();
	CHECK_EQ(s2.remote_frees - s1.remote_frees, 10); /* folded into the totals at the thread's exit */
	CHECK_EQ(s2.objects, N - 20); /* the remote ones are out until collected */
	for (int i = 30; i < N; i++)
		free(obj[i]);
	/* the owner collects the remote frees when its free list runs dry */
	for (int i = 0; i < N; i++)
		obj[i] = malloc(SZ);
	CHECK_EQ(get().objects, N);
	for (int i = 0; i < N; i++)
		free(obj[i]);
	/* the other thread borrowed from these slabs (ND_TP_MIX): the owner's
	 * frees into them wait on its borrowed list until it is flushed */
	_nd_slab_flush_remote();
	CHECK_EQ(get().objects, 0);
	return CHECK_DONE();
}
