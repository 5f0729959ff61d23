// SPDX-License-Identifier: MIT
/*
 * docs/numactl.md's table has every numactl option (issue 13), and nodactl
 * knows each: it takes it or refuses it by name, never as an unknown
 * option. The options are numactl 2.0.16's table (numactl.c), and those
 * `numactl`'s own usage text names when numactl is installed (a newer
 * numactl's new options then show up here).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"
#include "nodactl_test.h"

static char doc[1 << 16];

static void check_option(const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "`--%s", name);
	CHECK(strstr(doc, key) != NULL, "docs/numactl.md has no row for --%s", name);
	/* a value for those that take one; --dry-run: nothing runs
	 * (--hardware is a command of its own, without --dry-run) */
	if (strcmp(name, "hardware") == 0) {
		CHECK_EQ(run(NODACTL " --hardware"), 0);
		return;
	}
	run(NODACTL " --dry-run --%s=0 -- true", name);
	if (strstr(run_out, "takes no value"))
		run(NODACTL " --dry-run --%s -- true", name);
	CHECK(!strstr(run_out, "unrecognized option") && !strstr(run_out, "ambiguous"), "--%s: %s", name, run_out);
}

int main(void)
{
	FILE *f = fopen(ND_SOURCE_DIR "/docs/numactl.md", "r");
	CHECK(f != NULL, "no docs/numactl.md");
	size_t n = f ? fread(doc, 1, sizeof doc - 1, f) : 0;
	doc[n] = '\0';
	if (f)
		fclose(f);
	static const char *const v2016[] = { "all", "interleave", "preferred", "preferred-many", "cpubind",
					     "cpunodebind", "physcpubind", "membind", "show", "localalloc",
					     "hardware", "shm", "file", "offset", "length", "strict", "shmmode",
					     "dump", "dump-nodes", "shmid", "huge", "touch", "verify", "balancing" };
	for (size_t i = 0; i < sizeof v2016 / sizeof v2016[0]; i++)
		check_option(v2016[i]);
	/* numactl's usage text (it has no --help: the usage comes with the error) */
	if (run("numactl --help") == 127 || !strstr(run_out, "usage: numactl")) {
		printf("note: numactl not installed: its usage text not compared\n");
		return CHECK_DONE();
	}
	static char usage[sizeof run_out];
	snprintf(usage, sizeof usage, "%s", run_out);
	int seen = 0;
	for (const char *p = usage; (p = strstr(p, "--")); ) {
		p += 2;
		size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz-");
		if (len < 2)
			continue;
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)len, p);
		if (strcmp(name, "help") != 0)
			check_option(name);
		seen++;
	}
	CHECK(seen >= 20, "only %d options in numactl's usage: %s", seen, usage);
	return CHECK_DONE();
}
