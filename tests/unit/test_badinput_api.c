// SPDX-License-Identifier: MIT
/* Bad input to the public API gets an error, never a crash: each case runs
 * in a forked child (a crash is caught and named) and must return the
 * failure value with errno EINVAL or ENOMEM where the header documents
 * one. Prints the number of cases. Cases known to crash in other layers
 * are run and reported but not asserted until fixed (CRASHER). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"

static nd_nodemask_t empty_mask;
static nd_policy_t bad_mode, bad_gran, bad_node;
static char err[256];

static int want_errno(const char *name, int e1, int e2)
{
	if (errno == e1 || errno == e2)
		return 0;
	fprintf(stderr, "%s: errno %d, expected %d or %d\n", name, errno, e1, e2);
	return 1;
}

/* expr must give NULL with errno e1 or e2 */
#define NULLCASE(name, expr, e1, e2)                                          \
	static int name(void)                                                 \
	{                                                                     \
		errno = 0;                                                    \
		void *r_ = (void *)(expr);                                    \
		if (r_) {                                                     \
			fprintf(stderr, #name ": " #expr " = %p, expected NULL\n", r_); \
			return 1;                                             \
		}                                                             \
		return want_errno(#name, e1, e2);                             \
	}
/* expr must give -1 (errno not checked: the message names the fault) */
#define NEGCASE(name, expr)                                                   \
	static int name(void)                                                 \
	{                                                                     \
		long r_ = (long)(expr);                                       \
		if (r_ != -1) {                                               \
			fprintf(stderr, #name ": " #expr " = %ld, expected -1\n", r_); \
			return 1;                                             \
		}                                                             \
		return 0;                                                     \
	}
/* expr must give 0 */
#define ZEROCASE(name, expr)                                                  \
	static int name(void)                                                 \
	{                                                                     \
		long r_ = (long)(expr);                                       \
		if (r_ != 0) {                                                \
			fprintf(stderr, #name ": " #expr " = %ld, expected 0\n", r_); \
			return 1;                                             \
		}                                                             \
		return 0;                                                     \
	}

NULLCASE(malloc_huge, nd_malloc(SIZE_MAX), ENOMEM, ENOMEM)
NULLCASE(malloc_half, nd_malloc(SIZE_MAX / 2), ENOMEM, ENOMEM)
NULLCASE(calloc_overflow, nd_calloc(SIZE_MAX / 2, 3), ENOMEM, ENOMEM)
NULLCASE(calloc_overflow2, nd_calloc((size_t)1 << 33, (size_t)1 << 33), ENOMEM, ENOMEM)
NULLCASE(realloc_null_huge, nd_realloc(NULL, SIZE_MAX - 8), ENOMEM, ENOMEM)
NULLCASE(aligned_not_pow2, nd_aligned_alloc(48, 96), EINVAL, EINVAL)
NULLCASE(aligned_zero, nd_aligned_alloc(0, 16), EINVAL, EINVAL)
NULLCASE(aligned_huge, nd_aligned_alloc((size_t)1 << 63, 16), EINVAL, ENOMEM)
NULLCASE(aligned_size_huge, nd_aligned_alloc(4096, SIZE_MAX - 100), ENOMEM, EINVAL)
NULLCASE(onnode_negative, nd_malloc_onnode(100, -2), EINVAL, EINVAL) /* -1: ND_NODE_LOCAL */
NULLCASE(onnode_absent, nd_malloc_onnode(100, 1000), EINVAL, EINVAL)
NULLCASE(onnode_beyond_max, nd_malloc_onnode(100, ND_MAX_NODES), EINVAL, EINVAL)
NULLCASE(onnode_int_min, nd_malloc_onnode(100, INT32_MIN), EINVAL, EINVAL)
NULLCASE(onnode_huge, nd_malloc_onnode(SIZE_MAX, 0), ENOMEM, ENOMEM)
NULLCASE(interleaved_null_mask, nd_malloc_interleaved(1 << 20, NULL, 0), EINVAL, EINVAL)
NULLCASE(interleaved_empty_mask, nd_malloc_interleaved(1 << 20, &empty_mask, 0), EINVAL, EINVAL)
NULLCASE(interleaved_huge, nd_malloc_interleaved(SIZE_MAX, NULL, 0), EINVAL, ENOMEM)
NULLCASE(policy_bad_mode, nd_malloc_policy(100, &bad_mode), EINVAL, EINVAL)
NULLCASE(policy_bad_gran, nd_malloc_policy(100, &bad_gran), EINVAL, EINVAL)
NULLCASE(policy_absent_node, nd_malloc_policy(100, &bad_node), EINVAL, EINVAL)
NEGCASE(set_policy_bad_mode, nd_set_policy(&bad_mode))
NEGCASE(set_policy_absent_node, nd_set_policy(&bad_node))
NEGCASE(set_default_bad_mode, nd_set_default_policy(&bad_mode))
NEGCASE(check_bad_gran, nd_policy_check(&bad_gran, err, sizeof err))
NEGCASE(parse_garbage, nd_policy_parse("interleave:0-@", &bad_node, err, sizeof err))
NEGCASE(parse_unknown, nd_policy_parse("sideways:0", &bad_node, err, sizeof err))
NEGCASE(parse_null_err, nd_policy_parse("bogus", &bad_node, NULL, 0))
NEGCASE(parse_tiny_err, nd_policy_parse("bind:99999999999", &bad_node, err, 1))
NEGCASE(mask_parse_garbage, nd_nodemask_parse("0-", &empty_mask, err, sizeof err))
NEGCASE(mask_parse_huge, nd_nodemask_parse("0-100000", &empty_mask, err, sizeof err))
NEGCASE(mask_parse_reverse, nd_nodemask_parse("3-1", &empty_mask, err, sizeof err))
NEGCASE(distance_absent, nd_node_distance(-1, 5000))
NEGCASE(node_of_cpu_absent, nd_node_of_cpu(-7))
NEGCASE(fallback_absent, nd_fallback_list(ND_MAX_NODES + 5, 0, (int[4]){ 0 }, 4))
NEGCASE(node_of_foreign, nd_node_of(&err))
NEGCASE(node_of_null, nd_node_of(NULL))
NEGCASE(emulate_garbage, nd_topology_emulate("0: cpus=zz", err, sizeof err))
NEGCASE(table_null, nd_table_alloc(NULL, NULL))
ZEROCASE(percpu_zero_size, nd_percpu_alloc(0, 0))
ZEROCASE(percpu_bad_align, nd_percpu_alloc(8, 3))
ZEROCASE(percpu_huge, nd_percpu_alloc(SIZE_MAX, 0))
ZEROCASE(percpu_ptr_bad_cpu, nd_percpu_ptr(nd_percpu_alloc(8, 8), -1))
ZEROCASE(usable_null, nd_usable_size(NULL))

static int free_null(void)
{
	nd_free(NULL);
	nd_percpu_free(0);
	return 0;
}

/* Known crashers (issue 12, item 13), fixed by another engineer: run and
 * reported, asserted once they pass (set CRASHER to 0 then). */
static int policy_format_null(void)
{
	nd_policy_t p;
	nd_policy_parse("local", &p, NULL, 0);
	return nd_policy_format(&p, NULL, 100) < 0 ? 0 : 0;
}
static int percpu_add_zero(void)
{
	nd_percpu_add(0, 1);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
	int crasher;
} cases[] = {
#define C(n) { #n, n, 0 }
	C(malloc_huge), C(malloc_half), C(calloc_overflow), C(calloc_overflow2),
	C(realloc_null_huge), C(aligned_not_pow2), C(aligned_zero), C(aligned_huge),
	C(aligned_size_huge), C(onnode_negative), C(onnode_absent), C(onnode_beyond_max),
	C(onnode_int_min), C(onnode_huge), C(interleaved_null_mask), C(interleaved_empty_mask),
	C(interleaved_huge), C(policy_bad_mode), C(policy_bad_gran),
	C(policy_absent_node), C(set_policy_bad_mode), C(set_policy_absent_node),
	C(set_default_bad_mode), C(check_bad_gran), C(parse_garbage), C(parse_unknown),
	C(parse_null_err), C(parse_tiny_err), C(mask_parse_garbage), C(mask_parse_huge),
	C(mask_parse_reverse), C(distance_absent), C(node_of_cpu_absent), C(fallback_absent),
	C(node_of_foreign), C(node_of_null), C(emulate_garbage), C(table_null),
	C(percpu_zero_size), C(percpu_bad_align), C(percpu_huge), C(percpu_ptr_bad_cpu),
	C(usable_null), C(free_null),
	{ "policy_format_null", policy_format_null, 1 },
	{ "percpu_add_zero", percpu_add_zero, 1 },
};

int main(void)
{
	nd_nodemask_zero(&empty_mask);
	bad_mode.mode = (nd_policy_mode_t)99;
	bad_gran.mode = ND_POLICY_INTERLEAVE;
	nd_nodemask_set(&bad_gran.nodes, 0);
	bad_gran.granularity_shift = 40;
	bad_node.mode = ND_POLICY_BIND;
	nd_nodemask_set(&bad_node.nodes, ND_MAX_NODES - 1);
	free(malloc(1));
	int n = (int)(sizeof cases / sizeof cases[0]), ok = 0, crashed = 0, known = 0;
	for (int i = 0; i < n; i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20);
			_exit(cases[i].fn());
		}
		int st = 0;
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st)) {
			if (cases[i].crasher) {
				printf("known crasher (not asserted): %s: signal %d\n", cases[i].name, WTERMSIG(st));
				known++;
				continue;
			}
			crashed++;
		}
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case %s: %s %d", cases[i].name,
		      WIFSIGNALED(st) ? "killed by signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	printf("badinput_api: %d cases, %d as expected, %d crashed, %d known crashers\n", n, ok, crashed, known);
	return CHECK_DONE();
}
