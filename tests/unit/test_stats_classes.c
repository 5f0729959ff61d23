// SPDX-License-Identifier: MIT
/* Per size class figures (issue 13): nd_stats_classes counts the objects
 * a program holds in a class, the slabs holding them and the remote frees
 * another thread made; the live printers (text and JSON) show the classes
 * in use after the per-node table. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"

#define N 3000
static void *obj[N];

static const nd_class_stats_t *class_of(nd_class_stats_t *all, int n, size_t size)
{
	const nd_class_stats_t *best = NULL;
	for (int c = 0; c < n; c++)
		if (all[c].size >= size && (!best || all[c].size < best->size))
			best = &all[c];
	return best;
}

static void *free_half(void *arg)
{
	(void)arg;
	for (int i = 0; i < N / 2; i++)
		nd_free(obj[i]);
	return NULL;
}

/* What nd_stats_print(_json) wrote, read back through a pipe. */
static char out[1 << 16];
static void capture(void (*print)(int))
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	print(p[1]);
	close(p[1]);
	ssize_t k, len = 0;
	while ((k = read(p[0], out + len, sizeof out - 1 - (size_t)len)) > 0)
		len += k;
	out[len] = '\0';
	close(p[0]);
}

int main(void)
{
	nd_class_stats_t all[64];
	errno = 0;
	CHECK(nd_stats_classes(NULL, 1) == -1 && errno == EINVAL, "NULL with max 1: EINVAL");
	CHECK(nd_stats_classes(all, -1) == -1 && errno == EINVAL, "max -1: EINVAL");
	int n = nd_stats_classes(NULL, 0);
	CHECK(n > 8 && n <= 64, "%d classes", n);

	CHECK_EQ(nd_stats_classes(all, n), n);
	const nd_class_stats_t *k = class_of(all, n, 200);
	CHECK(k != NULL, "a class for 200 bytes");
	uint64_t size = k->size, before = k->objects, remote0 = k->remote_frees;

	for (int i = 0; i < N; i++)
		obj[i] = nd_malloc(200);
	CHECK_EQ(nd_stats_classes(all, n), n);
	k = class_of(all, n, 200);
	CHECK(k->size == size && k->objects == before + N, "objects %llu, want %llu", (unsigned long long)k->objects,
	      (unsigned long long)(before + N));
	CHECK(k->slabs > 0 && k->capacity >= k->objects && k->slab_bytes >= k->capacity * k->size,
	      "slabs %llu capacity %llu bytes %llu", (unsigned long long)k->slabs, (unsigned long long)k->capacity,
	      (unsigned long long)k->slab_bytes);
	CHECK(k->refills > 0, "the class refilled");

	/* Another thread frees half: remote frees, counted once the batches
	 * go home (at the latest when the thread exits). */
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, free_half, NULL), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(nd_stats_classes(all, n), n);
	k = class_of(all, n, 200);
	CHECK(k->remote_frees >= remote0 + N / 2, "remote frees %llu, want >= %llu", (unsigned long long)k->remote_frees,
	      (unsigned long long)(remote0 + N / 2));

	char row[64];
	snprintf(row, sizeof row, "\n%-16llu", (unsigned long long)size);
	capture(nd_stats_print);
	CHECK(strstr(out, "size class") && strstr(out, "remote frees") && strstr(out, row), "text:\n%s", out);
	capture(nd_stats_print_json);
	snprintf(row, sizeof row, "{\"size\":%llu,", (unsigned long long)size);
	CHECK(strstr(out, "\"classes\":[") && strstr(out, row), "json: %s", out);

	for (int i = N / 2; i < N; i++)
		nd_free(obj[i]);
	CHECK_EQ(nd_stats_classes(all, n), n);
	k = class_of(all, n, 200);
	CHECK(k->objects <= before + N / 2, "objects %llu after the owner freed its half", (unsigned long long)k->objects);
	return CHECK_DONE();
}
