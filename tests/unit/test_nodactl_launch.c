// SPDX-License-Identifier: MIT
/*
 * nodactl end to end: bad arguments fail cleanly and by name; a policy
 * given on the command line reaches the program (its nd_node_of and its
 * statistics say so); --stats=json is valid JSON; `nodactl stat PID` reads
 * a live process. The programs are python3 (Debian's, not a shim) reaching
 * the preloaded library through ctypes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodactl_test.h"


#define SPEC "0: cpus=0 mem=256M; 1: cpus=1 mem=256M; 2: mem=256M"

static const char *python(void)
{
	return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* A python program printing the node of a small and of a large allocation
 * made through the preloaded library. */
#define PROBE                                                                     \
	"import ctypes; l = ctypes.CDLL(None); l.nd_malloc.restype = ctypes.c_void_p; " \
	"s = l.nd_malloc(64); b = l.nd_malloc(1 << 20); "                             \
	"print('nodes', l.nd_node_of(ctypes.c_void_p(s)), l.nd_node_of(ctypes.c_void_p(b)))"

int main(void)
{
	/* Bad arguments: exit 1, the argument named. */
	CHECK_EQ(run(NODACTL " --membind=9 -- true"), 1);
	CHECK(strstr(run_out, "--membind: node list: node 9") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --interleave=0 --granularity=3K -- true"), 1);
	CHECK(strstr(run_out, "--granularity expects a power-of-two size") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --membind=0 --weights=0=2 -- true"), 1);
	CHECK(strstr(run_out, "--weights goes with --interleave") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --membind=0 --preferred=0 -- true"), 1);
	CHECK(strstr(run_out, "nodactl: Conflicting policies: --preferred after --membind") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --stats=xml -- true"), 1);
	CHECK(strstr(run_out, "--stats takes text or json, got 'xml'") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --interleave=0"), 1);
	CHECK(strstr(run_out, "no program to run") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --topology='0: cpus=0 mem=lots' -- true"), 1);
	CHECK(strstr(run_out, "nodactl: --topology: topology spec: node 0: mem: bad size 'lots'") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --topology='" SPEC "' --weights=0=1,5=1 -- true"), 1);
	/* the policy named once, after the option that made it */
	CHECK(strstr(run_out, "nodactl: --weights: policy 'weighted:0=1,5=1': node 5") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " -- /nonexistent/program"), 127);

	/* The policy reaches the program: preferred node 2 of an emulated
	 * machine, small and large allocations both there. */
	CHECK_EQ(run(NODACTL " --topology='" SPEC "' --preferred=2 -- %s -c \"" PROBE "\"", python()), 0);
	CHECK(strstr(run_out, "nodes 2 2") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --topology='" SPEC "' -m 1 -- %s -c \"" PROBE "\"", python()), 0);
	CHECK(strstr(run_out, "nodes 1 1") != NULL, "got: %s", run_out);

	/* --stats=json: valid JSON whose counters show the policy (bind to 1:
	 * node 1 has hits, node 2 none). */
	CHECK_EQ(run(NODACTL " --topology='" SPEC "' --membind=1 --stats=json -- %s -c \"" PROBE "\""
		     " 2>&1 | %s -c \"import json,sys; t=[l for l in sys.stdin if l.startswith('{')][-1]; d=json.loads(t)['nodes'];"
		     " print('hits', d['1']['numa_hit'] > 0, d['2']['numa_hit'])\"",
		     python(), python()),
		 0);
	CHECK(strstr(run_out, "hits True 0") != NULL, "got: %s", run_out);

	/* Interleave with a granularity reaches nd_malloc of a large block: the
	 * spread covers both nodes of the set. */
	CHECK_EQ(run(NODACTL " --topology='" SPEC "' --interleave=0,2 --granularity=64K --stats=json -- %s -c \""
		     "import ctypes; l = ctypes.CDLL(None); l.nd_malloc.restype = ctypes.c_void_p; p = l.nd_malloc(8 << 20); "
		     "print('spread', sorted({l.nd_node_of(ctypes.c_void_p(p + i)) for i in range(0, 8 << 20, 65536)}))\"",
		     python()),
		 0);
	CHECK(strstr(run_out, "spread [0, 2]") != NULL, "got: %s", run_out);

	/* nodactl stat PID on a live process started with --export. */
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", 1);
		dup2(devnull, 1);
		execl(NODACTL, "nodactl", "--export", "--", python(), "-c",
		      "import time; x = [bytes(200000) for i in range(20)]; time.sleep(20)", (char *)NULL);
		_exit(127);
	}
	char path[128];
	snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", (int)pid);
	struct stat sb;
	int waited = 0;
	while (stat(path, &sb) != 0 && waited < 100) {
		usleep(100000);
		waited++;
	}
	CHECK(waited < 100, "no export file %s", path);
	/* until it has allocated its 4 MB: up to 30 s on a loaded machine */
	for (int i = 0; i < 300; i++) {
		if (run(NODACTL " stat %d --json | %s -c \"import json,sys; d=json.load(sys.stdin)['nodes']['0'];"
			" print('live', d['numa_hit'] > 0, d['bytes_in_use'] >= 4000000)\"",
			(int)pid, python()) == 0 &&
		    strstr(run_out, "live True True"))
			break;
		usleep(100000);
	}
	CHECK(strstr(run_out, "live True True") != NULL, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " stat %d", (int)pid), 0);
	CHECK(strstr(run_out, "hit_runs") != NULL && strstr(run_out, "node0") != NULL, "got: %s", run_out);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	CHECK_EQ(run(NODACTL " stat 999999999"), 1);
	CHECK(strstr(run_out, "was the process started with nodactl --export") != NULL, "got: %s", run_out);

	/* A set-user-ID program (of another user): the loader drops
	 * LD_PRELOAD, so what only nodalloc does is said not to apply, as
	 * for a static one (nothing was said, audit16). It runs, with the
	 * kernel policy. */
	if (geteuid() == 0) {
		char dir[] = "/tmp/nd-suid-XXXXXX", prog[64];
		CHECK(mkdtemp(dir) != NULL);
		chmod(dir, 0755);
		snprintf(prog, sizeof prog, "%s/sleep", dir);
		CHECK_EQ(run("cp /bin/sleep %s && chown 65534:65534 %s && chmod 4755 %s", prog, prog, prog), 0);
		CHECK_EQ(run(NODACTL " -i all --granularity=2M -- %s 0", prog), 0);
		CHECK(strstr(run_out, "is set-user-ID: the dynamic loader ignores LD_PRELOAD") &&
		      strstr(run_out, "granularity, weights, tier order, statistics and checks do not apply"),
		      "got: %s", run_out);
		CHECK_EQ(run(NODACTL " --dry-run -i all -- %s 0", prog), 0);
		CHECK(strstr(run_out, "(set-user-ID: only the kernel policy and CPU binding apply)"), "got: %s", run_out);
		CHECK_EQ(run(NODACTL " -i all --granularity=2M -- /bin/sleep 0"), 0);
		CHECK(!strstr(run_out, "set-user-ID"), "got: %s", run_out);
		unlink(prog);
		rmdir(dir);
	} else {
		printf("test_nodactl_launch: not root, set-user-ID case skipped\n");
	}
	return CHECK_DONE();
}
