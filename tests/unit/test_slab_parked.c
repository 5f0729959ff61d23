// SPDX-License-Identifier: MIT
/* Memory freed into a parked heap serves the next thread of the node
 * (issue 16, "also seen"): a thread fills node 0 under bind:0 and exits
 * (its heaps are parked), another thread frees every other object (remote
 * frees into the parked heap: its slabs stay partial, none can go back to
 * the page level), and then allocations under bind:0 must get that memory
 * (before, the node was full for the running thread: malloc returned NULL
 * at once, only a thread adopting the parked heap could use it). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0-1 mem=32M; 1: cpus=2-3 mem=256M";

enum { MAXN = 40000, SZ = 1000 };
static void *obj[MAXN];
static int nobj;

static void *filler(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	nd_policy_t b = pol("bind:0");
	CHECK(nd_set_policy(&b) == 0);
	while (nobj < MAXN && (obj[nobj] = malloc(SZ)) != NULL)
		nobj++;
	return NULL;
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	/* this thread has its own bind:0 heap already (a running thread, not
	 * one that could adopt the parked heap) */
	nd_policy_t b = pol("bind:0");
	CHECK(nd_set_policy(&b) == 0);
	void *mine = malloc(SZ);
	CHECK(mine && nd_node_of(mine) == 0);
	pthread_t t;
	pthread_create(&t, NULL, filler, NULL);
	pthread_join(t, NULL);
	CHECK(nobj > 1000 && nobj < MAXN, "the filler got %d objects before node 0 was full", nobj);
	int on0 = 0;
	for (int i = 0; i < nobj; i++)
		on0 += nd_node_of(obj[i]) == 0;
	CHECK_EQ(on0, nobj);
	int freed = 0;
	for (int i = 0; i < nobj; i += 2, freed++)
		free(obj[i]); /* remote frees into the exited filler's parked heap */
	int got = 0, nulls = 0;
	static void *again[MAXN];
	for (int i = 0; i < freed; i++) {
		again[got] = malloc(SZ);
		if (again[got])
			got++;
		else
			nulls++;
	}
	CHECK(nulls == 0 && got == freed, "after %d frees into the parked heap: %d allocations, %d NULL", freed, got,
	      nulls);
	int off = 0;
	for (int i = 0; i < got; i++)
		off += nd_node_of(again[i]) != 0;
	CHECK_EQ(off, 0);
	for (int i = 0; i < got; i++)
		free(again[i]);
	for (int i = 1; i < nobj; i += 2)
		free(obj[i]);
	free(mine);
	return CHECK_DONE();
}
