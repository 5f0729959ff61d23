// SPDX-License-Identifier: MIT
/*
 * `nodactl --stats -- program`: nodactl stays the program's parent and
 * reports the program's statistics itself when it ends, however it ends
 * (exit, _exit, SIGTERM, SIGKILL): the program's library counts straight
 * into a mapping nodactl made and handed down as a descriptor
 * (NODALLOC_STATS_EXPORT=fd:N:PID; only PID maps it, its descendants
 * count privately). The descriptor is a memfd, or with --export the file
 * /dev/shm/nodalloc-PID.stats (created 0600 and O_EXCL by nodactl under a
 * temporary name, renamed without replacing before the program starts,
 * removed by nodactl when the program has ended) so `nodactl stat PID`
 * reads it live.
 *
 * Signals: SIGTERM, SIGHUP, SIGUSR1/2, and SIGINT/SIGQUIT sent with kill
 * (not the terminal's, which reach the program directly), are passed on
 * to the program. nodactl then ends as the program did: its exit status,
 * or the same signal (128 + signal for those that dump core).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

static volatile pid_t child;

static void forward(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	/* the terminal's ^C/^\ reach the program's process group directly */
	if ((sig == SIGINT || sig == SIGQUIT) && si && si->si_code > 0)
		return;
	if (child > 0)
		kill(child, sig);
}

/* The export: a memfd, or the named file for --export. fd, or -1. */
static int make_export(bool named, char *tmp, size_t len)
{
	size_t size = _nd_stats_export_size();
	int fd;
	if (named) {
		snprintf(tmp, len, "/dev/shm/nodalloc-nodactl-%d.tmp", (int)getpid());
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		/* The name holds nodactl's own pid: a file there is one a
		 * killed (SIGKILL) nodactl of the same pid left. Removed once
		 * (only its owner can, /dev/shm is sticky), then O_EXCL again. */
		if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
			fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		if (fd < 0) {
			fprintf(stderr, "nodactl: --export: %s: %s\n", tmp, strerror(errno));
			return -1;
		}
	} else {
		tmp[0] = '\0';
		fd = memfd_create("nodalloc-stats", 0);
		if (fd < 0) {
			fprintf(stderr, "nodactl: --stats: memfd_create: %s\n", strerror(errno));
			return -1;
		}
	}
	if (ftruncate(fd, (off_t)size) != 0) {
		int e = errno;
		if (tmp[0])
			unlink(tmp); /* before the message: a write to a closed pipe ends nodactl */
		close(fd);
		fprintf(stderr, "nodactl: --stats: sizing the export: %s\n", strerror(e));
		return -1;
	}
	return fd;
}

static void describe_end(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended (status 0x%x)", status);
}

static _nd_stats_all_t snap; /* every node, 72 KiB: not on the stack */

static const int fwd_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/* Before the program runs: the named export's temporary file goes, then
 * what failed is said (a report to a closed pipe raises SIGPIPE, still
 * blocked or not), and the signal mask is the caller's again. */
static int collect_fail(const char *tmp, const sigset_t *old, const char *what)
{
	int e = errno;
	if (tmp[0])
		unlink(tmp);
	if (what)
		fprintf(stderr, "nodactl: %s: %s\n", what, strerror(e));
	sigprocmask(SIG_SETMASK, old, NULL);
	return 1;
}

