// SPDX-License-Identifier: MIT
/*
 * A daemon's live statistics (NODALLOC_STATS_EXPORT=1) are found under its
 * own pid (audit17). Before, a forked child stopped counting into its
 * parent's file and published none: after a daemonizing double fork
 * (the parent exits, the first child calls setsid, forks and _exits) the
 * only files were the parent's (removed at its exit) and nothing named the
 * daemon; `nodactl stat DAEMON` found no file.
 *
 * The writer is this binary re-executed ("daemon") with the variable set.
 * It makes page runs, writes its numa_hit count to the pipe, forks and
 * exits; its child forks and _exits (its file stays, stale); the grandchild
 * makes more runs, writes its pid (its parent wrote its own), and waits for
 * SIGTERM. Checked: the daemon's file names it and starts from its parent's
 * figures, `nodactl stat PID` shows it, the parent's file went with it,
 * the first child's is refused as stale, SIGTERM removes the daemon's.
 * And a process whose 20 children publish and end by _exit leaves none
 * of their files (each fork's child and its exit remove its gone
 * children's: 20 files left without that).
 * And a sweep leaves the file of a pid that runs (audit19): a child still
 * running, whose path now holds an export not yet published (as nodactl's
 * for a program it launched under a reused pid, or export_create's before
 * its header), was taken as stale by the next child's sweep and removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "nodalloc.h"
#include "run_cmd.h"

static long long hits_now(void)
{
	static nd_stats_t s;
	s.version = ND_STATS_VERSION;
	if (nd_stats_get(&s) != 0)
		return -1;
	long long h = 0;
	for (int n = 0; n < s.node_limit; n++)
		h += (long long)s.nodes[n].numa_hit;
	return h;
}

static void runs(int k)
{
	for (int i = 0; i < k; i++) {
		char *p = malloc(1 << 20);
		if (p)
			p[0] = 1; /* kept: each one a page run */
	}
}

static int daemon_main(void)
{
	runs(8);
	dprintf(1, "%lld\n", hits_now());
	pid_t parent = getpid();
	pid_t c1 = fork();
	if (c1 < 0)
		return 3;
	if (c1 > 0)
		exit(0); /* the parent goes: its destructor removes its file */
	/* The parent's exit sweeps its children's stale files (kids_sweep):
	 * had this child ended first, its file would go with the parent's
	 * (failed in a loaded ctest). It waits until the
	 * parent is gone (this process reparented to the test, the
	 * subreaper), so that its file is left stale as a daemon's first
	 * child leaves it once its parent has gone. */
	while (getppid() == parent)
		usleep(1000);
	setsid();
	dprintf(1, "%d\n", (int)getpid());
	pid_t c2 = fork();
	if (c2 < 0)
		_exit(4);
	if (c2 > 0)
		_exit(0); /* no destructor: this child's file stays, stale */
	runs(8);
	dprintf(1, "%d\n", (int)getpid());
	return -1;
}

static char path_of_buf[3][64];
static const char *path_of(int k, int pid)
{
	snprintf(path_of_buf[k], sizeof path_of_buf[k], "/dev/shm/nodalloc-%d.stats", pid);
	return path_of_buf[k];
}

static int read_export(const char *path, long long *hits, int *owner, char *err, size_t len)
{
	static _nd_stats_all_t st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, len, "open: %s", strerror(errno));
		return -3;
	}
	int r = _nd_stats_read_export(fd, &st, owner, NULL, err, len);
	close(fd);
	*hits = 0;
	for (int n = 0; r == 0 && n < st.node_limit; n++)
		*hits += (long long)st.nodes[n].numa_hit;
	return r;
}

/* pid ended and was reaped (this process is the orphans' subreaper: a
 * zombie would still be a running process to the export's reader) */
static bool gone(int pid)
{
	for (int i = 0; i < 200; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid || (kill(pid, 0) != 0 && errno == ESRCH))
			return true;
		usleep(50000);
	}
	return false;
}

/* Children that end by _exit (a worker pool's, fork and exec failing):
 * each publishes its file and leaves it; the next fork's child and this
 * process's exit remove them (stats.c kids_sweep). */
static int spawn_main(void)
{
	for (int i = 0; i < 20; i++) {
		pid_t c = fork();
		if (c < 0)
			return 3;
		if (c == 0) {
			runs(1);
			dprintf(1, "%d\n", (int)getpid());
			_exit(0);
		}
		waitpid(c, NULL, 0);
	}
	return 0;
}

/* A child that runs while its path holds an unpublished export (an
 * export's size, magic 0), then a second child (its sweep): prints the
 * first child's pid and whether that file is still there. */
static int unpub_main(void)
{
	int go[2], done[2];
	if (pipe(go) != 0 || pipe(done) != 0)
		return 3;
	pid_t x = fork();
	if (x < 0)
		return 3;
	char path[64];
	if (x == 0) {
		snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", (int)getpid());
		unlink(path); /* its own, published: replaced by one in the making */
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
		char c = fd >= 0 && ftruncate(fd, (off_t)_nd_stats_export_size()) == 0 ? 'y' : 'n';
		if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) < 0)
			c = 0;
		_exit(0);
	}
	char c = 0;
	if (read(go[0], &c, 1) != 1 || c != 'y')
		return 4;
	pid_t y = fork(); /* publishes its own file and sweeps the ring (x) */
	if (y == 0)
		_exit(0);
	if (y < 0)
		return 3;
	waitpid(y, NULL, 0);
	snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", (int)x);
	dprintf(1, "%d %d\n", (int)x, access(path, F_OK) == 0);
	if (write(done[1], &c, 1) != 1)
		return 5;
	waitpid(x, NULL, 0);
	unlink(path);
	return 0;
}

