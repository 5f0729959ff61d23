// SPDX-License-Identifier: MIT
/* Calls that crashed with SIGSEGV (issue 12, item 13) now fail cleanly:
 * nd_policy_format with a NULL buffer, and every per-CPU operation on
 * handle 0 (nd_percpu_alloc's failure value), before and after the
 * per-CPU areas exist. Each call runs in a child, so a crash is counted
 * as a failure, not the end of the test. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"

static int calls;

/* Runs fn in a child; true if it returned normally (exit 0). */
#define SURVIVES(stmt)                                                        \
	({                                                                    \
		calls++;                                                      \
		pid_t pid_ = fork();                                          \
		if (pid_ == 0) {                                              \
			stmt;                                                 \
			_exit(0);                                             \
		}                                                             \
		int st_ = -1;                                                 \
		waitpid(pid_, &st_, 0);                                       \
		WIFEXITED(st_) && WEXITSTATUS(st_) == 0;                      \
	})

static void handle_zero_ops(void)
{
	CHECK(SURVIVES(nd_percpu_add(0, 1)), "nd_percpu_add(0, 1) crashed");
	CHECK(SURVIVES(nd_percpu_inc(0)), "nd_percpu_inc(0) crashed");
	CHECK(SURVIVES(if (nd_percpu_add_return(0, 5) != 0) _exit(3)), "nd_percpu_add_return(0)");
	CHECK(SURVIVES(if (nd_percpu_cmpxchg(0, 7, 9) == 7) _exit(3)), "nd_percpu_cmpxchg(0) claimed a store");
	CHECK(SURVIVES(if (nd_percpu_sum(0) != 0) _exit(3)), "nd_percpu_sum(0)");
	CHECK(SURVIVES(if (nd_percpu_ptr(0, 0) != NULL) _exit(3)), "nd_percpu_ptr(0, 0)");
	CHECK(SURVIVES(if (nd_this_cpu_ptr(0) != NULL) _exit(3)), "nd_this_cpu_ptr(0)");
	CHECK(SURVIVES(nd_percpu_free(0)), "nd_percpu_free(0)");
}

int main(void)
{
	nd_policy_t p;
	char err[128], buf[64];
	CHECK(nd_policy_parse("interleave:0@2M", &p, err, sizeof err) == 0, "%s", err);
	CHECK(SURVIVES(if (nd_policy_format(&p, NULL, 100) != -1) _exit(3)), "nd_policy_format(p, NULL, 100)");
	CHECK(SURVIVES(if (nd_policy_format(NULL, buf, sizeof buf) != -1) _exit(3)), "nd_policy_format(NULL, ...)");
	/* NULL with length 0 asks for the length, as snprintf does */
	int n = nd_policy_format(&p, NULL, 0);
	CHECK_EQ(n, nd_policy_format(&p, buf, sizeof buf));
	CHECK_STR(buf, "interleave:0@2M");

	handle_zero_ops(); /* before any per-CPU area exists */
	nd_percpu_t h = nd_percpu_alloc(8, 8);
	CHECK(h != 0);
	handle_zero_ops(); /* after: handle 0 is still nobody's */
	nd_percpu_add(h, 2);
	CHECK_EQ(nd_percpu_sum(h), 2); /* and the real handle works */
	nd_percpu_free(h);
	printf("api guards: %d calls in children\n", calls);
	return CHECK_DONE();
}
