// SPDX-License-Identifier: MIT
/*
 * The live statistics file (NODALLOC_STATS_EXPORT; issue 12, items 4, 5
 * and 13): created fresh by the process (0600, never a file that was
 * there, never through a link), removed at exit and on SIGTERM, the path
 * resolved once; `nodactl stat` refuses stale, foreign, cut and hostile
 * files, FIFOs and links, and bad --interval values.
 *
 * The writers are this binary re-executed ("child MODE") with the variable
 * set: it makes 1000 page runs, says "ready" and then waits, exits, or
 * chdirs and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "run_cmd.h"

static char self[4096];
static char dir[256];
static char errs[8192]; /* the last child's stderr */

static int child_again(void);

static const char *self_exe(void)
{
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	return exe;
}

static int child(int argc, char **argv)
{
	if (strcmp(argv[2], "again") == 0)
		return child_again();
	for (int i = 0; i < 1000; i++)
		if (!nd_malloc(64 << 10)) /* a page run each: numa_hit + 1 */
			return 2;
	printf("ready\n");
	fflush(stdout);
	if (strcmp(argv[2], "wait") == 0)
		for (;;)
			pause();
	if (strcmp(argv[2], "chdir") == 0 && chdir(argv[3]) != 0)
		return 3;
	if (strcmp(argv[2], "exec") == 0) {
		/* the same pid, another program: one without nodalloc
		 * (sleep), or this one again, counting 10 runs */
		sleep(1);
		if (strcmp(argv[3], "sleep") == 0)
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		else
			execl(self_exe(), "again", "child", "again", (char *)NULL);
		return 4;
	}
	return 0;
}

static int child_again(void)
{
	for (int i = 0; i < 10; i++)
		if (!nd_malloc(64 << 10))
			return 2;
	for (;;)
		pause();
}

/* Starts a writer with NODALLOC_STATS_EXPORT=value in dir; waits for its
 * "ready" (or its end). Its stderr goes to errs when it is reaped. */
static pid_t start(const char *value, const char *mode, const char *arg)
{
	char env[600], errpath[300];
	snprintf(env, sizeof env, "NODALLOC_STATS_EXPORT=%s", value);
	snprintf(errpath, sizeof errpath, "%s/stderr", dir);
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(e, 2);
		if (chdir(dir) != 0)
			_exit(126);
		char *envp[] = { env, NULL };
		execle(self, self, "child", mode, arg, (char *)NULL, envp);
		_exit(127);
	}
	close(p[1]);
	char buf[16] = "";
	ssize_t n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	CHECK(n == 6 && strncmp(buf, "ready\n", 6) == 0, "writer %s did not start", mode);
	return pid;
}

static int reap(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	char errpath[300];
	snprintf(errpath, sizeof errpath, "%s/stderr", dir);
	FILE *f = fopen(errpath, "r");
	size_t n = f ? fread(errs, 1, sizeof errs - 1, f) : 0;
	errs[n] = '\0';
	if (f)
		fclose(f);
	return st;
}

/* Reads an export file as nodactl does; numa_hit of node 0 or -1. */
static long long hits(const char *path, char *err, size_t errlen)
{
	static _nd_stats_all_t st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "open: %s", strerror(errno));
		return -1;
	}
	int pid;
	int r = _nd_stats_read_export(fd, &st, &pid, NULL, err, errlen);
	close(fd);
	return r == 0 ? (long long)st.nodes[0].numa_hit : -1;
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static bool exists(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0;
}

