// SPDX-License-Identifier: MIT
/* Shared by the borrowed-list tests: objects made by another live thread.
 * maker_topology emulates two nodes (node 0: CPUs 0-1, node 1: CPUs 2-3)
 * and puts the caller on CPU 0 (-1 with a message if refused).
 * maker_start runs a thread on emulated CPU cpu that mallocs n objects of
 * size into objs and then waits, alive (a parked heap's objects are not
 * borrowed), until maker_stop; maker_start returns once they are made. */
#ifndef ND_MAKER_FIXTURE_H
#define ND_MAKER_FIXTURE_H
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "nodalloc.h"

static inline int maker_topology(void)
{
	char err[256];
	if (nd_topology_emulate("0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; distance: 0-1=20", err, sizeof err) != 0) {
		fprintf(stderr, "emulate: %s\n", err);
		return -1;
	}
	nd_emulate_cpu(0);
	return 0;
}

struct maker {
	pthread_t th;
	pthread_barrier_t made, done;
	void **objs;
	int n, cpu;
	size_t size;
};

static inline void *maker_run(void *arg)
{
	struct maker *m = arg;
	nd_emulate_cpu(m->cpu);
	for (int i = 0; i < m->n; i++)
		m->objs[i] = malloc(m->size);
	pthread_barrier_wait(&m->made);
	pthread_barrier_wait(&m->done);
	return NULL;
}

/* 0, or -1 if the thread could not start. */
static inline int maker_start(struct maker *m, void **objs, int n, size_t size, int cpu)
{
	m->objs = objs;
	m->n = n;
	m->size = size;
	m->cpu = cpu;
	pthread_barrier_init(&m->made, NULL, 2);
	pthread_barrier_init(&m->done, NULL, 2);
	if (pthread_create(&m->th, NULL, maker_run, m) != 0)
		return -1;
	pthread_barrier_wait(&m->made);
	return 0;
}

static inline void maker_stop(struct maker *m)
{
	pthread_barrier_wait(&m->done);
	pthread_join(m->th, NULL);
	pthread_barrier_destroy(&m->made);
	pthread_barrier_destroy(&m->done);
}
#endif
