// SPDX-License-Identifier: MIT
/* nd_malloc_policy's fast path tests a cache entry's plain object (user)
 * before its prepared policy (pol), place.c's policy_pop:
 *  - a thread whose first call is nd_malloc_policy(size, NULL) gets the
 *    default policy's block: a fresh record's entries have a user that
 *    is no caller's object (ND_PC_NOUSER), never NULL, so the user test
 *    does not read the NULL object; the same after a plain object and a
 *    prepared policy went through entry 0;
 *  - a prepared policy is found by its interned pointer (pol), so its
 *    entry is cached on a topology of more than 64 nodes too (the plain
 *    objects' compare covers 64), warm: at most one slow path in 200
 *    calls (each call took the slow path when the entry was found by
 *    user, which such a topology leaves unset). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

static nd_policy_t plain;
static const nd_policy_t *prep;

static void *first_null(void *arg)
{
	int *bad = arg;
	for (int i = 0; i < 3; i++) {
		void *p = nd_malloc_policy(48, NULL);
		*bad += !p;
		free(p);
	}
	void *q = nd_malloc_policy(48, &plain), *r = nd_malloc_policy(48, prep);
	*bad += !q || !r || nd_node_of(q) != 1 || nd_node_of(r) != 1;
	free(q);
	free(r);
	void *p = nd_malloc_policy(48, NULL);
	*bad += !p || nd_node_of(p) != 0;
	free(p);
	return NULL;
}

int main(void)
{
	/* 66 nodes: node 0 has the CPUs */
	static char spec[4096];
	size_t len = (size_t)snprintf(spec, sizeof spec, "0: cpus=0-1 mem=256M");
	for (int n = 1; n < 66; n++)
		len += (size_t)snprintf(spec + len, sizeof spec - len, "; %d: mem=64M", n);
	CHECK(nd_topology_emulate(spec, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	plain = pol("bind:1");
	prep = nd_policy_prepare(&plain);
	CHECK(prep != NULL && prep != &plain);

	pthread_t th;
	int bad = 0;
	CHECK(pthread_create(&th, NULL, first_null, &bad) == 0);
	pthread_join(th, NULL);
	CHECK(bad == 0, "%d calls failed or misplaced", bad);

	void *warm = nd_malloc_policy(48, prep);
	CHECK(warm != NULL && nd_node_of(warm) == 1);
	free(warm);
	uint64_t before = _nd_slab_slow_count();
	for (int i = 0; i < 200; i++) {
		void *p = nd_malloc_policy(48, prep);
		CHECK(p != NULL);
		free(p);
	}
	uint64_t slow = _nd_slab_slow_count() - before;
	CHECK(slow <= 1 || getenv("NODALLOC_CHECK"), "prepared policy on 66 nodes: %llu slow paths in 200 calls",
	      (unsigned long long)slow);
	return CHECK_DONE();
}
