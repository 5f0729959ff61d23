// SPDX-License-Identifier: MIT
/* The malloc family: sizes, alignment, realloc in place and moved, errno,
 * overflow, usable size, posix_memalign errors, placement API basics. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

extern void *pvalloc(size_t);
extern void *valloc(size_t);

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* volatile: keeps the compiler from judging the sizes at compile time */
static volatile size_t big_half = SIZE_MAX / 2, almost_max = SIZE_MAX - 100, quarter = SIZE_MAX / 4;
#define ADDR(p) ((uintptr_t)(p))

int main(void)
{
	/* every size up to 40000 and some beyond: aligned 16, ours, usable >= size */
	for (size_t n = 0; n <= 40000; n += (n < 1100 ? 1 : 97)) {
		unsigned char *p = malloc(n);
		CHECK(p != NULL, "malloc(%zu)", n);
		if (!p)
			continue;
		CHECK(((uintptr_t)p & 15) == 0, "malloc(%zu) = %p not 16-aligned", n, (void *)p);
		CHECK(malloc_usable_size(p) >= n, "usable %zu < %zu", malloc_usable_size(p), n);
		CHECK(nd_node_of(p) >= 0, "malloc(%zu) = %p not from nodalloc", n, (void *)p);
		memset(p, 0xA5, n);
		free(p);
	}
	/* usable size is the class: exact for class sizes, bounded waste */
	for (size_t n = 1; n <= ND_SLAB_MAX; n++) {
		size_t c = _nd_slab_class_size(_nd_slab_class_of(n));
		if (c < n || (n > 128 && (c - n) * 5 > c) || (n <= 128 && c - n >= 16)) {
			CHECK(0, "class of %zu is %zu", n, c);
			break;
		}
	}
	void *p16 = malloc(100);
	CHECK_EQ(malloc_usable_size(p16), 112);
	free(p16);
	CHECK_EQ(malloc_usable_size(NULL), 0);

	/* distinct live objects do not overlap */
	enum { N = 5000 };
	static unsigned char *objs[N];
	for (int i = 0; i < N; i++) {
		size_t n = 1 + (size_t)(i * 7919) % 3000;
		objs[i] = malloc(n);
		memset(objs[i], i & 0xff, n);
	}
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += !filled(objs[i], 1 + (size_t)(i * 7919) % 3000, i & 0xff);
	CHECK_EQ(bad, 0);
	for (int i = 0; i < N; i++)
		free(objs[i]);

	/* calloc: zeroed (also over recycled memory), overflow */
	unsigned char *c1 = malloc(4000);
	memset(c1, 0xff, 4000);
	free(c1);
	unsigned char *c2 = calloc(1000, 4);
	CHECK(c2 && filled(c2, 4000, 0));
	free(c2);
	unsigned char *c3 = calloc(1, 300000);
	CHECK(c3 && filled(c3, 300000, 0));
	free(c3);
	errno = 0;
	CHECK(calloc(big_half, 3) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(calloc(0, 0) != NULL);

	/* out of memory: NULL + ENOMEM */
	errno = 0;
	CHECK(malloc(almost_max) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(malloc((size_t)1 << 62) == NULL);
	CHECK_EQ(errno, ENOMEM);

	/* realloc */
	CHECK(realloc(NULL, 0) != NULL);
	unsigned char *r = realloc(NULL, 40);
	CHECK(r != NULL);
	memset(r, 7, 40);
	uintptr_t ra = ADDR(r);
	unsigned char *r2 = realloc(r, 48); /* same class 48: grows in place */
	CHECK(ADDR(r2) == ra, "grow within class moved");
	r2 = realloc(r2, 44);                /* shrink in place */
	CHECK(ADDR(r2) == ra, "small shrink moved");
	uintptr_t r2a = ADDR(r2);
	unsigned char *r3 = realloc(r2, 5000); /* moved, contents kept */
	CHECK(r3 != NULL && ADDR(r3) != r2a);
	CHECK(filled(r3, 40, 7));
	memset(r3, 9, 5000);
	unsigned char *r4 = realloc(r3, 100); /* big shrink: moves to a small class */
	CHECK(r4 != NULL && filled(r4, 100, 9));
	CHECK(malloc_usable_size(r4) < 1000);
	/* large: grow within the run in place, shrink by less than half in place */
	unsigned char *L = malloc(100000);
	size_t Lu = malloc_usable_size(L);
	CHECK(Lu >= 100000 && Lu % 4096 == 0);
	memset(L, 3, 100000);
	uintptr_t La = ADDR(L);
	L = realloc(L, Lu);
	CHECK(ADDR(L) == La, "large grow within the run moved");
	L = realloc(L, 70000);
	CHECK(ADDR(L) == La, "large shrink moved");
	unsigned char *L2 = realloc(L, 1000000);
	CHECK(L2 != NULL && filled(L2, 70000, 3));
	unsigned char *L3 = realloc(L2, 1000);
	CHECK(L3 != NULL && filled(L3, 1000, 3) && malloc_usable_size(L3) < 4096);
	errno = 0;
	void *fail = realloc(L3, almost_max);
	CHECK(fail == NULL);
	CHECK_EQ(errno, ENOMEM);
	if (!fail) {
		CHECK(filled(L3, 1000, 3)); /* failed realloc leaves the block */
		CHECK(realloc(L3, 0) == NULL); /* glibc: frees */
	}
	CHECK(realloc(r4, 0) == NULL);

	/* reallocarray */
	errno = 0;
	CHECK(reallocarray(NULL, quarter, 8) == NULL);
	CHECK_EQ(errno, ENOMEM);
	int *rr = reallocarray(NULL, 10, sizeof(int));
	CHECK(rr != NULL);
	rr = reallocarray(rr, 1000, sizeof(int));
	CHECK(rr != NULL && malloc_usable_size(rr) >= 4000);
	free(rr);

	/* alignments up to 1 MiB through every entry point */
	for (size_t a = 1; a <= ((size_t)1 << 20); a <<= 1) {
		size_t sizes[] = { 1, 24, a, 3 * a + 5, 50000 };
		for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
			size_t n = sizes[k];
			void *q = NULL;
			if (a >= sizeof(void *)) {
				CHECK_EQ(posix_memalign(&q, a, n), 0);
				CHECK(q && (uintptr_t)q % a == 0, "posix_memalign(%zu, %zu) = %p", a, n, q);
				CHECK(q && malloc_usable_size(q) >= n);
				if (q)
					memset(q, 1, n);
				free(q);
			}
			q = aligned_alloc(a, n);
			CHECK(q && (uintptr_t)q % a == 0, "aligned_alloc(%zu, %zu) = %p", a, n, q);
			free(q);
			q = memalign(a, n);
			CHECK(q && (uintptr_t)q % a == 0, "memalign(%zu, %zu) = %p", a, n, q);
			free(q);
		}
	}
	void *q = (void *)1;
	CHECK_EQ(posix_memalign(&q, 24, 10), EINVAL);
	CHECK_EQ(posix_memalign(&q, 4, 10), EINVAL);
	CHECK(q == (void *)1); /* untouched on error */
	CHECK_EQ(posix_memalign(&q, 64, SIZE_MAX - 4096), ENOMEM);
	errno = 0;
	CHECK(aligned_alloc(48, 96) == NULL);
	CHECK_EQ(errno, EINVAL);
	void *m = memalign(48, 10); /* rounded up to 64 */
	CHECK(m && (uintptr_t)m % 64 == 0);
	free(m);
	void *v = valloc(10);
	CHECK(v && (uintptr_t)v % 4096 == 0);
	free(v);
	v = pvalloc(5000);
	CHECK(v && (uintptr_t)v % 4096 == 0 && malloc_usable_size(v) >= 8192);
	free(v);

	/* free(NULL), nd_ aliases, node of foreign memory */
	free(NULL);
	nd_free(NULL);
	void *nm = nd_malloc(10);
	CHECK(nm && nd_usable_size(nm) == 16);
	nm = nd_realloc(nm, 20);
	CHECK(nm && nd_usable_size(nm) == 32);
	nd_free(nm);
	int local;
	CHECK_EQ(nd_node_of(&local), -1);
	CHECK_EQ(nd_node_of(NULL), -1);

	/* placement API on the machine's topology */
	int node0 = nd_mem_node_of_cpu(nd_current_cpu());
	void *a1 = nd_malloc_onnode(100, node0);
	CHECK(a1 && nd_node_of(a1) == node0);
	void *a2 = nd_malloc_onnode(200000, node0);
	CHECK(a2 && nd_node_of(a2) == node0);
	void *a3 = nd_malloc_local(64);
	CHECK(a3 && nd_node_of(a3) == node0);
	nd_nodemask_t mask;
	nd_nodemask_zero(&mask);
	nd_nodemask_set(&mask, node0);
	void *a4 = nd_malloc_interleaved(1 << 20, &mask, 65536);
	CHECK(a4 && nd_node_of(a4) == node0);
	errno = 0;
	CHECK(nd_malloc_onnode(10, 4000) == NULL);
	CHECK_EQ(errno, EINVAL);
	nd_nodemask_zero(&mask);
	errno = 0;
	CHECK(nd_malloc_interleaved(100, &mask, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	nd_policy_t pol;
	char err[128];
	CHECK(nd_policy_parse("preferred:0", &pol, err, sizeof err) == 0);
	pol.nodes.bits[0] = 0;
	nd_nodemask_set(&pol.nodes, node0);
	void *a5 = nd_malloc_policy(5000, &pol);
	CHECK(a5 && nd_node_of(a5) == node0);
	free(a1);
	nd_free(a2);
	free(a3);
	free(a4);
	free(a5);
	return CHECK_DONE();
}
