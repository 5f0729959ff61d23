// SPDX-License-Identifier: MIT
/* The current CPU on the real topology: pinned to each allowed CPU in
 * turn, _nd_topo_cpu() (rseq cpu_id, else getcpu) names that CPU, in the
 * main thread and in a new thread; nd_emulate_cpu is refused on a real
 * topology: silently by default (issue 14: API errors go to the caller),
 * with a line naming the call under NODALLOC_VERBOSE. */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static int pipefd[2];
static char msgs[4096];
static void drain(void)
{
	ssize_t n = read(pipefd[0], msgs, sizeof msgs - 1);
	msgs[n > 0 ? n : 0] = '\0';
}

static cpu_set_t orig;

static int pin_and_check(void)
{
	int bad = 0, tried = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &orig))
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof one, &one) != 0)
			continue;
		tried++;
		/* The migration has happened when sched_setaffinity returns. */
		int got = _nd_topo_cpu();
		if (got != c || nd_current_cpu() != c || sched_getcpu() != c) {
			fprintf(stderr, "pinned to %d: _nd_topo_cpu %d, sched_getcpu %d\n", c, got, sched_getcpu());
			bad++;
		}
	}
	sched_setaffinity(0, sizeof orig, &orig);
	return tried > 0 ? bad : -1;
}

static void *thread_main(void *arg)
{
	*(int *)arg = pin_and_check();
	return NULL;
}

int main(void)
{
	const _nd_topo_t *t = _nd_topo();
	CHECK(!t->emulated);
	CHECK(sched_getaffinity(0, sizeof orig, &orig) == 0);
	CHECK_EQ(pin_and_check(), 0);
	int thread_bad = -2;
	pthread_t th;
	CHECK(pthread_create(&th, NULL, thread_main, &thread_bad) == 0);
	pthread_join(th, NULL);
	CHECK_EQ(thread_bad, 0);
	/* Whatever CPU we are on is a CPU of the topology with a memory node. */
	int c = nd_current_cpu();
	CHECK(c >= 0 && c < t->cpu_limit && t->cpu_node[c] >= 0 && t->cpu_mem_node[c] >= 0);
	CHECK(_nd_os_rseq_area() == NULL || _nd_os_rseq_size() > 0);

	/* Refused on a real topology: nothing printed by default. */
	CHECK(pipe(pipefd) == 0);
	CHECK(fcntl(pipefd[0], F_SETFL, O_NONBLOCK) == 0);
	char fd[16];
	snprintf(fd, sizeof fd, "%d", pipefd[1]);
	CHECK(_nd_opt_set("msg_fd", fd) == 0);
	nd_emulate_cpu(0);
	CHECK_EQ(_nd_tls->cpu_override, -1);
	errno = 0;
	CHECK_EQ(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=??", NULL, 0), -1);
	CHECK_EQ(errno, EINVAL);
	drain();
	CHECK(msgs[0] == 0, "printed: %s", msgs);

	/* Under NODALLOC_VERBOSE, a line naming the call. */
	CHECK(_nd_opt_set("verbose", "1") == 0);
	nd_emulate_cpu(0);
	CHECK_EQ(_nd_tls->cpu_override, -1);
	drain();
	CHECK(strstr(msgs, "nodalloc: error: nd_emulate_cpu(0) ignored: the topology is not emulated") != NULL, "got: %s", msgs);

	/* nd_topology_emulate without an error buffer (the spec is bad; or,
	 * once the page layer has allocated, the topology is frozen: either
	 * way it is refused). */
	CHECK_EQ(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=??", NULL, 0), -1);
	drain();
	CHECK(strstr(msgs, "nodalloc: error: nd_topology_emulate: topology") != NULL, "got: %s", msgs);
	CHECK(!_nd_topo()->emulated);
	return CHECK_DONE();
}
