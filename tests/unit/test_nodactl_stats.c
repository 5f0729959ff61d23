// SPDX-License-Identifier: MIT
/*
 * nodactl's statistics name their process and survive how it ends:
 *   --stats reports the launched program only, once, labelled (pid,
 *   program, parent = nodactl, "the launched program", how it ended);
 *   --stats-children adds one labelled report per descendant;
 *   a program killed by SIGTERM (sent to nodactl and passed on), by
 *   SIGKILL, or ending with _exit is still reported, by nodactl, from the
 *   mapping the program counted into; nodactl ends as the program did;
 *   peak bytes in use, peak RSS, fragmentation and the Total column;
 *   a static program: said plainly, no bogus table; a program that
 *   cannot be executed: the exec's error and status only;
 *   a SIGTERM while nodactl --export sets up leaves no temporary file,
 *   nor a report SIGPIPE ends (its reader gone) the program's export;
 *   `nodactl stat PID --interval` stops with a line when PID exits, and a
 *   stale export (its process gone) is refused;
 *   a double-forking daemon under `nodactl --export` leaves no file of
 *   its first child (it did: stats.c fork_publish now notes the parent
 *   in the child's ring), nor under `nodactl --stats --export`, and its
 *   statistics name it; nor when the daemon ends by SIGTERM (its
 *   handler swept only its own file).
 * Before this, `--stats` printed one unlabelled table per process that
 * exited normally and nothing for a killed one.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "nodactl_test.h"


static int count(const char *s)
{
	int n = 0;
	for (const char *p = run_out; (p = strstr(p, s)); p++)
		n++;
	return n;
}

#define PY "/usr/bin/python3"

/* Starts `nodactl ARGS` in the background with output to file; its pid. */
static pid_t start(const char *file, const char *const *argv)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(NODACTL, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(run_out, 1, sizeof run_out - 1, f) : 0;
	run_out[n] = '\0';
	if (f)
		fclose(f);
}

/* The process has min_bytes in use (its live export says so); 30 s at
 * most (the VMs may hold both CPUs meanwhile). */
static void wait_export(int pid, long long min_bytes)
{
	for (int i = 0; i < 300; i++) {
		const char *p;
		if (run(NODACTL " stat %d --json", pid) == 0 && (p = strstr(run_out, "\"peak_bytes_in_use\":")) &&
		    atoll(p + 20) >= min_bytes)
			return;
		usleep(100000);
	}
	CHECK(0, "the export of %d never showed %lld bytes in use: %s", pid, min_bytes, run_out);
}

