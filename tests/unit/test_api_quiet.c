// SPDX-License-Identifier: MIT
/* Issue 14: library errors go to the caller. A child on a one-node
 * emulated topology makes bad API calls (a node that does not exist, bad
 * masks, policies, per-CPU handles, tables); each must fail by its return
 * value and errno. By default its stderr stays empty; under
 * NODALLOC_VERBOSE=1 the calls are named. A bad NODALLOC_* value (a
 * configuration error) is still reported without VERBOSE. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "child_fixture.h"
#include "nodalloc.h"

#define SPEC "0: cpus=0-1 mem=1G"

static int child(void)
{
	int n = 0;
#define EXPECT(cond)                                                              \
	do {                                                                      \
		n++;                                                              \
		if (!(cond)) {                                                    \
			/* stdout: not the stream the parent checks for silence */ \
			printf("child: failed: %s\n", #cond);                     \
			return 1;                                                 \
		}                                                                 \
	} while (0)
	errno = 0;
	EXPECT(nd_malloc_onnode(64, 1) == NULL && errno == EINVAL);
	errno = 0;
	EXPECT(nd_malloc_onnode((size_t)1 << 20, 5) == NULL && errno == EINVAL);
	nd_nodemask_t m;
	nd_nodemask_zero(&m);
	nd_nodemask_set(&m, 7);
	errno = 0;
	EXPECT(nd_nodemask_parse("0-3", &m, NULL, 0) == -1 && errno == EINVAL);
	EXPECT(nd_nodemask_isset(&m, 7) && !nd_nodemask_isset(&m, 0)); /* left as it was */
	nd_nodemask_t empty;
	nd_nodemask_zero(&empty);
	errno = 0;
	EXPECT(nd_malloc_interleaved(4096, &empty, 4096) == NULL && errno == EINVAL);
	nd_policy_t p = { .mode = ND_POLICY_BIND };
	nd_nodemask_set(&p.nodes, 3);
	errno = 0;
	EXPECT(nd_malloc_policy(64, &p) == NULL && errno == EINVAL);
	errno = 0;
	EXPECT(nd_malloc_policy((size_t)1 << 20, &p) == NULL && errno == EINVAL);
	errno = 0;
	EXPECT(nd_percpu_alloc(0, 0) == 0 && errno == EINVAL);
	errno = 0;
	nd_percpu_free(12345);
	EXPECT(errno == EINVAL);
	errno = 0;
	EXPECT(nd_percpu_ptr(0, 0) == NULL && errno == EINVAL);
	nd_table_desc_t d = { .name = "t", .bucket_size = 0 };
	nd_table_t t;
	errno = 0;
	EXPECT(nd_table_alloc(&d, &t) == -1 && errno == EINVAL);
	static char fake[4096];
	memset(&t, 0, sizeof t);
	t.base = fake;
	errno = 0;
	nd_table_free(&t);
	EXPECT(errno == EINVAL);
	nd_emulate_cpu(99);
	EXPECT(nd_current_cpu() < 2);
	errno = 0;
	EXPECT(nd_topology_emulate("0: mem=??", NULL, 0) == -1 && errno == EINVAL);
	printf("child: %d bad calls failed as they should\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	char *const args[] = { argv[0], "child", NULL };
	char out[8192];

	setenv("NODALLOC_TOPOLOGY", SPEC, 1);
	unsetenv("NODALLOC_VERBOSE");
	int st = run_child(argv[0], args, NULL, NULL, false, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECK(out[0] == '\0', "the default printed: %s", out);

	st = run_child(argv[0], args, "NODALLOC_VERBOSE", "1", false, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECK(strstr(out, "nodalloc: error: nd_malloc_onnode: node 1 does not exist") != NULL, "got: %s", out);
	CHECK(strstr(out, "nd_percpu_alloc: size 0") != NULL, "got: %s", out);
	CHECK(strstr(out, "is not a table from nd_table_alloc") != NULL, "got: %s", out);
	CHECK(strstr(out, "nd_emulate_cpu(99) ignored") != NULL, "got: %s", out);

	/* A configuration error is reported by name without VERBOSE. */
	st = run_child(argv[0], args, "NODALLOC_CHECK", "maybe", false, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECK(strstr(out, "NODALLOC_CHECK: bad value 'maybe'") != NULL, "got: %s", out);
	return CHECK_DONE();
}
