// SPDX-License-Identifier: MIT
/* A public heap whose creator has exited (audit24, found by fuzz_threads):
 * the next thread gets the creator's thread pointer (glibc reuses a joined
 * thread's stack) and its record (the pool), and was taken for the heap's
 * owner: its realloc of one of the heap's objects put the new block in the
 * heap, where nd_heap_destroy freed it under the program. The contract
 * (nodalloc.h, docs/malloc.md): realloc by another thread than the creator
 * moves the block out of the heap, to an ordinary block on its node; so
 * destroy leaves it alone. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";

static nd_heap_t *heap;
static unsigned char *small_obj, *big_obj;
static pthread_t creator;

static void *create(void *arg)
{
	(void)arg;
	creator = pthread_self();
	heap = nd_heap_new(1);
	small_obj = nd_heap_malloc(heap, 100);
	big_obj = nd_heap_malloc(heap, 100000);
	if (small_obj && big_obj) {
		memset(small_obj, 0x11, 100);
		memset(big_obj, 0x22, 100000);
	}
	return NULL;
}

static int same_as(const unsigned char *p, int c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

static void *reuse(void *arg)
{
	(void)arg;
	/* the premise: this thread has the creator's thread pointer */
	CHECK(pthread_equal(pthread_self(), creator), "a new thread did not reuse the creator's thread (the test proves nothing)");
	free(malloc(10)); /* its record: the creator's, from the pool */
	unsigned char *s = realloc(small_obj, 3000), *b = realloc(big_obj, 300000);
	CHECK(s && s != small_obj && b && b != big_obj, "the reallocs moved");
	CHECK(_nd_uheap_of(_nd_page_desc(s)) == NULL, "another thread's realloc of a small object stays in the heap");
	CHECK(_nd_uheap_of(_nd_page_desc(b)) == NULL, "another thread's realloc of a large object stays in the heap");
	CHECK_EQ(nd_node_of(s), 1);
	CHECK_EQ(nd_node_of(b), 1);
	CHECK(same_as(s, 0x11, 100) && same_as(b, 0x22, 100000));
	memset(s, 0x33, 3000);
	memset(b, 0x44, 300000);
	/* no object of the heap is out now: destroy; the moved blocks stay */
	nd_heap_destroy(heap);
	unsigned char *q[64];
	for (int i = 0; i < 64; i++) { /* reuse whatever destroy gave back */
		q[i] = nd_malloc_onnode(i % 2 ? 3000 : 300000, 1);
		CHECK(q[i] != NULL);
		memset(q[i], 0x55, i % 2 ? 3000 : 300000);
	}
	CHECK(same_as(s, 0x33, 3000), "the moved small block was freed with the heap");
	CHECK(same_as(b, 0x44, 300000), "the moved large block was freed with the heap");
	for (int i = 0; i < 64; i++)
		free(q[i]);
	free(s);
	free(b);
	return NULL;
}

int main(void)
{
	char err[128];
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, create, NULL) == 0);
	pthread_join(th, NULL);
	CHECK(heap && small_obj && big_obj);
	CHECK(pthread_create(&th, NULL, reuse, NULL) == 0);
	pthread_join(th, NULL);
	return CHECK_DONE();
}
