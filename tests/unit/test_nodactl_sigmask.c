// SPDX-License-Identifier: MIT
/*
 * The program `nodactl --stats [--export] --` starts has its caller's
 * signal mask and dispositions, whatever nodactl does with its own
 * (1258d39: it blocks the signals it forwards while it sets up, and
 * ignores SIGPIPE around its go write; audit20 checked neither leaks):
 * the program's SigBlk and SigIgn (/proc/self/status) are those of the
 * same program started without nodactl, with an empty mask and with
 * SIGTERM, SIGUSR1 blocked and SIGPIPE, SIGHUP ignored.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "run_cmd.h"

/* The SigBlk and SigIgn lines of grep's own /proc/self/status, grep run
 * straight (no shell: sh resets the mask) with nodactl's options before
 * it (opts NULL: without nodactl), into out (nodactl's report, on
 * stderr, has no such line). */
static void masks(const char *opts, char *out, size_t len)
{
	const char *argv[16];
	int n = 0;
	char buf[128], all[1 << 14];
	if (opts) {
		snprintf(buf, sizeof buf, "%s", opts);
		argv[n++] = NODACTL;
		for (char *w = strtok(buf, " "); w; w = strtok(NULL, " "))
			argv[n++] = w;
		argv[n++] = "--";
	}
	argv[n++] = "/bin/grep";
	argv[n++] = "-E";
	argv[n++] = "^Sig(Blk|Ign)";
	argv[n++] = "/proc/self/status";
	argv[n] = NULL;
	int st = run_child(argv[0], (char *const *)argv, NULL, NULL, true, all, sizeof all);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status 0x%x: %s", opts ? opts : "grep", st, all);
	out[0] = '\0';
	for (const char *p = all; (p = strstr(p, "Sig")) != NULL; p++)
		if (p == all || p[-1] == '\n') {
			const char *e = strchr(p, '\n');
			size_t k = e ? (size_t)(e - p + 1) : strlen(p);
			if (strlen(out) + k < len)
				strncat(out, p, k);
		}
}

static void compare(const char *what)
{
	char want[256], got[256];
	masks(NULL, want, sizeof want);
	CHECK(strstr(want, "SigBlk:") && strstr(want, "SigIgn:"), "%s: no masks read: %s", what, want);
	const char *modes[] = { "--stats", "--stats --export", "--stats=json --stats-children" };
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		masks(modes[m], got, sizeof got);
		CHECK(strcmp(want, got) == 0, "%s, nodactl %s: the program's masks\n%s  differ from its caller's\n%s", what,
		      modes[m], got, want);
	}
}

int main(void)
{
	sigset_t none, some;
	sigemptyset(&none);
	CHECK_EQ(sigprocmask(SIG_SETMASK, &none, NULL), 0);
	signal(SIGPIPE, SIG_DFL);
	compare("empty mask");

	sigemptyset(&some);
	sigaddset(&some, SIGTERM);
	sigaddset(&some, SIGUSR1);
	CHECK_EQ(sigprocmask(SIG_SETMASK, &some, NULL), 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	compare("SIGTERM, SIGUSR1 blocked, SIGPIPE, SIGHUP ignored");
	return CHECK_DONE();
}
