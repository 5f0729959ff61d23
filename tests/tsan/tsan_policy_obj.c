// SPDX-License-Identifier: MIT
/* make tsan: nd_malloc_policy and nd_mallocx_policy on plain policy
 * objects from 4 threads (place.c's ifunc and both entry kinds, heap.c's
 * user and kuser), for ThreadSanitizer. Three objects shared read-only
 * (bind:1 and interleave: compared without a CPU key; local: with it) and
 * one per thread changed in place (bind:0-1, or weighted with its weights
 * changing), each thread moving between the CPUs of two emulated nodes;
 * the main thread changes the process policy meanwhile (every record's
 * key set to NONE from another thread). Every object on its node where the
 * policy names one. Also the first program of a TSan build that calls
 * nd_malloc_policy: its ifunc resolver runs while the dynamic linker
 * relocates, before TSan's runtime (instrumented, it crashed here). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "check.h"
#include "nodalloc.h"

#define NT 4
#define OPS 60000

static nd_policy_t shared[3]; /* bind:1, interleave:0-1, local */
static int bad[NT];

static void *worker(void *arg)
{
	long id = (long)arg;
	nd_policy_t own;
	char e[100];
	nd_policy_parse(id & 1 ? "weighted:0=1,1=3" : "bind:0-1", &own, e, sizeof e);
	for (int i = 0; i < OPS; i++) {
		int cpu = (i >> 6) & 1;
		nd_emulate_cpu(cpu);
		void *a = nd_malloc_policy(48, &shared[i % 3]);
		void *b = nd_malloc_policy(64, &own);
		void *c = nd_mallocx_policy(32, &shared[(i + 1) % 3], 0);
		bad[id] += !a || !b || !c;
		bad[id] += i % 3 == 0 ? nd_node_of(a) != 1 : i % 3 == 2 ? nd_node_of(a) != cpu : 0;
		bad[id] += !(id & 1) && nd_node_of(b) != cpu;
		if ((i & 255) == 0 && (id & 1))
			own.weights[1] = (uint8_t)(1 + (i >> 8) % 4);
		nd_free(a);
		nd_free(b);
		nd_free(c);
	}
	return NULL;
}

int main(void)
{
	char e[200];
	CHECK(nd_topology_emulate("0: cpus=0 mem=256M; 1: cpus=1 mem=256M", e, sizeof e) == 0, "emulate: %s", e);
	CHECK(nd_policy_parse("bind:1", &shared[0], e, sizeof e) == 0 &&
		      nd_policy_parse("interleave:0-1", &shared[1], e, sizeof e) == 0 &&
		      nd_policy_parse("local", &shared[2], e, sizeof e) == 0,
	      "parse: %s", e);
	pthread_t t[NT];
	for (long i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	nd_policy_t d;
	for (int i = 0; i < 500; i++) {
		nd_policy_parse(i & 1 ? "bind:0" : "interleave:0-1", &d, e, sizeof e);
		nd_set_default_policy(&d);
	}
	nd_set_default_policy(NULL);
	for (int i = 0; i < NT; i++) {
		pthread_join(t[i], NULL);
		CHECK(bad[i] == 0, "thread %d: %d calls failed or off node", i, bad[i]);
	}
	return CHECK_DONE();
}
