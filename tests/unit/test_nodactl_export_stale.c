// SPDX-License-Identifier: MIT
/*
 * `nodactl --export` publishes even when a stale export sits at the name
 * its program will have (/dev/shm/nodalloc-PID.stats of an earlier,
 * killed process whose pid came round again). Before the fix nodactl's
 * rename met the old file, said "not published", and `nodactl stat PID`
 * refused the old file as stale: the program ran unobservable (CI hit it
 * with pid 26913).
 *
 * The pids to come are unknown, so stale files are planted at the next
 * PLANT pids: once copies of a real stale export (a process with
 * NODALLOC_STATS_EXPORT=1, SIGKILLed), once zeroed files of an export's
 * size (nodactl killed before its program published). Other tests that
 * run meanwhile may meet a planted file too: the library and nodactl
 * replace it, and only files still planted are removed at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nodactl_test.h"

#define PY "/usr/bin/python3"
#define PLANT 400

static char stale[1 << 18]; /* a real stale export's bytes */
static size_t stale_len;
/* The planted files' inodes (0: none planted at that pid). Only a file
 * still of that inode is removed: other tests (and other build trees)
 * run at once, and a live export that replaced a planted file is theirs. */
static ino_t planted[PLANT];

static int last_pid(void)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "r");
	int p = 0;
	if (f) {
		if (fscanf(f, "%d", &p) != 1)
			p = 0;
		fclose(f);
	}
	return p;
}

static void plant(int from, bool zero)
{
	for (int p = from; p < from + PLANT; p++) {
		char path[64];
		snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", p);
		planted[p - from] = 0;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		if (fd < 0)
			continue; /* a live export, or one planted before */
		struct stat st;
		if (fstat(fd, &st) == 0)
			planted[p - from] = st.st_ino;
		if (zero) {
			if (ftruncate(fd, (off_t)stale_len) != 0)
				perror("ftruncate");
		} else if (write(fd, stale, stale_len) != (ssize_t)stale_len) {
			perror("write");
		}
		close(fd);
	}
}

static void unplant(int from)
{
	for (int p = from; p < from + PLANT; p++) {
		char path[64];
		snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", p);
		struct stat st;
		if (planted[p - from] && lstat(path, &st) == 0 && st.st_ino == planted[p - from])
			unlink(path);
	}
}

/* nodactl [--stats] --export with stale files at the next pids: the
 * program publishes. With --stats nodactl makes the file and renames it
 * to the program's name; without, nodactl execs the program (same pid),
 * whose library makes it. */
static void launch_over(bool zero, bool collect)
{
	int from = last_pid() + 1;
	plant(from, zero);
	pid_t n = fork();
	if (n == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2); /* --stats's report */
		const char *py = "import time; x = bytes(3 << 20); time.sleep(30)";
		if (collect)
			execl(NODACTL, "nodactl", "--stats", "--export", "--", PY, "-c", py, (char *)NULL);
		else
			execl(NODACTL, "nodactl", "--export", "--", PY, "-c", py, (char *)NULL);
		_exit(127);
	}
	int prog = collect ? child_of(n) : n;
	CHECK(prog > 0, "nodactl started no program");
	if (prog >= from && prog < from + PLANT) {
		bool seen = false;
		for (int i = 0; i < 100 && !seen; i++) {
			const char *p;
			seen = run(NODACTL " stat %d --json", prog) == 0 && (p = strstr(run_out, "\"peak_bytes_in_use\":")) &&
			       atoll(p + 20) >= 3ll << 20;
			if (!seen)
				usleep(100000);
		}
		CHECK(seen, "%s, %s stale file: the export of %d is not readable: %s", collect ? "--stats" : "exec",
		      zero ? "zeroed" : "copied", prog, run_out);
	} else {
		printf("note: program pid %d outside the planted %d..%d: not checked\n", prog, from, from + PLANT - 1);
	}
	kill(n, SIGTERM);
	waitpid(n, NULL, 0);
	unplant(from);
}

int main(void)
{
	if (access(PY, X_OK) != 0) {
		printf("SKIP: no %s\n", PY);
		return 77;
	}
	/* a real stale export */
	pid_t k = fork();
	if (k == 0) {
		setenv("LD_PRELOAD", ND_BINARY_DIR "/libnodalloc.so", 1);
		setenv("NODALLOC_STATS_EXPORT", "1", 1);
		execl(PY, "python3", "-c", "import time; x = bytes(1 << 20); time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	char path[64];
	snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", (int)k);
	int fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		/* published: the export answers nodactl stat */
		if (run(NODACTL " stat %d --json", (int)k) == 0)
			fd = open(path, O_RDONLY);
		else
			usleep(100000);
	}
	CHECK(fd >= 0, "no export of %d appeared at %s", (int)k, path);
	kill(k, SIGKILL);
	waitpid(k, NULL, 0);
	ssize_t got = fd >= 0 ? read(fd, stale, sizeof stale) : -1;
	CHECK(got > 0 && (size_t)got < sizeof stale, "read %zd bytes of %s", got, path);
	stale_len = got > 0 ? (size_t)got : 0;
	if (fd >= 0)
		close(fd);
	unlink(path);
	CHECK_EQ(run(NODACTL " stat %d", (int)k), 1); /* gone: refused */

	for (int collect = 0; collect < 2; collect++) {
		launch_over(false, collect);
		launch_over(true, collect);
	}
	return CHECK_DONE();
}
