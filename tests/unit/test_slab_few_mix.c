// SPDX-License-Identifier: MIT
/* A class of few objects a slab (above 1 KiB) whose refill moves to a
 * slab with few objects listed, while 8 or more of its slabs are parked
 * full, flags the dry slab it leaves (slab.c, few_mix): the owner's frees
 * into that slab then go onto its borrowed list of the class, and the
 * next malloc pops them there, with no refill (tcmalloc's thread cache;
 * after random frees such slabs hold one or two free objects each, and a
 * refill served a malloc or two). A class of up to 1 KiB (32 objects a
 * slab), or one of few slabs, is left as it was.
 * Each case runs in a fresh thread (a heap of its own): ns slabs are
 * filled, one object of each freed (each slab then lists one; all but
 * the current one stay parked full); the current slab's one is taken,
 * and the next malloc's refill moves to another slab that lists one. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

enum { NS = 12, MAXCAP = 32 };

struct run {
	size_t sz;
	uint32_t ns; /* slabs filled */
};

static void *a[NS * MAXCAP];

static _nd_slab_t *slab_of(const void *p)
{
	return (_nd_slab_t *)_nd_slab_of(p);
}

static bool mixed(const _nd_slab_t *s)
{
	return (__atomic_load_n(&s->tp, __ATOMIC_RELAXED) & ND_TP_MIX) != 0;
}

static void *run(void *arg)
{
	const struct run *r = arg;
	size_t sz = r->sz;
	bool few = sz > 1024 && r->ns > 8; /* 8 parked full behind the current one */
	a[0] = malloc(sz);
	uint32_t cap = slab_of(a[0])->cap, n = r->ns * cap;
	CHECK(cap <= MAXCAP && (sz > 1024 ? cap <= 16 : cap >= 32), "%zu B: %u objects a slab", sz, (unsigned)cap);
	for (uint32_t i = 1; i < n; i++)
		CHECK((a[i] = malloc(sz)) != NULL);
	_nd_slab_t *cur = slab_of(a[n - 1]);
	for (uint32_t i = 0; i < n; i += cap) {
		CHECK(slab_of(a[i]) == slab_of(a[i + cap - 1]), "objects %u..%u share a slab", (unsigned)i,
		      (unsigned)(i + cap - 1));
		CHECK(!mixed(slab_of(a[i])), "%zu B: fills flag no slab", sz);
		free(a[i]); /* every slab lists one */
	}
	void *p = malloc(sz);
	CHECK(p == a[n - cap], "%zu B: the current slab's own object first", sz);
	void *q = malloc(sz); /* the refill: another slab that lists one */
	CHECK(slab_of(q) != cur && slab_of(q)->cap - slab_of(q)->used == 0);
	CHECK(mixed(cur) == few, "%zu B, %u slabs: the dry slab the refill left %s", sz, (unsigned)r->ns, few ? "is flagged" : "is not flagged");
	free(a[n - 1]); /* the owner's free into it */
	if (few) {
		CHECK(cur->free == NULL, "%zu B: the owner's free went onto the borrowed list, not the slab", sz);
		void *r = malloc(sz);
		CHECK(r == a[n - 1], "%zu B: the next malloc pops the list: %p, not %p", sz, r, a[n - 1]);
		a[n - 1] = r;
	} else {
		CHECK(cur->free == a[n - 1], "%zu B: the owner's free went onto the slab", sz);
		a[n - 1] = malloc(sz);
	}
	a[n - cap] = p;
	free(q);
	for (uint32_t i = 0; i < n; i++)
		if (i % cap)
			free(a[i]);
	free(p);
	return NULL;
}

int main(void)
{
	free(malloc(1)); /* the init */
	static const struct run runs[] = {{2048, NS}, {4096, NS}, {1792, NS}, {1024, NS}, {512, NS}, {2048, 4}};
	for (unsigned k = 0; k < sizeof runs / sizeof *runs; k++) {
		pthread_t th;
		CHECK(pthread_create(&th, NULL, run, (void *)&runs[k]) == 0);
		CHECK(pthread_join(th, NULL) == 0);
	}
	return CHECK_DONE();
}