/* This binary re-executed as mode with NODALLOC_STATS_EXPORT=1, its
 * stdout the pipe p (p[0] left open here). */
static pid_t writer(const char *self, const char *mode, int p[2])
{
	CHECK(pipe(p) == 0, "pipe");
	pid_t w = fork();
	if (w == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]); /* the writers hold only their stdout: EOF when they close it */
		char *envp[] = { "NODALLOC_STATS_EXPORT=1", NULL };
		execle(self, self, mode, (char *)NULL, envp);
		_exit(127);
	}
	close(p[1]);
	return w;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "spawn") == 0)
		return spawn_main();
	if (argc > 1 && strcmp(argv[1], "unpub") == 0)
		return unpub_main();
	if (argc > 1 && strcmp(argv[1], "daemon") == 0) {
		if (daemon_main() != -1)
			return 2;
		close(1);
		for (;;)
			pause();
	}
	char self[4096];
	ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
	self[sn > 0 ? sn : 0] = '\0';
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "subreaper");
	int p[2];
	pid_t w = writer(self, "daemon", p);
	int st;
	waitpid(w, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer exited 0 (status %d)", st);
	char buf[128] = "";
	size_t got = 0;
	for (ssize_t n; got < sizeof buf - 1 && (n = read(p[0], buf + got, sizeof buf - 1 - got)) > 0;)
		got += (size_t)n;
	close(p[0]);
	long long parent_hits = -1;
	int c1 = 0, dpid = 0;
	CHECK(sscanf(buf, "%lld %d %d", &parent_hits, &c1, &dpid) == 3 && c1 > 0 && dpid > 0,
	      "the writer, its child and the daemon said their figures and pids: '%s'", buf);
	if (dpid <= 0 || c1 <= 0)
		return CHECK_DONE();
	CHECK(access(path_of(0, w), F_OK) != 0, "the parent's file went at its exit: %s", path_of(0, w));
	/* the first child _exited: its file stays, refused as stale */
	CHECK(gone(c1), "the first child ended");
	long long h = 0;
	int owner = 0;
	char err[256] = "";
	CHECK(read_export(path_of(2, c1), &h, &owner, err, sizeof err) == -2, "the first child's file is stale: %s", err);
	unlink(path_of(2, c1));

	int r = read_export(path_of(1, dpid), &h, &owner, err, sizeof err);
	CHECK(r == 0, "the daemon publishes its own file %s: %s", path_of(1, dpid), err);
	CHECK_EQ(owner, dpid);
	CHECK(h >= parent_hits + 8, "the daemon's figures start from its parent's (%lld) and count its runs: %lld",
	      parent_hits, h);

	int rc = run("%s stat %d", NODACTL, dpid);
	char want[64];
	snprintf(want, sizeof want, "statistics of pid %d ", dpid);
	CHECK(rc == 0 && strstr(run_out, want), "nodactl stat %d (rc %d): %s", dpid, rc, run_out);

	/* 20 children that _exit: none of their files is left */
	int q[2];
	pid_t sp = writer(self, "spawn", q);
	FILE *f = fdopen(q[0], "r");
	int kid[32], kids = 0, left = 0;
	while (f && kids < 32 && fscanf(f, "%d", &kid[kids]) == 1)
		kids++;
	if (f)
		fclose(f);
	waitpid(sp, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && kids == 20, "the spawner ran its 20 children (status %d, %d)", st,
	      kids);
	for (int i = 0; i < kids; i++)
		if (access(path_of(2, kid[i]), F_OK) == 0) {
			left++;
			unlink(path_of(2, kid[i]));
		}
	CHECK(left == 0, "%d of its children's stale files left in /dev/shm", left);

	/* a running child's unpublished file survives the next child's sweep */
	pid_t up = writer(self, "unpub", q);
	memset(buf, 0, sizeof buf);
	got = 0;
	for (ssize_t n; got < sizeof buf - 1 && (n = read(q[0], buf + got, sizeof buf - 1 - got)) > 0;)
		got += (size_t)n;
	close(q[0]);
	waitpid(up, &st, 0);
	int ux = 0, kept = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && sscanf(buf, "%d %d", &ux, &kept) == 2,
	      "the unpub writer ran (status %d): '%s'", st, buf);
	CHECK(kept == 1, "the running child %d's unpublished file was left by the next child's sweep", ux);

	kill(dpid, SIGTERM);
	CHECK(gone(dpid), "the daemon ended on SIGTERM");
	CHECK(access(path_of(1, dpid), F_OK) != 0, "SIGTERM removed the daemon's file");
	unlink(path_of(1, dpid)); /* whatever happened */
	return CHECK_DONE();
}