static void copy_file(const char *from, const char *to)
{
	char cmd[700];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 600 '%s'", from, to, to);
	CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "child") == 0)
		return child(argc, argv);
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1); /* the writers start elsewhere */
	self[sl > 0 ? sl : 0] = '\0';
	snprintf(dir, sizeof dir, "/tmp/nd-export-test-%d", (int)getpid());
	mkdir(dir, 0755);
	char path[400], err[256], other[400], cmd[1200];
	snprintf(path, sizeof path, "%s/live.stats", dir);

	/* Three runs killed with SIGKILL at the same path: each starts from
	 * zero (they once accumulated 1000, 2000, 3000); the dead one's file is
	 * refused as stale. */
	for (int run_i = 0; run_i < 3; run_i++) {
		pid_t pid = start(path, "wait", "");
		struct stat sb;
		CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_uid == geteuid(),
		      "mode %o", sb.st_mode & 0777);
		long long h = hits(path, err, sizeof err);
		CHECK(h >= 1000 && h < 1100, "run %d: numa_hit %lld (%s)", run_i, h, err);
		kill(pid, SIGKILL);
		reap(pid);
		CHECK(exists(path)); /* SIGKILL: nothing can remove it */
		CHECK(hits(path, err, sizeof err) < 0 && strstr(err, "has exited: a stale export"), "got: %s", err);
		CHECK_EQ(run(NODACTL " stat %s", path), 1);
		CHECK(strstr(run_out, "has exited: a stale export"), "got: %s", run_out);
	}

	/* SIGTERM (no handler in the program) and a normal exit remove it. */
	pid_t pid = start(path, "wait", "");
	kill(pid, SIGTERM);
	int st = reap(pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %x", st);
	CHECK(!exists(path), "left after SIGTERM");
	pid = start(path, "exit", "");
	CHECK_EQ(reap(pid), 0);
	CHECK(!exists(path), "left after exit");

	/* A relative path is the start directory's file, whatever the program
	 * chdirs to: the unlink at exit must not hit sub/rel.stats. */
	snprintf(other, sizeof other, "%s/sub", dir);
	mkdir(other, 0755);
	snprintf(other, sizeof other, "%s/sub/rel.stats", dir);
	put_file(other, "unrelated\n", 0644);
	pid = start("rel.stats", "chdir", "sub");
	CHECK_EQ(reap(pid), 0);
	CHECK(file_is(other, "unrelated\n"), "the unrelated file was removed or changed");
	snprintf(cmd, sizeof cmd, "%s/rel.stats", dir);
	CHECK(!exists(cmd), "the export in the start directory was left");

	/* What is at the path and is not our stale export is left alone, and
	 * nothing is published: a link (to a precious file), a FIFO, a file of
	 * ours that is no export, another user's file. */
	snprintf(other, sizeof other, "%s/precious", dir);
	put_file(other, "precious\n", 0644);
	CHECK(symlink(other, path) == 0);
	pid = start(path, "exit", "");
	CHECK_EQ(reap(pid), 0);
	CHECK(file_is(other, "precious\n"));
	CHECK(strstr(errs, "not publishing to") && strstr(errs, "not a regular file"), "got: %s", errs);
	CHECK(exists(path)); /* the link itself stays too */
	unlink(path);
	put_file(path, "my notes\n", 0644);
	pid = start(path, "exit", "");
	CHECK_EQ(reap(pid), 0);
	CHECK(file_is(path, "my notes\n"));
	CHECK(strstr(errs, "is not a nodalloc statistics export (left alone)"), "got: %s", errs);
	unlink(path);
	if (geteuid() == 0) {
		/* pre-created by another user, mode 666: never adopted */
		put_file(path, "", 0666);
		CHECK(chown(path, 65534, 65534) == 0);
		pid = start(path, "exit", "");
		CHECK_EQ(reap(pid), 0);
		struct stat sb;
		CHECK(stat(path, &sb) == 0 && sb.st_size == 0 && sb.st_uid == 65534);
		CHECK(strstr(errs, "belongs to uid 65534"), "got: %s", errs);
		unlink(path);
	} else {
		printf("skipped the other-user checks: not root\n");
	}
	CHECK(mkfifo(path, 0600) == 0);
	pid = start(path, "exit", "");
	CHECK_EQ(reap(pid), 0);
	CHECK(strstr(errs, "not a regular file"), "got: %s", errs);
	/* nodactl stat on a FIFO: refused at once, not blocked */
	CHECK_EQ(run("timeout 10 " NODACTL " stat %s", path), 1);
	CHECK(strstr(run_out, "not a regular file"), "got: %s", run_out);
	unlink(path);

	/* The reader on copies of a live export (same process, same owner). */
	pid = start(path, "wait", "");
	char copy[400];
	snprintf(copy, sizeof copy, "%s/copy.stats", dir);
	copy_file(path, copy);
	CHECK(hits(copy, err, sizeof err) >= 1000, "%s", err);
	CHECK_EQ(run(NODACTL " stat %s --json", copy), 0);
	CHECK(strstr(run_out, "\"numa_hit\":"), "got: %s", run_out);
	chmod(copy, 0666);
	CHECK(hits(copy, err, sizeof err) < 0 && strstr(err, "writable by other users"), "got: %s", err);
	chmod(copy, 0600);
	if (geteuid() == 0) {
		CHECK(chown(copy, 65534, 65534) == 0);
		CHECK(hits(copy, err, sizeof err) < 0 && strstr(err, "owned by uid 65534, but process"), "got: %s", err);
		CHECK(chown(copy, 0, 0) == 0);
	}
	CHECK(truncate(copy, 5000) == 0);
	CHECK(hits(copy, err, sizeof err) < 0 && strstr(err, "truncated"), "got: %s", err);
	/* a link to a valid export is refused */
	snprintf(other, sizeof other, "%s/link.stats", dir);
	CHECK(symlink(path, other) == 0);
	CHECK_EQ(run(NODACTL " stat %s", other), 1);
	CHECK(strstr(run_out, "symbolic link"), "got: %s", run_out);
	/* watched while it shrinks: an error, not SIGBUS */
	copy_file(path, copy);
	CHECK_EQ(run("(sleep 0.5; truncate -s 100 %s) & " NODACTL " stat %s --interval=0.1 --count=50 > /dev/null",
		     copy, copy),
		 1);
	CHECK(strstr(run_out, "truncated") && strstr(run_out, "while watching"), "got: %s", run_out);
	/* watching ends, status 0, when the program exits */
	CHECK_EQ(run("(sleep 0.5; kill %d) & timeout 20 " NODACTL " stat %s --interval=0.1 > /dev/null", (int)pid, path), 0);
	reap(pid);
	CHECK(!exists(path), "left after SIGTERM");
	pid = start(path, "wait", "");
	/* stat PID checks the pid in the file */
	CHECK_EQ(run(NODACTL " stat %d", (int)pid), 1); /* not in /dev/shm */
	kill(pid, SIGTERM);
	reap(pid);

	/* An exec keeps the pid and the start time: the export read by PID
	 * must be the program's that runs now. One that executes a program
	 * without nodalloc leaves its file, which `stat PID` refused to
	 * tell from a live one: sleep's name over the earlier program's
	 * 1000 runs. Watching ends with a line (status 0), stat and top
	 * refuse it then. */
	pid = start("1", "exec", "sleep");
	char shm[64];
	snprintf(shm, sizeof shm, "/dev/shm/nodalloc-%d.stats", (int)pid);
	CHECK(hits(shm, err, sizeof err) >= 1000, "%s", err);
	CHECK_EQ(run("timeout 20 " NODACTL " stat %d --interval=0.2 --count=40", (int)pid), 0);
	CHECK(strstr(run_out, "hit_runs") && strstr(run_out, "now runs sleep, which does not publish statistics"),
	      "got: %s", run_out);
	CHECK_EQ(run(NODACTL " stat %d", (int)pid), 1);
	CHECK(strstr(run_out, "no longer counts into it") && !strstr(run_out, "hit_runs"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " top --count=1 | grep -c ' %d '", (int)pid), 1); /* no line: grep fails */
	kill(pid, SIGKILL);
	reap(pid);
	unlink(shm);
	/* A program with nodalloc replaces the file: a watch goes on with
	 * it (10 runs, not 1000). */
	pid = start("1", "exec", "self");
	snprintf(shm, sizeof shm, "/dev/shm/nodalloc-%d.stats", (int)pid);
	CHECK_EQ(run("timeout 20 " NODACTL " stat %d --json --interval=0.2 --count=15", (int)pid), 0);
	const char *first = strstr(run_out, "\"numa_hit\":"), *last = first;
	for (const char *p = first; p; p = strstr(p + 1, "\"numa_hit\":"))
		last = p;
	CHECK(first && atol(first + 11) >= 1000 && atol(last + 11) >= 10 && atol(last + 11) < 1000, "got: %s", run_out);
	CHECK_EQ(run(NODACTL " stat %d", (int)pid), 0);
	CHECK(strstr(run_out, "(again)"), "got: %s", run_out);
	kill(pid, SIGTERM);
	reap(pid);
	CHECK(!exists(shm), "left after SIGTERM");

	/* --interval: a finite number of seconds > 0 */
	const char *bad[] = { "inf", "nan", "-1", "0", "1e400", "", "2x", "1e9" };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_EQ(run("timeout 10 " NODACTL " stat %s --interval=%s", path, bad[i]), 1);
		CHECK(strstr(run_out, "--interval expects a number of seconds"), "'%s': %s", bad[i], run_out);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return CHECK_DONE();
}