int main(void)
{
	if (access(PY, X_OK) != 0) {
		printf("SKIP: no %s\n", PY);
		return 77;
	}
	/* The launched program only, labelled; descendants silent. */
	CHECK_EQ(run(NODACTL " --stats -- sh -c '" PY " -c 1; " PY " -c 1'"), 0);
	CHECK_EQ(count("nodalloc statistics of pid "), 1);
	CHECK(strstr(run_out, "(sh), parent ") && strstr(run_out, ", the launched program, exited with status 0\n"), "got: %s", run_out);
	CHECK(strstr(run_out, "Total\n") && strstr(run_out, "hit_runs") && strstr(run_out, "fragmented_MiB"), "got: %s", run_out);
	/* --stats-children: one per process, each named, one launched */
	CHECK_EQ(run(NODACTL " --stats=json --stats-children -- sh -c '" PY " -c 1; " PY " -c 1'"), 0);
	CHECK_EQ(count("{\"version\":1,\"pid\":"), 3);
	CHECK_EQ(count("\"role\":\"launched\""), 1);
	CHECK_EQ(count("\"role\":\"descendant\""), 2);
	CHECK_EQ(count("\"program\":\"python3\""), 2);
	CHECK(strstr(run_out, "\"program\":\"sh\"") != NULL, "got: %s", run_out);
	/* each descendant's parent is the launched sh, named as launched */
	int sh = 0;
	const char *l = strstr(run_out, "\"role\":\"launched\"");
	for (const char *p = l; p && p > run_out && !sh; p--)
		if (strncmp(p, "{\"version\":1,\"pid\":", 19) == 0)
			sh = atoi(p + 19);
	char want[128];
	snprintf(want, sizeof want, "\"ppid\":%d,\"role\":\"descendant\",\"launched\":%d,", sh, sh);
	CHECK_EQ(count(want), 2);

	/* Figures: peak in use survives a free; Total = the sum; fragmented =
	 * committed - in use; the JSON parses. */
	CHECK_EQ(run(NODACTL " --stats=json -- " PY " -c 'x = b\"1\" * (30 << 20); del x' 2>&1 >/dev/null | " PY
		     " -c \"import json,sys; d=json.loads(sys.stdin.read()); t=d['total']; n=d['nodes'];"
		     " print('peak', d['peak_bytes_in_use'] >= 30 << 20, d['peak_bytes_in_use'] > t['bytes_in_use'],"
		     " 'sum', t['numa_hit'] == sum(v['numa_hit'] for v in n.values()),"
		     " 'frag', all(v['bytes_fragmented'] == max(0, v['bytes_committed'] - v['bytes_in_use']) for v in n.values()),"
		     " 'rss', d['peak_rss_bytes'] >= 30 << 20)\""),
		 0);
	CHECK(strstr(run_out, "peak True True sum True frag True rss True") != NULL, "got: %s", run_out);

	/* SIGTERM to nodactl: passed on, the program reported, nodactl ends
	 * by the same signal. */
	/* per run: the suites of several trees (and worktrees) run at once */
	char file[64];
	snprintf(file, sizeof file, "/tmp/nd_test_nodactl_stats.%d.run_out", (int)getpid());
	pid_t n = start(file, (const char *const[]){ "nodactl", "--stats", "--export", "--", PY, "-c",
						     "import time; x = bytes(20 << 20); time.sleep(60)", NULL });
	int prog = child_of(n);
	CHECK(prog > 0, "nodactl started no program");
	wait_export(prog, 20ll << 20);
	kill(n, SIGTERM);
	int st;
	waitpid(n, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "nodactl did not end by SIGTERM: 0x%x", st);
	slurp(file);
	snprintf(want, sizeof want, "nodalloc statistics of pid %d (python3), parent %d, the launched program, killed by signal 15",
		 prog, (int)n);
	CHECK(strstr(run_out, want) != NULL, "want '%s' in: %s", want, run_out);
	const char *pk = strstr(run_out, "peak in use ");
	CHECK(pk && atof(pk + 12) >= 20.0, "20 MiB in use not reported: %s", run_out);
	/* the live export was nodactl's to remove */
	char path[128];
	snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", prog);
	CHECK(access(path, F_OK) != 0, "%s left behind", path);

	/* SIGTERM while nodactl --export sets up (its temporary file made,
	 * its handler not yet in place) killed it and left
	 * /dev/shm/nodalloc-nodactl-PID.tmp: now the signal waits for the
	 * handler and goes to the program. A child it killed before the
	 * "go" write made that write raise SIGPIPE, which killed nodactl
	 * and left the child's unpublished file: the write ignores it now.
	 * At delays of 0-3.1 ms some of the 128 starts land in each window.
	 * A file at a pid just after nodactl's, made since this loop began,
	 * of no process, is one it left (unit.test_nodactl_export_stale,
	 * which plants files at pids, never runs at once: RESOURCE_LOCK). */
	time_t t0 = time(NULL);
	for (int i = 0; i < 128; i++) {
		n = start("/dev/null", (const char *const[]){ "nodactl", "--stats", "--export", "--", "true", NULL });
		usleep((useconds_t)(i % 32) * 100);
		kill(n, SIGTERM);
		waitpid(n, &st, 0);
		snprintf(path, sizeof path, "/dev/shm/nodalloc-nodactl-%d.tmp", (int)n);
		CHECK(access(path, F_OK) != 0, "start %d (%d us): nodactl left %s", i, (i % 32) * 100, path);
		unlink(path);
		for (int c = (int)n + 1; c <= (int)n + 4; c++) {
			struct stat sb;
			char proc[32];
			snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", c);
			snprintf(proc, sizeof proc, "/proc/%d", c);
			if (stat(path, &sb) == 0 && sb.st_mtime >= t0 && access(proc, F_OK) != 0) {
				CHECK(0, "start %d (%d us): nodactl %d left %s", i, (i % 32) * 100, (int)n, path);
				unlink(path);
			}
		}
	}

	/* The report to a pipe whose reader is gone (`nodactl --stats
	 * --export -- prog 2>&1 | head -1`): SIGPIPE ends nodactl, but the
	 * program's export is removed first (it was left in /dev/shm). */
	char pidf[64];
	snprintf(pidf, sizeof pidf, "/tmp/nd_test_nodactl_stats.%d.pid", (int)getpid());
	n = fork();
	if (n == 0) {
		int pp[2];
		if (pipe(pp) != 0)
			_exit(125);
		close(pp[0]);
		dup2(pp[1], 2);
		int nul = open("/dev/null", O_WRONLY);
		dup2(nul, 1);
		signal(SIGPIPE, SIG_DFL);
		char script[128];
		snprintf(script, sizeof script, "echo $$ > %s", pidf);
		execl(NODACTL, "nodactl", "--stats", "--export", "--", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	waitpid(n, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE, "nodactl reporting to a closed pipe: 0x%x", st);
	FILE *pf = fopen(pidf, "r");
	int sp = 0;
	CHECK(pf && fscanf(pf, "%d", &sp) == 1 && sp > 0, "the program did not run");
	if (pf)
		fclose(pf);
	unlink(pidf);
	snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", sp);
	CHECK(sp <= 0 || access(path, F_OK) != 0, "%s left behind by a nodactl its report's SIGPIPE ended", path);
	if (sp > 0)
		unlink(path);

	/* SIGKILL of the program itself: still reported. */
	n = start(file, (const char *const[]){ "nodactl", "--stats=json", "--export", "--", PY, "-c",
					       "import time; x = bytes(5 << 20); time.sleep(60)", NULL });
	prog = child_of(n);
	CHECK(prog > 0, "nodactl started no program");
	wait_export(prog, 5ll << 20);
	kill(prog, SIGKILL);
	waitpid(n, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "nodactl did not end as its program (SIGKILL): 0x%x", st);
	slurp(file);
	CHECK(strstr(run_out, "\"role\":\"launched\",\"ended\":\"killed by signal 9 (Killed)\"") != NULL, "got: %s", run_out);
	unlink(file);

	/* _exit: no destructor runs, nodactl reports; the status is kept. */
	CHECK_EQ(run(NODACTL " --stats -- " PY " -c 'import os; x = bytes(1 << 20); os._exit(3)'"), 3);
	CHECK(strstr(run_out, "the launched program, exited with status 3\n") != NULL, "got: %s", run_out);

	/* A static program publishes nothing: said, no table. */
	CHECK_EQ(run(NODACTL " --stats -- " ND_BINARY_DIR "/vm-bin/probe_nodactl_static 1"), 0);
	CHECK(strstr(run_out, "exited with status 0 without publishing statistics: it did not load nodalloc") != NULL &&
	      strstr(run_out, "hit_runs") == NULL, "got: %s", run_out);

	/* Killed by a signal without publishing: the report does not claim
	 * it did not load nodalloc (a ^C passed on before the exec ends the
	 * child the same way). */
	CHECK_EQ(run(NODACTL " --stats -- " ND_BINARY_DIR "/vm-bin/probe_nodactl_static 1 kill"), 128 + SIGTERM);
	CHECK(strstr(run_out, "killed by signal 15 (Terminated) without publishing statistics: it was killed before "
			      "nodalloc started in it, or did not load nodalloc") != NULL,
	      "got: %s", run_out);

	/* No program ran (not found, not executable): the exec's error and
	 * a shell's status, no report (it named nodactl's child, "nodactl",
	 * as a program that "did not load nodalloc"); with --export no file
	 * is left. */
	CHECK_EQ(run(NODACTL " --stats -- /nonexistent/program"), 127);
	CHECK(strstr(run_out, "execution of '/nonexistent/program'") && !strstr(run_out, "publishing") &&
	      !strstr(run_out, "nodalloc statistics"), "got: %s", run_out);
	CHECK_EQ(run(NODACTL " --stats=json --export -- /etc/passwd"), 126);
	CHECK(strstr(run_out, "Permission denied") && !strstr(run_out, "publishing") && !strstr(run_out, "\"pid\""),
	      "got: %s", run_out);

	/* stat --interval stops with a line when the process exits. */
	n = start(file, (const char *const[]){ "nodactl", "--export", "--", PY, "-c",
					       "import time; x = bytes(1 << 20); time.sleep(6)", NULL });
	snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", (int)n); /* exec: nodactl's pid */
	/* until the program's own export is there: a stale file of an earlier
	 * process that had this pid (pids are reused over a test run) is
	 * refused until the program's start replaces it */
	for (int i = 0; i < 400 && (access(path, F_OK) != 0 || run(NODACTL " stat %d", (int)n) != 0); i++)
		usleep(50000);
	CHECK_EQ(run("timeout 20 " NODACTL " stat %d --interval=0.2", (int)n), 0);
	snprintf(want, sizeof want, "nodactl: stat: process %d has exited\n", (int)n);
	CHECK(strstr(run_out, want) != NULL, "want '%s' in: %s", want, run_out);
	snprintf(want, sizeof want, "nodalloc statistics of pid %d (python3), parent %d\n", (int)n, (int)getpid());
	CHECK(strstr(run_out, want) != NULL, "want '%s' in: %s", want, run_out);
	waitpid(n, &st, 0);
	unlink(file);

	/* A stale export (SIGKILL: nobody removed it) is refused. */
	char stale[64];
	snprintf(stale, sizeof stale, "/tmp/nd_test_stale.%d.stats", (int)getpid());
	unlink(stale);
	pid_t k = fork();
	if (k == 0) {
		setenv("NODALLOC_STATS_EXPORT", stale, 1);
		setenv("LD_PRELOAD", ND_BINARY_DIR "/libnodalloc.so", 1);
		execl(PY, "python3", "-c", "import time; time.sleep(60)", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 400 && access(stale, F_OK) != 0; i++)
		usleep(50000);
	CHECK(access(stale, F_OK) == 0, "bed: %s was not made", stale);
	usleep(300000);
	kill(k, SIGKILL);
	waitpid(k, &st, 0);
	CHECK_EQ(run(NODACTL " stat %s", stale), 1);
	snprintf(want, sizeof want, "nodactl: stat: %s: process %d has exited: a stale export, not shown", stale, (int)k);
	CHECK(strstr(run_out, want) != NULL, "want '%s' in: %s", want, run_out);
	unlink(stale);

	/* A temporary file a SIGKILLed nodactl of the same pid left
	 * (/dev/shm/nodalloc-nodactl-PID.tmp) is its own: removed, not an
	 * error (O_EXCL failed, --export refused to run). */
	n = fork();
	if (n == 0) {
		char own[96];
		snprintf(own, sizeof own, "/dev/shm/nodalloc-nodactl-%d.tmp", (int)getpid());
		int fd = open(own, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0)
			_exit(125);
		close(fd);
		int nul = open("/dev/null", O_WRONLY);
		dup2(nul, 1);
		dup2(nul, 2);
		execl(NODACTL, "nodactl", "--stats", "--export", "--", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(n, &st, 0);
	snprintf(path, sizeof path, "/dev/shm/nodalloc-nodactl-%d.tmp", (int)n);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nodactl --export over a stale temporary file of its pid: 0x%x", st);
	CHECK(access(path, F_OK) != 0, "%s still there", path);
	unlink(path);

	/* The terminal's ^C while nodactl sets up (SIGINT blocked, from the
	 * kernel: forward() drops those) ends the program: one that came
	 * before the fork reached nodactl alone, and the program ran on
	 * (audit21). nodactl runs as a session leader on a pseudo-terminal
	 * whose master writes ^C at delays across its set-up. */
	int ran_on = 0;
	for (int i = 0; i < 48; i++) {
		int m = posix_openpt(O_RDWR | O_NOCTTY);
		CHECK(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0, "a pseudo-terminal");
		if (m < 0)
			break;
		char *sn = ptsname(m);
		int rd[2];
		CHECK_EQ(pipe(rd), 0);
		n = fork();
		if (n == 0) {
			setsid();
			int sl = open(sn, O_RDWR); /* the session's controlling terminal */
			if (sl < 0)
				_exit(125);
			close(rd[0]);
			if (write(rd[1], "r", 1) != 1) /* a ^C from now on reaches it */
				_exit(125);
			close(rd[1]);
			int nul = open("/dev/null", O_WRONLY);
			dup2(nul, 1);
			dup2(nul, 2);
			signal(SIGINT, SIG_DFL);
			execl(NODACTL, "nodactl", "--stats", "--export", "--", "sleep", "20", (char *)NULL);
			_exit(127);
		}
		close(rd[1]);
		char r;
		CHECK(read(rd[0], &r, 1) == 1, "the terminal's session is ready");
		close(rd[0]);
		usleep((useconds_t)((i % 16) * 150));
		if (write(m, "\003", 1) != 1)
			CHECK(0, "writing ^C to the pseudo-terminal");
		int w = 0;
		for (int k = 0; k < 100 && (w = waitpid(n, &st, WNOHANG)) == 0; k++)
			usleep(50000); /* 5 s: the program runs 20 */
		if (w == 0) {
			ran_on++;
			kill(n, SIGKILL);
			waitpid(n, &st, 0);
			/* its program, in nodactl's session, gets the hang-up */
		}
		close(m);
	}
	CHECK(ran_on == 0, "%d of 48 programs ran on after a ^C during nodactl's set-up", ran_on);

	/* A daemon (double fork: the program P1 exits, its child P2 outlives
	 * it, forks the daemon P3 and _exits): under `nodactl --export`
	 * (pid-named files) P2's file was left in /dev/shm for good (P1's
	 * exit swept while P2 ran; nothing swept after). Now P3 notes its
	 * parent and its exit removes the file: none is left of the three,
	 * and P3's live figures name it (`nodactl stat P3`). Under `nodactl
	 * --stats --export --stats-children` no file is made for any (the
	 * descendants count privately) and P3's report names it. The run
	 * ends when P3 closes its output. */
	char script[64];
	snprintf(script, sizeof script, "/tmp/nd_test_nodactl_daemon.%d.py", (int)getpid());
	FILE *sf = fopen(script, "w");
	CHECK(sf != NULL, "%s", script);
	if (sf) {
		fprintf(sf, "import os, subprocess, sys, time\n"
			    "p1 = os.getpid()\n"
			    "if os.fork():\n    print('P1', p1, flush=True); sys.exit(0)\n"
			    "while os.getppid() == p1: time.sleep(0.001)\n"
			    "os.setsid()\n"
			    "p2 = os.getpid()\n"
			    "if os.fork():\n    print('P2', p2, flush=True); os._exit(0)\n"
			    "while os.getppid() == p2: time.sleep(0.001)\n"
			    "x = bytes(4 << 20)\n"
			    "print('P3', os.getpid(), flush=True)\n"
			    "if sys.argv[1] == 'stat':\n"
			    "    r = subprocess.run(['%s', 'stat', str(os.getpid())], capture_output=True, text=True)\n"
			    "    print('STAT', r.returncode, r.stdout.splitlines()[0] if r.stdout else r.stderr, flush=True)\n"
			    "if sys.argv[1] == 'term':\n"
			    "    sys.stdout.close(); os.kill(os.getpid(), 15)\n",
			NODACTL);
		fclose(sf);
	}
	/* mode 2: the daemon ends by SIGTERM (its default action): its own
	 * file went, but not P2's (only exit swept its ring) */
	for (int mode = 0; mode < 3; mode++) {
		time_t t1 = time(NULL);
		int rc = run(mode == 1	 ? NODACTL " --stats --export --stats-children -- " PY " %s children"
			     : mode == 2 ? NODACTL " --export -- " PY " %s term"
					 : NODACTL " --export -- " PY " %s stat",
			     script);
		int pp[3] = { 0, 0, 0 };
		for (int k = 0; k < 3; k++) {
			char tag[4] = { 'P', (char)('1' + k), ' ', 0 };
			const char *t = strstr(run_out, tag);
			pp[k] = t ? atoi(t + 3) : 0;
		}
		CHECK(rc == 0 && pp[0] > 0 && pp[1] > 0 && pp[2] > 0, "mode %d: the daemon ran (rc %d): %s", mode, rc,
		      run_out);
		if (mode == 0) {
			snprintf(want, sizeof want, "STAT 0 nodalloc statistics of pid %d (python3)", pp[2]);
			CHECK(strstr(run_out, want) != NULL, "want '%s' in: %s", want, run_out);
		} else if (mode == 2) {
			for (int w = 0; w < 2000 && pp[2] > 0 && kill(pp[2], 0) == 0; w++)
				usleep(1000); /* P3's SIGTERM came after its output closed */
		} else {
			snprintf(want, sizeof want, "nodalloc statistics of pid %d (python3)", pp[2]);
			CHECK(strstr(run_out, want) != NULL, "want '%s' in: %s", want, run_out);
		}
		for (int k = 0; k < 3; k++) {
			if (pp[k] <= 0)
				continue;
			/* a file of this run (older ones at a reused pid: not ours) */
			struct stat sb;
			snprintf(path, sizeof path, "/dev/shm/nodalloc-%d.stats", pp[k]);
			if (stat(path, &sb) == 0 && sb.st_mtime >= t1) {
				CHECK(0, "mode %d: P%d's %s left behind", mode, k + 1, path);
				unlink(path);
			}
		}
	}
	unlink(script);
	return CHECK_DONE();
}
