// SPDX-License-Identifier: MIT
/* A heap carves a new page of its current slab only when no slab behind it
 * has an object to give (heap.c, heap_alloc's ready_behind; issue 11: peak
 * RSS). Carving first touched a fresh page while the slab behind the
 * current one held free objects: the owner's own frees (a partial slab),
 * or remote frees into a parked full one (its heap's notify bit). With a
 * producer/consumer ring every class kept two slabs' pages resident
 * (bench wl_prodcons: 2.5 -> 2.2 MiB peak RSS).
 * Each case runs in a fresh thread (a heap of its own): 32 objects of
 * 512 B fill slab s1 (4 pages, 8 objects a page), 8 more the first page
 * of s2; then 16 of s1's are freed, by the owner or by another thread
 * that never allocated (its remote-free buffer sends them home); the next
 * malloc must return one of them, and s2 must still have one page carved. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

enum { SZ = 512, CAP = 32, PAGE_OBJS = 8, FREED = 16 };

static void *a[CAP + PAGE_OBJS];

static void *free_some(void *arg)
{
	(void)arg;
	for (int i = 0; i < FREED; i++)
		free(a[i]);
	return NULL; /* the exit sends what waits in the buffer home */
}

static void *run(void *arg)
{
	bool remote = arg != NULL;
	for (int i = 0; i < CAP + PAGE_OBJS; i++)
		CHECK((a[i] = malloc(SZ)) != NULL);
	_nd_slab_t *s1 = (_nd_slab_t *)_nd_slab_of(a[0]), *s2 = (_nd_slab_t *)_nd_slab_of(a[CAP]);
	CHECK(s1->size == SZ && s1->cap == CAP);
	for (int i = 1; i < CAP; i++)
		CHECK((_nd_slab_t *)_nd_slab_of(a[i]) == s1);
	CHECK(s2 != s1 && a[CAP] == (void *)s2->start && s2->carved == PAGE_OBJS);
	if (remote) {
		pthread_t th;
		CHECK(pthread_create(&th, NULL, free_some, NULL) == 0);
		CHECK(pthread_join(th, NULL) == 0);
	} else {
		free_some(NULL);
	}
	void *p = malloc(SZ);
	bool reused = false;
	for (int i = 0; i < FREED; i++)
		reused |= p == a[i];
	CHECK(reused, "%s frees: malloc returned %p, not one of the freed objects (s2 carved %u)",
		  remote ? "remote" : "owner", p, (unsigned)s2->carved);
	CHECK(s2->carved == PAGE_OBJS);
	free(p);
	for (int i = FREED; i < CAP + PAGE_OBJS; i++)
		free(a[i]);
	return NULL;
}

int main(void)
{
	free(malloc(1)); /* the init */
	for (int remote = 0; remote < 2; remote++) {
		pthread_t th;
		CHECK(pthread_create(&th, NULL, run, remote ? (void *)1 : NULL) == 0);
		CHECK(pthread_join(th, NULL) == 0);
	}
	return CHECK_DONE();
}
