// SPDX-License-Identifier: MIT
/* A statistics document is written whole: processes that print at once
 * into one file opened for append (NODALLOC_STATS=json on a shared
 * NODALLOC_MSG_FD, nodactl --stats-children, a shell's children exiting
 * together) each leave complete documents, never one split by another's.
 * Each document here is several KiB (every size class listed); before,
 * each 2 KiB of it was its own write and 16 processes printing 250 times
 * each interleaved. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"

#define PROCS 16
#define TIMES 250

static char text[48 << 20]; /* 4000 documents of a few KiB */

int main(void)
{
	/* every class in use: each document lists them all */
	static void *keep[2048];
	for (int i = 0; i < 2048; i++)
		keep[i] = malloc((size_t)(i + 1) * 16);
	char path[] = "/tmp/nd-stats-whole.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	int afd = open(path, O_WRONLY | O_APPEND);
	CHECK(afd >= 0, "open");
	int go[2];
	CHECK_EQ(pipe(go), 0);
	for (int p = 0; p < PROCS; p++) {
		pid_t pid = fork();
		if (pid == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) != 0) /* all start at once: at EOF */
				_exit(2);
			for (int t = 0; t < TIMES; t++)
				nd_stats_print_json(afd);
			_exit(0);
		}
		CHECK(pid > 0, "fork");
	}
	close(go[1]);
	close(go[0]);
	for (int p = 0; p < PROCS; p++) {
		int st;
		CHECK(wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d", p);
	}
	size_t k = 0;
	ssize_t n;
	while ((n = read(fd, text + k, sizeof text - 1 - k)) > 0)
		k += (size_t)n;
	text[k] = '\0';
	/* every line one document: starts with {"version", ends with }} */
	int docs = 0, bad = 0;
	size_t longest = 0;
	for (char *l = text, *e; *l; l = e + 1) {
		e = strchr(l, '\n');
		if (!e)
			break;
		size_t len = (size_t)(e - l);
		if (len > longest)
			longest = len;
		if (strncmp(l, "{\"version\":", 11) != 0 || len < 2 || l[len - 1] != '}' || l[len - 2] != ']' ||
		    memmem(l + 1, len - 1, "{\"version\":", 11))
			bad++;
		docs++;
	}
	CHECK(longest > 4096 && k < sizeof text - 1, "a document of %zu bytes (several KiB to test), %zu in all", longest, k);
	CHECK_EQ(docs, PROCS * TIMES);
	CHECK(bad == 0, "%d of %d lines are not one whole document", bad, docs);
	unlink(path);
	for (int i = 0; i < 2048; i++)
		free(keep[i]);
	return CHECK_DONE();
}
