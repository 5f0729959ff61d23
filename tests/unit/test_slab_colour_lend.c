// SPDX-License-Identifier: MIT
/* A slab lent to a smaller class (_nd_slab_lend) keeps every alignment
 * that class serves: classes 1280..1792 B serve alignments up to 2^tz of
 * their size (aligned_alloc(512, 1500) takes class 1536), and a coloured
 * class's slabs (2560..3584 B: slab.c, colour_of) hold objects that are
 * only 64-aligned, so they are not lent to them. 2500 B objects (class
 * 2560), 90% freed, then aligned requests of 1280, 1536 and 1792 B:
 * every one aligned. A coloured class still borrows
 * another's slabs: aligned_alloc(64, 2500) from 3072 B ones. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define K 1200
#define J 300

static void *b[K], *q[J];

/* Donors: K objects of size, all but every tenth freed. */
static void donors(size_t size)
{
	for (int i = 0; i < K; i++)
		CHECK((b[i] = malloc(size)) != NULL);
	for (int i = 0; i < K; i++)
		if (i % 10 != 0) {
			free(b[i]);
			b[i] = NULL;
		}
}

static void donors_free(void)
{
	for (int i = 0; i < K; i++)
		free(b[i]);
}

/* J requests of size aligned to align (0: malloc); how many got a bigger
 * class's object. Every one is aligned and holds size bytes. */
static int requests(size_t align, size_t size, size_t cls)
{
	int lent = 0;
	for (int i = 0; i < J; i++) {
		q[i] = align ? aligned_alloc(align, size) : malloc(size);
		CHECK(q[i] != NULL);
		if (!q[i])
			continue;
		size_t u = malloc_usable_size(q[i]);
		CHECK(u >= size);
		CHECK((uintptr_t)q[i] % (align ? align : 16) == 0, "aligned_alloc(%zu, %zu) = %p (usable %zu)", align, size,
		      q[i], u);
		lent += u != cls;
		memset(q[i], 0x5c, size);
	}
	for (int i = 0; i < J; i++)
		free(q[i]);
	return lent;
}

int main(void)
{
	free(malloc(1)); /* the init */
	static const struct {
		size_t size, cls, align;
	} r[] = {{1200, 1280, 256}, {1500, 1536, 512}, {1700, 1792, 256}};
	for (unsigned i = 0; i < sizeof r / sizeof r[0]; i++) {
		malloc_trim(0); /* no kept empty slab serves them first */
		donors(2500);
		requests(r[i].align, r[i].size, r[i].cls);
		donors_free();
	}
	/* a coloured class still borrows another's slabs (both 64-aligned) */
	malloc_trim(0);
	donors(3000);
	int lent = requests(64, 2500, 2560);
	CHECK(lent > 0, "%d requests of 2500 B from lent 3072 B slabs", lent);
	donors_free();
	return CHECK_DONE();
}
