// SPDX-License-Identifier: MIT
/*
 * Limits of the reservation are reported once and by name (issue 12,
 * items 11 and 13):
 *  - under an address space limit too small for any reservation (64 KiB
 *    more than is mapped), 1000 mallocs of 64 KiB all return NULL with ENOMEM and the
 *    library says "initialization failed" once (it said the same error
 *    line for every malloc);
 *  - NODALLOC_ARENA_RESERVE=4M is raised to the 16 MiB minimum with a
 *    warning naming the option, and a 32 MiB malloc then fails with ENOMEM
 *    and a warning saying why (both were silent);
 *  - malloc(SIZE_MAX - 4096) with no option set: ENOMEM, and a warning
 *    that blames the size, not the option or a slot (audit26).
 * Each case runs in a child (this binary re-executed) whose stderr goes
 * to a file the parent reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "vm_bytes.h"

static int count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Runs this binary with arg, stderr captured into out; exit status. */
static int run(const char *arg, const char *env, char *out, size_t len)
{
	char path[] = "/tmp/nd_limits_XXXXXX";
	int fd = mkstemp(path);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd, 2);
		if (env)
			putenv((char *)env);
		execl("/proc/self/exe", "test_page_limits", arg, (char *)NULL);
		_exit(126);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	ssize_t n = pread(fd, out, len - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int child_aslimit(void)
{
	/* No room for any reservation: 64 KiB more than is mapped now (under
	 * ulimit -v 24 MiB the page level now fits in what is left). */
	struct rlimit rl = { vm_bytes() + (64 << 10), vm_bytes() + (64 << 10) };
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 3;
	int nulls = 0, enomem = 0;
	for (int i = 0; i < 1000; i++) {
		errno = 0;
		void *p = malloc(64 << 10);
		nulls += p == NULL;
		enomem += p == NULL && errno == ENOMEM;
		free(p);
	}
	return nulls == 1000 && enomem == 1000 ? 0 : 4;
}

static int child_reserve(void)
{
	void *small = malloc(1 << 20);
	errno = 0;
	void *big = malloc(32 << 20);
	int e = errno;
	if (!small)
		return 5;
	return big == NULL && e == ENOMEM ? 0 : 6;
}

/* An alignment above the slot: the warning names the alignment (it said
 * "an allocation of 0 MiB" for a small block). */
/* More than any address space (malloc(SIZE_MAX - 4096)), no option set:
 * the warning does not blame NODALLOC_ARENA_RESERVE or a slot (it did:
 * "larger than an arena slot (8796093022208 MiB, from
 * NODALLOC_ARENA_RESERVE or the address space limit)", audit26). */
static int child_huge(void)
{
	volatile size_t n = SIZE_MAX - 4096; /* no compile-time size warning */
	errno = 0;
	void *p = malloc(n);
	return p == NULL && errno == ENOMEM ? 0 : 8;
}

static int child_align(void)
{
	errno = 0;
	void *p = aligned_alloc(32 << 20, 100);
	return p == NULL && errno == ENOMEM ? 0 : 7;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "aslimit") == 0)
		return child_aslimit();
	if (argc > 1 && strcmp(argv[1], "reserve") == 0)
		return child_reserve();
	if (argc > 1 && strcmp(argv[1], "align") == 0)
		return child_align();
	if (argc > 1 && strcmp(argv[1], "huge") == 0)
		return child_huge();
	static char out[1 << 16];

	int rc = run("aslimit", NULL, out, sizeof out);
	CHECK(rc == 0, "under a limit of 64 KiB more: exit %d (4: a malloc did not fail with ENOMEM)", rc);
	CHECK(count(out, "initialization failed") == 1, "\"initialization failed\" %d times:\n%.600s",
	      count(out, "initialization failed"), out);
	CHECK(count(out, "nodalloc:") <= 2, "%d messages for 1000 mallocs:\n%.600s", count(out, "nodalloc:"), out);

	rc = run("reserve", "NODALLOC_ARENA_RESERVE=4M", out, sizeof out);
	CHECK(rc == 0, "NODALLOC_ARENA_RESERVE=4M: exit %d (6: malloc(32 MiB) did not fail with ENOMEM)", rc);
	CHECK(strstr(out, "NODALLOC_ARENA_RESERVE") && strstr(out, "below the minimum"),
	      "no warning naming the option:\n%.600s", out);
	CHECK(strstr(out, "larger than an arena slot"), "malloc(32 MiB) failed without a word:\n%.600s", out);

	rc = run("align", "NODALLOC_ARENA_RESERVE=4M", out, sizeof out);
	CHECK(rc == 0, "aligned_alloc(32 MiB, 100) under 16 MiB slots: exit %d (7: not NULL with ENOMEM)", rc);
	CHECK(strstr(out, "an alignment of 32 MiB is larger than an arena slot (16 MiB"), "the warning:\n%.600s", out);

	rc = run("huge", NULL, out, sizeof out);
	CHECK(rc == 0, "malloc(SIZE_MAX - 4096): exit %d (8: not NULL with ENOMEM)", rc);
	CHECK(strstr(out, "larger than any address space") && !strstr(out, "NODALLOC_ARENA_RESERVE") &&
		      !strstr(out, "arena slot"),
	      "the warning:\n%.600s", out);
	return CHECK_DONE();
}
