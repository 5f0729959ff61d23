// SPDX-License-Identifier: MIT
/* The x calls' whole small matrix (place7: rows xrow[lg] for lg up to 8,
 * size 0 on the fast path, ND_NODE_LOCAL's flags or'ed into its key test):
 * every size 0..256 (and 257, 600, 4095, 4096) x every alignment 1..4096
 * x flags (the alignment alone, with ND_MALLOCX_ZERO, with a bit the API
 * does not define: 0x80, 0x100 with ZERO, 1 << 31) through
 * nd_mallocx_onnode on node 0, node 1 and ND_NODE_LOCAL and through
 * nd_mallocx_policy (bind:1), on CPU 0 and CPU 2 (ND_NODE_LOCAL's node
 * follows; the first call after a move finds the local key stale): a
 * valid call gives a block aligned, on its node, of a usable size at
 * least the size (malloc's of the size rounded up to the alignment, 0
 * as the alignment, for sizes up to 256), zeroed when asked (the memory
 * was dirtied before it was freed); an undefined bit gives NULL and
 * EINVAL. In the main thread, a new thread on a reused record, and a
 * fork's child. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";
static nd_policy_t b1;

static const size_t extra[] = { 257, 600, 4095, 4096 };
enum { NSIZE = 257 + sizeof extra / sizeof *extra };

static size_t size_at(int i)
{
	return i <= 256 ? (size_t)i : extra[i - 257];
}

/* The matrix on the calling thread: the number of wrong calls. */
static int matrix(void)
{
	static const unsigned bad_bits[] = { 0x80, 0x100 | ND_MALLOCX_ZERO, 1u << 31 };
	int bad = 0;
	for (int cpu = 0; cpu <= 2; cpu += 2) {
		nd_emulate_cpu(cpu);
		for (int k = 0; k < 4; k++) {
			int want = k == 0 ? 0 : k == 2 ? cpu / 2 : 1;
			for (unsigned lg = 0; lg <= 12; lg++) {
				size_t a = (size_t)1 << lg;
				for (int i = 0; i < NSIZE; i++) {
					size_t sz = size_at(i);
					for (int v = 0; v < 5; v++) {
						unsigned f = lg | (v == 1 ? ND_MALLOCX_ZERO : v >= 2 ? bad_bits[v - 2] : 0);
						errno = 0;
						unsigned char *p = k == 3 ? nd_mallocx_policy(sz, &b1, f)
									  : nd_mallocx_onnode(sz, k == 2 ? ND_NODE_LOCAL : k, f);
						if (v >= 2) {
							if ((p || errno != EINVAL) && bad++ < 8)
								CHECK(0, "k %d, size %zu, flags %#x: %p errno %d", k, sz, f, (void *)p, errno);
							free(p);
							continue;
						}
						bool ok = p && ((uintptr_t)p & (a - 1)) == 0 && nd_node_of(p) == want &&
							  nd_usable_size(p) >= sz;
						if (ok && sz <= 256 && lg <= 8) {
							size_t r = sz ? (sz + a - 1) & ~(a - 1) : a;
							void *m = malloc(r);
							ok = m && nd_usable_size(p) == nd_usable_size(m);
							free(m);
						}
						for (size_t j = 0; ok && v == 1 && j < sz; j++)
							ok = p[j] == 0;
						if (!ok && bad++ < 8)
							CHECK(0, "cpu %d, k %d, size %zu, flags %#x: %p (node %d, usable %zu)", cpu, k,
							      sz, f, (void *)p, p ? nd_node_of(p) : -9, p ? nd_usable_size(p) : 0);
						if (p)
							memset(p, 0xa5, nd_usable_size(p));
						free(p);
					}
				}
			}
		}
	}
	return bad;
}

static void *thread_matrix(void *arg)
{
	*(int *)arg = matrix();
	return NULL;
}

static int in_thread(void)
{
	int bad = -1;
	pthread_t t;
	if (pthread_create(&t, NULL, thread_matrix, &bad) != 0)
		return -1;
	pthread_join(t, NULL);
	return bad;
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	b1 = pol("bind:1");
	CHECK_EQ(matrix(), 0);
	CHECK_EQ(in_thread(), 0);
	CHECK_EQ(in_thread(), 0); /* a reused record */
	pid_t pid = fork();
	if (pid == 0)
		_exit(matrix() == 0 && in_thread() == 0 ? 0 : 1);
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork's child: status %d", st);
	return CHECK_DONE();
}
