// SPDX-License-Identifier: MIT
/*
 * run(): a shell command's exit status and its combined stdout+stderr (in
 * run_out), for tests that drive programs under the preloaded library or
 * nodactl. Exit status, or 128 + signal when the command died of one.
 */
#ifndef ND_RUN_CMD_H
#define ND_RUN_CMD_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static char run_out[1 << 16];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof cmd - 16) {
		fprintf(stderr, "run: command too long\n");
		return -1;
	}
	char full[sizeof cmd + 16];
	snprintf(full, sizeof full, "(%s) 2>&1", cmd);
	FILE *f = popen(full, "r");
	size_t got = f ? fread(run_out, 1, sizeof run_out - 1, f) : 0;
	run_out[got] = '\0';
	int st = f ? pclose(f) : -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Is the file at path exactly text? */
static bool file_is(const char *path, const char *text) __attribute__((unused));
static bool file_is(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	return f && strcmp(buf, text) == 0;
}

#define LIBND ND_BINARY_DIR "/libnodalloc.so"
#define LIBND_SONAME ND_BINARY_DIR "/libnodalloc.so.0" /* what nodactl preloads (by soname) */
#define NODACTL ND_BINARY_DIR "/nodactl"
#define FIXTURES ND_SOURCE_DIR "/tests/fixtures/"

#endif