int nodactl_run_collected(char **argv, bool json, bool children, bool named)
{
	char tmp[128] = "", path[128] = "";
	/* The signals nodactl passes on wait, blocked, from before the
	 * temporary file exists until forward() is in place: a SIGTERM in
	 * between killed nodactl and left /dev/shm/nodalloc-nodactl-PID.tmp
	 * (test_nodactl_stats). Then they reach the child, as later ones. */
	sigset_t fwd, old;
	sigemptyset(&fwd);
	for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++)
		sigaddset(&fwd, fwd_sigs[i]);
	sigprocmask(SIG_BLOCK, &fwd, &old);
	int efd = make_export(named, tmp, sizeof tmp);
	if (efd < 0)
		return collect_fail("", &old, NULL); /* make_export removed its file, said why */
	size_t size = _nd_stats_export_size();
	void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, efd, 0);
	if (map == MAP_FAILED)
		return collect_fail(tmp, &old, "--stats: mapping the export");
	/* go: the parent is ready; failed: the child's exec failed (its
	 * errno; end of file: the program runs), both closed by the exec */
	int go[2], failed[2];
	if (pipe2(go, O_CLOEXEC) != 0 || pipe2(failed, O_CLOEXEC) != 0)
		return collect_fail(tmp, &old, "pipe");
	if (!children)
		unsetenv("NODALLOC_STATS"); /* descendants stay silent */
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return collect_fail(tmp, &old, "fork");
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL); /* the program's mask is nodactl's caller's */
		close(go[1]);
		close(failed[0]);
		char c;
		if (read(go[0], &c, 1) != 1) /* the parent is ready (file renamed) */
			_exit(126);
		char v[64];
		snprintf(v, sizeof v, "fd:%d:%d", efd, (int)getpid());
		setenv("NODALLOC_STATS_EXPORT", v, 1);
		execvp(argv[0], argv);
		int e = errno;
		fprintf(stderr, "nodactl: execution of '%s': %s\n", argv[0], strerror(e));
		if (write(failed[1], &e, sizeof e) != (ssize_t)sizeof e) {
			/* the parent then reports the end as a program's */
		}
		_exit(e == ENOENT ? 127 : 126);
	}
	child = pid;
	close(go[0]);
	close(failed[1]);
	close(efd);
	if (named) {
		snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", (int)pid);
		/* A file there is stale: pid is the child, which has not run the
		 * program yet (a killed earlier process had the same pid). */
		char why[160] = "";
		int r = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
		if (r != 0 && errno == EEXIST && _nd_stats_clear_export(path, why, sizeof why) == 0)
			r = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
		if (r != 0) {
			fprintf(stderr, "nodactl: --export: %s: %s (not published)\n", path, why[0] ? why : strerror(errno));
			unlink(tmp);
			path[0] = '\0';
		}
	}
	struct sigaction sa = { 0 };
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++)
		sigaction(fwd_sigs[i], &sa, NULL);
	/* The terminal's ^C/^\ while they were blocked: forward() drops
	 * them (the kernel's, which reach the program's process group
	 * directly), but one that came before the fork reached nodactl
	 * alone: the program would have run as if none was pressed. Passed
	 * on (if the child got its own too, it dies of the first). */
	sigset_t pend;
	if (sigpending(&pend) == 0)
		for (int sig = SIGINT; sig; sig = sig == SIGINT ? SIGQUIT : 0)
			if (sigismember(&pend, sig) && !sigismember(&old, sig))
				kill(pid, sig);
	sigprocmask(SIG_SETMASK, &old, NULL); /* a signal that waited goes to the child now */
	/* A child a forwarded signal killed before this write made it
	 * raise SIGPIPE, which killed nodactl and left the export's file:
	 * ignored for the write (the child's disposition is its own). */
	struct sigaction ign = { .sa_handler = SIG_IGN }, oldpipe;
	sigaction(SIGPIPE, &ign, &oldpipe);
	if (write(go[1], "g", 1) != 1) {
		/* the child is gone already: waited for below */
	}
	sigaction(SIGPIPE, &oldpipe, NULL);
	close(go[1]);
	/* No program ran (not found, not executable): said by the child; no
	 * statistics to report, which would name nodactl's child. */
	int exec_errno = 0;
	ssize_t got;
	while ((got = read(failed[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
		;
	close(failed[0]);
	if (got == (ssize_t)sizeof exec_errno) {
		int status = 0;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		munmap(map, size);
		if (path[0])
			unlink(path);
		return exec_errno == ENOENT ? 127 : 126;
	}

	/* Ended: read its name while it is a zombie, then reap it. */
	siginfo_t info;
	while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR)
		;
	_nd_stats_label_t lb;
	nodactl_label_of(pid, &lb);
	int status = 0;
	struct rusage ru = { 0 };
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	child = 0;
	/* The file goes before the report (the mapping keeps the figures):
	 * a report to a pipe nobody reads any more raises SIGPIPE, which
	 * ended nodactl and left /dev/shm/nodalloc-PID.stats (audit21). */
	if (path[0])
		unlink(path);
	char ended[96];
	describe_end(status, ended, sizeof ended);
	lb.ppid = (int)getpid();
	lb.role = ND_ROLE_LAUNCHED;
	lb.ended = ended;
	lb.rss = 0; /* its memory is gone; the peak is the kernel's */
	lb.rss_peak = (uint64_t)ru.ru_maxrss << 10;
	int owner = 0;
	int out = _nd_msg_fd(); /* NODALLOC_MSG_FD, else stderr */
	/* Killed by a signal: maybe before nodalloc started in it (a ^C
	 * passed on while nodactl set up kills the child before its exec),
	 * which "it did not load nodalloc" would misname (audit22). */
	if (_nd_stats_from_export(map, size, &snap, &owner, &lb.peak_in_use) != 0 || owner != pid)
		dprintf(out, "nodactl: --stats: pid %d (%s) %s without publishing statistics: %sdid not load nodalloc "
			"(a static or set-user-ID program?)\n", (int)pid, lb.program[0] ? lb.program : argv[0], ended,
			WIFSIGNALED(status) ? "it was killed before nodalloc started in it, or " : "it ");
	else
		_nd_stats_print_snapshot(out, &snap, &lb, json);
	munmap(map, size);

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	static const int core[] = { SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS, SIGXCPU, SIGXFSZ };
	for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
		if (sig == core[i])
			return 128 + sig;
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;
}
