// SPDX-License-Identifier: MIT
/*
 * Secure execution (issue 12, item 5): a set-user-ID-root program linked
 * with nodalloc, run by an unprivileged user (nobody, via setpriv), must
 * ignore every NODALLOC_* variable and say nothing about them: not the
 * emulated topology, not a sysfs tree holding a secret, not an export
 * path at a root-only file, not an unknown option. A control run of the
 * same binary without set-user-ID shows that the same environment is
 * otherwise honoured. Skipped (with the reason) when not root or setpriv
 * is missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nodalloc.h"
#include "run_cmd.h"

int main(int argc, char **argv)
{
	if (argc > 1) { /* the program under test */
		void *p = malloc(100);
		printf("child: uid %d euid %d nodes %d\n", (int)getuid(), (int)geteuid(), nd_node_limit());
		free(p);
		return 0;
	}
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
		printf("skipped: needs root and setpriv to make a set-user-ID program run by nobody\n");
		return CHECK_DONE();
	}
	char dir[128], prog[200], victim[200], cmd[4096], self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	self[sl > 0 ? sl : 0] = '\0';
	snprintf(dir, sizeof dir, "/tmp/nd-secure-%d", (int)getpid());
	mkdir(dir, 0755);
	chmod(dir, 0755);
	snprintf(prog, sizeof prog, "%s/prog", dir);
	snprintf(victim, sizeof victim, "%s/victim", dir);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 0755 '%s'", self, prog, prog);
	CHECK(system(cmd) == 0);
	FILE *f = fopen(victim, "w");
	fputs("root only\n", f);
	fclose(f);
	chmod(victim, 0600);
	int real_nodes = nd_node_limit();
	const char *env = "NODALLOC_TOPOLOGY='0: cpus=0 mem=1G; 1: cpus=1 mem=1G; 2: mem=1G' "
			  "NODALLOC_SYSFS_ROOT=" FIXTURES "sysfs-secret NODALLOC_VERBOSE=1 NODALLOC_BOGUS=1 "
			  "NODALLOC_STATS=1";
	/* Control: not set-user-ID, run by nobody: the environment counts
	 * (an export at the root-only file is refused: nobody cannot touch it). */
	CHECK_EQ(run("env %s NODALLOC_STATS_EXPORT=%s setpriv --reuid=65534 --regid=65534 --clear-groups %s child", env,
		     victim, prog),
		 0);
	CHECK(strstr(run_out, "child: uid 65534 euid 65534 nodes 3") && strstr(run_out, "unknown option NODALLOC_BOGUS"),
	      "control run: %s", run_out);
	/* Set-user-ID root, run by nobody: AT_SECURE. */
	CHECK(chown(prog, 0, 0) == 0 && chmod(prog, 04755) == 0);
	int rc = run("env %s NODALLOC_STATS_EXPORT=%s setpriv --reuid=65534 --regid=65534 --clear-groups %s child", env,
		     victim, prog);
	if (!strstr(run_out, "euid 0")) {
		printf("skipped: the set-user-ID bit had no effect here (nosuid mount?): %s\n", run_out);
	} else {
		CHECK_EQ(rc, 0);
		char want[64];
		snprintf(want, sizeof want, "child: uid 65534 euid 0 nodes %d\n", real_nodes);
		CHECK(strcmp(run_out, want) == 0, "secure run printed more than the child's line (or another topology): %s",
		      run_out);
		CHECK(!strstr(run_out, "nodalloc"), "a message under AT_SECURE: %s", run_out);
		CHECK(file_is(victim, "root only\n"), "the root-only file was changed or removed");
		/* and the default export path, planted as a link: not followed either */
		rc = run("env NODALLOC_STATS_EXPORT=1 setpriv --reuid=65534 --regid=65534 --clear-groups %s child", prog);
		CHECK(rc == 0 && !strstr(run_out, "nodalloc"), "%s", run_out);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return CHECK_DONE();
}
