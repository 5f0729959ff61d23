// SPDX-License-Identifier: MIT
/*
 * `nodactl top` lists every process that exports statistics (a
 * /dev/shm/nodalloc-PID.stats of --export, and the memfd of a program run
 * by nodactl --stats), named, skipping a stale export; `nodactl maps PID`
 * shows a process's per-node memory from numa_maps, nodalloc or not: the
 * same table as numastat -p (compared line by line when numastat is
 * installed), then by policy (nodactl -m 0 shows bind:0).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodactl_test.h"


#define PY "/usr/bin/python3"

static pid_t spawn(const char *const *argv, const char *env_name, const char *env_value)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (env_name)
			setenv(env_name, env_value, 1);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* the line of top's output for pid, or NULL */
static const char *line_of(int pid)
{
	char key[32];
	snprintf(key, sizeof key, "\n%7d ", pid);
	return strstr(run_out, key);
}

int main(void)
{
	if (access(PY, X_OK) != 0) {
		printf("SKIP: no %s\n", PY);
		return 77;
	}
	const char *prog = "import time; x = b'1' * (6 << 20); time.sleep(30)";
	pid_t e = spawn((const char *const[]){ NODACTL, "--export", "--", PY, "-c", prog, NULL }, NULL, NULL);
	pid_t s = spawn((const char *const[]){ NODACTL, "--stats", "--", PY, "-c", prog, NULL }, NULL, NULL);
	int sc = child_of(s);
	CHECK(sc > 0, "nodactl --stats started nothing");
	/* a stale export: its process killed, the file left */
	pid_t k = spawn((const char *const[]){ "/usr/bin/env", "LD_PRELOAD=" ND_BINARY_DIR "/libnodalloc.so",
					       "NODALLOC_STATS_EXPORT=1", PY, "-c", "import time; time.sleep(30)", NULL },
			NULL, NULL);
	char stale[64];
	snprintf(stale, sizeof stale, "/dev/shm/nodalloc-%d.stats", (int)k);
	usleep(2500000);
	CHECK(access(stale, F_OK) == 0, "bed: %s was not made", stale);
	kill(k, SIGKILL);
	waitpid(k, NULL, 0);

	CHECK_EQ(run(NODACTL " top --count=2 --interval=0.1"), 0);
	CHECK(strstr(run_out, "PID    PPID PROGRAM") != NULL, "got: %s", run_out);
	const char *le = line_of(e), *ls = line_of(sc);
	CHECK(le && strncmp(le + 17, "python3", 7) == 0, "the --export program %d not listed: %s", (int)e, run_out);
	CHECK(ls && strncmp(ls + 17, "python3", 7) == 0, "the --stats program %d not listed: %s", sc, run_out);
	CHECK(le && atof(le + 34) >= 6.0, "--export: in use < 6 MiB: %s", le);
	CHECK(!line_of(k), "stale export of %d listed: %s", (int)k, run_out);
	/* refreshed: two rounds */
	const char *second = strstr(run_out, "nodactl top:");
	CHECK(second && strstr(second + 1, "nodactl top:"), "not two rounds: %s", run_out);
	CHECK_EQ(run(NODACTL " top --count=x"), 1);
	CHECK(strstr(run_out, "nodactl: top: --count expects a number > 0, got 'x'"), "got: %s", run_out);
	unlink(stale);

	/* maps of a process that does not use nodalloc (coreutils sleep),
	 * bound by nodactl: numastat -p's table, then bind:0 by policy. */
	pid_t plain = spawn((const char *const[]){ "/bin/sleep", "30", NULL }, NULL, NULL);
	usleep(300000);
	CHECK_EQ(run(NODACTL " maps %d", (int)plain), 0);
	char want[128];
	snprintf(want, sizeof want, "\nPer-node process memory usage (in MBs) for PID %d (sleep)\n", (int)plain);
	CHECK(strncmp(run_out, want, strlen(want)) == 0, "got: %s", run_out);
	CHECK(strstr(run_out, "\nBy policy (MB per node)\ndefault ") != NULL, "got: %s", run_out);
	static char mine[sizeof run_out];
	snprintf(mine, sizeof mine, "%s", run_out);
	if (run("numastat -p %d", (int)plain) == 0) {
		size_t n = strlen(run_out);
		CHECK(strncmp(mine, run_out, n) == 0, "nodactl maps:\n%s\nnumastat -p:\n%s", mine, run_out);
	} else {
		printf("note: numastat not installed (apt-get install numactl): not compared\n");
	}
	kill(plain, SIGKILL);
	waitpid(plain, NULL, 0);
	/* bound by nodactl's kernel policy (sleep does not use nodalloc) */
	pid_t bound = spawn((const char *const[]){ NODACTL, "-m", "0", "--", "/bin/sleep", "30", NULL }, NULL, NULL);
	usleep(500000);
	CHECK_EQ(run(NODACTL " maps %d", (int)bound), 0);
	CHECK(strstr(run_out, "\nbind:0 ") != NULL, "no bind:0 memory: %s", run_out);
	kill(bound, SIGKILL);
	waitpid(bound, NULL, 0);
	CHECK_EQ(run(NODACTL " maps 999999999"), 1);
	CHECK(strstr(run_out, "nodactl: maps: /proc/999999999/numa_maps: No such file or directory"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " maps"), 1);

	kill(e, SIGTERM);
	kill(s, SIGTERM);
	waitpid(e, NULL, 0);
	waitpid(s, NULL, 0);
	return CHECK_DONE();
}
