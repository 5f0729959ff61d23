// SPDX-License-Identifier: MIT
/*
 * No fixed buffer in nodactl cuts what the user typed (issue 12 item 12):
 * every list, value and path either reaches the program whole or is
 * refused by an error naming the argument. Each case below was cut
 * silently before (the comment says how), except where noted.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodactl_test.h"

#define TWO "--topology='0: cpus=0 mem=1G; 1: cpus=1 mem=1G'"

static bool has(const char *s) { return strstr(run_out, s) != NULL; }

/* the text after "prefix" up to the end of its line, in run_out */
static const char *line_after(const char *prefix, char *buf, size_t len)
{
	const char *p = strstr(run_out, prefix);
	if (!p)
		return "";
	p += strlen(prefix);
	size_t n = strcspn(p, "\n");
	snprintf(buf, len, "%.*s", (int)n, p);
	return buf;
}

static char big[16384], line[16384];

int main(void)
{
	/* The case of the issue: a 257-character list validated, then cut to
	 * 256 (an interleave over node 0 only). */
	size_t k = 0;
	for (int i = 0; i < 128; i++)
		k += (size_t)sprintf(big + k, "0,");
	sprintf(big + k, "1");
	CHECK_EQ(strlen(big), 257);
	CHECK_EQ(run(NODACTL " --dry-run " TWO " --interleave=%s -- true", big), 0);
	CHECK_STR(line_after("nodalloc policy: ", line, sizeof line), "interleave:0-1");

	/* A list of 512 nodes (1024 emulated): the policy was cut at 512
	 * characters, to nodes 0-282 and a last entry "28". */
	const char *spec = "--topology='0: cpus=0 mem=16M; 1-1023: mem=16M'";
	k = 0;
	for (int i = 0; i < 1024; i += 2)
		k += (size_t)sprintf(big + k, "%s%d", i ? "," : "", i);
	CHECK_EQ(run(NODACTL " --dry-run %s -i %s -- true", spec, big), 0);
	char want[16384];
	snprintf(want, sizeof want, "interleave:%s", big);
	CHECK_STR(line_after("nodalloc policy: ", line, sizeof line), want);
	CHECK_STR(line_after("environment: NODALLOC_POLICY=", line, sizeof line), want);

	/* --weights of 630 characters with --granularity: "weighted:" + 630
	 * filled the 640-byte policy, and "@2M" was dropped; "+tier" too. */
	k = (size_t)sprintf(big, "0=");
	while (k < 630 - strlen("3,1=1"))
		big[k++] = '0';
	sprintf(big + k, "3,1=1");
	CHECK_EQ(strlen(big), 630);
	CHECK_EQ(run(NODACTL " --dry-run " TWO " --weights=%s --granularity=2M -- true", big), 0);
	snprintf(want, sizeof want, "weighted:%s@2M", big);
	CHECK_STR(line_after("nodalloc policy: ", line, sizeof line), want);
	CHECK_EQ(run(NODACTL " --dry-run " TWO " --weights=%s --tier-order -- true", big), 0);
	snprintf(want, sizeof want, "weighted:%s+tier", big);
	CHECK_STR(line_after("nodalloc policy: ", line, sizeof line), want);

	/* Longer than the library takes (4095): refused by the option, not
	 * passed on for the program to refuse (--dry-run said it was fine). */
	k = (size_t)sprintf(big, "0: cpus=0 mem=1G; 1: cpus=1 mem=1G");
	while (k < 5000)
		big[k++] = ';';
	big[k] = '\0';
	CHECK_EQ(run(NODACTL " --dry-run --topology='%s' -- true", big), 1);
	CHECK(has("nodactl: --topology: the spec is 5000 characters, more than the 4095 NODALLOC_TOPOLOGY takes"),
	      "got: %.300s", run_out);
	big[4095] = '\0'; /* the longest it takes: fine */
	CHECK_EQ(run(NODACTL " --dry-run --topology='%s' -- true", big), 0);
	k = 0;
	for (int i = 0; i < 1100; i++) /* 4408 characters */
		k += (size_t)sprintf(big + k, "%s0=1", i ? "," : "");
	CHECK_EQ(run(NODACTL " --dry-run " TWO " --weights=%s -- true", big), 1);
	CHECK(has("nodactl: --weights: the policy 'weighted:0=1,0=1") && has("more than the 4095 NODALLOC_POLICY takes"),
	      "got: %.300s", run_out);

	/* The program's LD_PRELOAD is kept whole after nodalloc's (cut at
	 * 8192 before). Empty entries: the loader skips them quietly. */
	memset(big, ':', 9000);
	strcpy(big + 9000, "/lib/x86_64-linux-gnu/libc.so.6");
	setenv("LD_PRELOAD", big, 1);
	CHECK_EQ(run(NODACTL " --dry-run " TWO " -- true"), 0);
	unsetenv("LD_PRELOAD");
	snprintf(want, sizeof want, "%s:%s", LIBND_SONAME, big);
	CHECK_STR(line_after("environment: LD_PRELOAD=", line, sizeof line), want);

	/* NODALLOC_LIBRARY longer than a path: named (was cut, then looked
	 * for at the cut path) */
	memset(big, 'l', 5000);
	big[5000] = '\0';
	setenv("NODALLOC_LIBRARY", big, 1);
	run(NODACTL " --dry-run " TWO " -- true");
	unsetenv("NODALLOC_LIBRARY");
	CHECK(has("nodactl: NODALLOC_LIBRARY: path longer than 4095 characters"), "got: %.300s", run_out);

	/* More options than the old table of 64 (was "too many options"). */
	k = 0;
	for (int i = 0; i < 100; i++)
		k += (size_t)sprintf(big + k, " -N 0");
	CHECK_EQ(run(NODACTL " --dry-run " TWO "%s -- true", big), 0);

	/* A value given to an option that takes none: named (was "invalid
	 * option '-a'", and a control character for --tier-order). */
	static const char *const no_value[][2] = {
		{ "--all=3", "nodactl: option '--all' takes no value\n" },
		{ "--tier-order=x", "nodactl: option '--tier-order' takes no value\n" },
		{ "--dry=1", "nodactl: option '--dry-run' takes no value\n" },
		/* prefixes nothing (was "ambiguous" with every option listed) */
		{ "--=x", "nodactl: unrecognized option '--=x'\n" },
	};
	for (size_t i = 0; i < sizeof no_value / sizeof no_value[0]; i++) {
		CHECK_EQ(run(NODACTL " %s -- true", no_value[i][0]), 1);
		CHECK(has(no_value[i][1]), "%s: %s", no_value[i][0], run_out);
	}

	/* top's --interval as stat's: finite, > 0 (nan and inf were taken,
	 * then slept as (useconds_t)nan); --count without overflow. */
	static const char *const bad_top[] = { "--interval=nan", "--interval=inf", "--interval=1e300",
					       "--interval=-1", "--count=99999999999999999999", "--count=0" };
	for (size_t i = 0; i < sizeof bad_top / sizeof bad_top[0]; i++) {
		CHECK_EQ(run(NODACTL " top %s --count=1", bad_top[i]), 1);
		CHECK(has("nodactl: top: --"), "%s: %s", bad_top[i], run_out);
	}
	CHECK_EQ(run(NODACTL " maps 99999999999999999999"), 1);
	CHECK(has("nodactl: maps: expects a process id, got '99999999999999999999'"), "got: %s", run_out);

	/* A process label from an argv[0] longer than 256 characters: its
	 * last component (a cut argv[0] showed a directory's letters). */
	k = (size_t)sprintf(big, "/");
	while (k < 400)
		big[k++] = 'd';
	sprintf(big + k, "/myprogram");
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sleep", big, "20", (char *)NULL);
		_exit(127);
	}
	/* exec'ed: its cmdline is the new argv, not ours (waits up to 10 s) */
	char path[64], cmd[1024] = "";
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	for (int i = 0; i < 1000 && !strstr(cmd, "/myprogram"); i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
		cmd[n] = '\0';
		if (f)
			fclose(f);
		if (!strstr(cmd, "/myprogram"))
			usleep(10000);
	}
	CHECK_EQ(run(NODACTL " maps %d", (int)pid), 0);
	CHECK(has("for PID") && has("(myprogram)\n"), "got: %.400s", run_out);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return CHECK_DONE();
}
