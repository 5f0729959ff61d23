// SPDX-License-Identifier: MIT
/*
 * calloc of a page run zeroes only pages that may hold old data: a large
 * calloc of fresh memory commits nothing until touched (as glibc's mmap'd
 * calloc), and reused memory is zero all the same, whatever the purge mode.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

/* Resident KiB from /proc/self/statm, without allocating. */
static long rss_kb(void)
{
	char b[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	b[n > 0 ? n : 0] = '\0';
	long size, res;
	return sscanf(b, "%ld %ld", &size, &res) == 2 ? res * 4 : -1;
}

static long nonzero(const unsigned char *p, size_t n)
{
	long bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != 0;
	return bad;
}

/* Dirty a run, free it, calloc it back: must read as zero. Sizes below and
 * above the purge threshold (1 MiB: below stays committed and dirty). */
static void reuse_is_zero(void)
{
	static const size_t sizes[] = { 40 << 10, 512 << 10, 900 << 10, 3 << 20 };
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t n = sizes[i];
		unsigned char *a = malloc(n);
		memset(a, 0xAA, n);
		free(a);
		unsigned char *z = calloc(1, n);
		CHECK(z != NULL);
		CHECK_EQ(nonzero(z, n), 0);
		memset(z, 0x55, n);
		free(z);
	}
	/* a small object too (slab: always cleared) */
	unsigned char *s = malloc(100);
	memset(s, 0xFF, 100);
	free(s);
	s = calloc(10, 10);
	CHECK_EQ(nonzero(s, 100), 0);
	free(s);
}

/* Page runs below the purge threshold taken from fresh pages: untouched
 * too, though such a run's pages all count as committed once taken (its
 * head's ND_PGF_FRESH; before branch burst4 calloc wrote them all). */
static void fresh_small_runs(void)
{
	enum { N = 160, SZ = 100 << 10 }; /* 16 MiB of 25-page runs */
	static unsigned char *b[N];
	long r0 = rss_kb();
	for (int i = 0; i < N; i++)
		b[i] = calloc(1, SZ);
	long r1 = rss_kb();
	CHECK(r1 - r0 < 2048, "calloc of %d fresh %d KiB runs made %ld KiB resident", N, SZ >> 10, r1 - r0);
	long bad = 0;
	for (int i = 0; i < N; i++) {
		CHECK(b[i] != NULL);
		bad += nonzero(b[i], SZ);
		free(b[i]);
	}
	CHECK_EQ(bad, 0);
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* re-executed with NODALLOC_PURGE=free */
		reuse_is_zero();
		return CHECK_DONE();
	}
	fresh_small_runs();
	long r0 = rss_kb();
	unsigned char *p = calloc(1, 64 << 20);
	long r1 = rss_kb();
	CHECK(p != NULL);
	CHECK(r1 - r0 < 4096, "calloc(64 MiB) made %ld KiB resident: fresh pages were touched", r1 - r0);
	CHECK_EQ(nonzero(p, 64 << 20), 0);
	free(p);

	reuse_is_zero();

	/* overflow and zero sizes */
	volatile size_t huge = SIZE_MAX / 2; /* at run time: gcc warns on constants */
	errno = 0;
	CHECK(calloc(huge, 3) == NULL && errno == ENOMEM);
	void *z = calloc(0, 0);
	CHECK(z != NULL);
	free(z);

	pid_t pid = fork();
	if (pid == 0) {
		char *env[] = { "NODALLOC_PURGE=free", NULL };
		execle(argv[0], argv[0], "purge-free", (char *)NULL, env);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "with NODALLOC_PURGE=free: status %d", st);
	return CHECK_DONE();
}
