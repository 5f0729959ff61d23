// SPDX-License-Identifier: MIT
/* A lend purges no slab of a class whose withheld objects came back
 * (_nd_slab_purge_lent, h->unp): under steady churn over many classes
 * (sizes spread over 8 B..32 KiB, random slots replaced), every lend
 * purged its donor's free stretches and the donor's own class faulted
 * them in again (_nd_slab_unpurge) a moment later: one madvise and the
 * faults per lend. Here class 2048 is first lent to 1000 B requests (its
 * stretches of 3 or more free pages go back, test_slab_lend), then
 * allocates again until its withheld objects come back; lent once more
 * after the same frees, its free objects are lent where they lie, pages
 * without a kept object included, and none of its pages is purged. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { K = 800, J = 400 };
static void *b[K], *q[J];

static const _nd_slab_t *slab_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? (const _nd_slab_t *)d->user : NULL;
}

/* 800 objects of 2000 B (class 2048), every 10th kept, then 400 requests
 * of 1000 B. Returns how many got a lent 2048 B object; *purgedp: donor
 * slabs (those of the kept objects) with pages purged after the lends. */
static int round_of_lends(int *purgedp)
{
	static void *gone[K];
	int ng = 0;
	for (int i = 0; i < K; i++) {
		void *p = malloc(2000);
		CHECK(p != NULL);
		b[i] = i % 10 == 0 ? p : NULL;
		if (!b[i])
			gone[ng++] = p;
	}
	while (ng > 0)
		free(gone[--ng]);
	int lent = 0;
	for (int i = 0; i < J; i++) {
		CHECK((q[i] = malloc(1000)) != NULL);
		lent += malloc_usable_size(q[i]) == 2048;
	}
	int purged = 0;
	for (int i = 0; i < K; i += 10) {
		const _nd_slab_t *s = slab_of(b[i]);
		CHECK(s != NULL);
		purged += s && s->purged != 0 && (i < 10 || slab_of(b[i - 10]) != s);
	}
	*purgedp = purged;
	return lent;
}

int main(void)
{
	int purged = 0, lent = round_of_lends(&purged);
	CHECK(lent > 0, "%d requests of 1000 B from lent 2048 B slabs", lent);
	CHECK(purged > 0, "first lends: %d donor slabs purged", purged);
	for (int i = 0; i < J; i++)
		free(q[i]);
	/* class 2048 takes its room back: the lent slabs came back to it dry,
	 * their withheld objects come back as it allocates */
	static void *c[2 * K];
	for (int i = 0; i < 2 * K; i++)
		CHECK((c[i] = malloc(2000)) != NULL);
	for (int i = 0; i < 2 * K; i++)
		free(c[i]);
	for (int i = 0; i < K; i++)
		free(b[i]);

	lent = round_of_lends(&purged);
	CHECK(lent > 0, "%d requests of 1000 B from lent 2048 B slabs", lent);
	CHECK_EQ(purged, 0);
	for (int i = 0; i < J; i++)
		free(q[i]);
	for (int i = 0; i < K; i++)
		free(b[i]);
	return CHECK_DONE();
}
