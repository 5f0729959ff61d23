// SPDX-License-Identifier: MIT
/* The exchange's index (issue 11, xfree5): a list that goes into a node's
 * exchange names, in its head object's words 2.., the objects that follow
 * the head, as many as the head holds (up to the list's length - 1), so
 * that the thread taking it fetches their lines at once rather than one
 * pop at a time. Another thread's objects (filled with a pattern, so
 * that stale words cannot pass) of 1024 B (an index of up to 15: lists
 * of 16) and 48 B (4), freed past the borrowed list's cap:
 *  - put:  every list in node 0's exchange is indexed in link order;
 *  - keep: so are the lists the freeing thread's exit leaves there
 *          (exit_keep: the owner is alive). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 256 };
static const size_t sizes[] = { 1024, 48 };
static void *theirs[2][N];
static pthread_barrier_t bo, bf;

/* node 0's exchange: lists whose index is right (+1 each), or -1 at the
 * first wrong one; *indexed: words checked */
static int lists_indexed(unsigned *indexed)
{
	int ok = 0;
	*indexed = 0;
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++)
		for (unsigned i = 0; i < ND_XFER_K; i++) {
			uintptr_t v = __atomic_load_n(&_nd_meta_node[0].xfer[c].slot[i], __ATOMIC_ACQUIRE);
			if (!v)
				continue;
			void **h = (void **)(v & ND_TF_PTR), **p = h;
			uint32_t k = (uint32_t)(v >> ND_TF_CNT_SHIFT);
			uint32_t n = (uint32_t)(_nd_slab_class_size(c) / sizeof(void *)) - 2;
			if (n > k - 1)
				n = k - 1;
			for (uint32_t j = 0; j < n; j++) {
				p = p[ND_FO_LINK];
				if (h[2 + j] != p) {
					fprintf(stderr, "class %u (%zu B) slot %u: word %u of the head is %p, object %u is %p\n", c,
						_nd_slab_class_size(c), i, 2 + j, h[2 + j], j + 1, (void *)p);
					return -1;
				}
			}
			*indexed += n;
			ok++;
		}
	return ok;
}

static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < N; i++) {
			theirs[s][i] = malloc(sizes[s]);
			memset(theirs[s][i], 0xab, sizes[s]);
		}
	borrow_hold(&bo);
	return NULL;
}

static void *freer(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	for (int s = 0; s < 2; s++) {
		void *volatile first = malloc(sizes[s]); /* a heap of its own */
		free(first);
	}
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < N; i++)
			free(theirs[s][i]);
	borrow_hold(&bf); /* main looks at the exchange meanwhile */
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	pthread_barrier_init(&bo, NULL, 2);
	pthread_barrier_init(&bf, NULL, 2);
	pthread_t o, f;
	CHECK(pthread_create(&o, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bo);

	/* put */
	unsigned words;
	CHECK(pthread_create(&f, NULL, freer, NULL) == 0);
	pthread_barrier_wait(&bf);
	int lists = lists_indexed(&words);
	CHECK(lists > 0, "the exchange holds indexed lists: %d", lists);
	CHECK(words >= 15, "their heads name the objects after them: %u words", words);

	/* keep */
	pthread_barrier_wait(&bf);
	pthread_join(f, NULL);
	int kept = lists_indexed(&words);
	CHECK(kept > lists, "the freeing thread's exit kept its lists there, indexed: %d lists (%d before)", kept,
	      lists);

	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
	return CHECK_DONE();
}
