// SPDX-License-Identifier: MIT
/*
 * Bad input fuzzers (issue 12, "Also"), each case a child process:
 *
 *   fuzz_badinput env SEED CASES
 *     every NODALLOC_* variable (the list is read from the library's own
 *     option table: NODALLOC_VERBOSE=1 prints one line per row), one to
 *     three at a time, set to hostile values (empty, huge, negative,
 *     overflowing, 10 KB, non-UTF-8, embedded separators, mutated valid
 *     values, unknown names), in a child running a small malloc workload.
 *     Each case: no signal, no hang, exit 0 with the workload's checks
 *     passed; every warning or error line names a variable the case set;
 *     a value no parser takes (a 0xff byte) is reported by name.
 *
 *   fuzz_badinput nodactl SEED CASES
 *     random argument lists for nodactl from its option list (long names,
 *     abbreviations, short options, good and bad lists and values, "--"
 *     anywhere, subcommands). Each case: exit 0, 1, 2 (or 127 for a
 *     program name that is not found), a message with every failure and
 *     no control character in it, never a signal, never a hang.
 *
 * Prints "<kind> fuzz: N cases, F failures" and each failing case (with
 * its seed and case number, to replay). make test runs few cases; make
 * fuzz many (ND_FUZZ_OPS / 100 cases, ND_FUZZ_SEED).
 * The children run in a fresh directory under /tmp; paths the fuzzer makes
 * (NODALLOC_STATS_EXPORT, NODALLOC_SYSFS_ROOT) stay inside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the workload (the child of an env case) ----------------------------- */

/* An emulated topology with a node of less than 64 MiB ("mem=1": one byte)
 * caps the heap as NODALLOC_ARENA_RESERVE does: ENOMEM is then the
 * workload's right answer (seed 1795730069, case 599: 'cpus=0-8191 mem=1'). */
static bool small_node(const char *spec)
{
	for (const char *m = strstr(spec, "mem="); m; m = strstr(m + 4, "mem=")) {
		char *end;
		unsigned long long n = strtoull(m + 4, &end, 10);
		const char *u = strchr("KMGT", *end ? *end & ~0x20 : 0);
		if (end == m + 4)
			continue;
		if (*end && u)
			n <<= 10 * (u - "KMGT" + 1);
		if (n < (64ull << 20))
			return true;
	}
	return false;
}

static void *remote_free(void *p)
{
	free(p);
	return NULL;
}

/* An allocation failed: with ENOMEM, exit 5 (a small NODALLOC_ARENA_RESERVE
 * may cap the heap below this workload's ~7 MB), else 3. */
static int failed(const char *what, size_t n)
{
	int e = errno;
	printf("workload: %s(%zu) failed: %s\n", what, n, strerror(e));
	fflush(stdout);
	return e == ENOMEM ? 5 : 3;
}

/* malloc, calloc, realloc, aligned, large and a cross-thread free, with
 * their contents checked: "workload ok" on stdout, exit 0. */
static int workload(void)
{
	enum { N = 200 };
	static unsigned char *p[N];
	static size_t n[N];
	int bad = 0;
	for (int i = 0; i < N; i++) {
		n[i] = (size_t)(i % 20 == 0 ? 300000 + i : 1 + (i * 37) % 5000);
		p[i] = i % 3 ? malloc(n[i]) : calloc(1, n[i]);
		if (!p[i])
			return failed(i % 3 ? "malloc" : "calloc", n[i]);
		if (i % 3 == 0)
			for (size_t k = 0; k < n[i]; k++)
				bad += p[i][k] != 0;
		memset(p[i], i & 0xff, n[i]);
	}
	for (int i = 0; i < N; i += 2) {
		unsigned char *q = realloc(p[i], n[i] * 2);
		if (!q)
			return failed("realloc", n[i] * 2);
		p[i] = q;
		memset(q + n[i], i & 0xff, n[i]);
		n[i] *= 2;
	}
	void *a = aligned_alloc(4096, 8192);
	if (!a)
		return failed("aligned_alloc", 8192);
	if ((uintptr_t)a % 4096)
		return 3;
	free(a);
	for (int i = 0; i < N; i++) {
		for (size_t k = 0; k < n[i]; k++)
			bad += p[i][k] != (i & 0xff);
		if (i % 5 == 0) {
			pthread_t t;
			if (pthread_create(&t, NULL, remote_free, p[i]) != 0)
				return 3;
			pthread_join(t, NULL);
		} else {
			free(p[i]);
		}
	}
	printf("workload ok\n");
	fflush(stdout);
	return bad ? 4 : 0;
}

/* ---- running a child ------------------------------------------------------ */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char out[1 << 16];

/*
 * Runs argv with env (NULL-terminated "NAME=value"s added to a clean
 * environment) in dir, stdout and stderr into out. A child still running
 * after 60 s is a hang (a watchdog, not a measure: the cases take
 * milliseconds). The wait status, or -1 for a hang.
 */
static int run_child(char *const *argv, char *const *env, const char *dir)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -2;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		if (chdir(dir) != 0)
			_exit(125);
		clearenv();
		setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(argv[0], argv);
		_exit(126);
	}
	close(pfd[1]);
	size_t got = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool hung = false;
	for (;;) {
		struct pollfd pf = { pfd[0], POLLIN, 0 };
		int r = poll(&pf, 1, 1000);
		if (r > 0) {
			char tmp[4096];
			ssize_t n = read(pfd[0], tmp, sizeof tmp);
			if (n <= 0)
				break;
			size_t k = (size_t)n < sizeof out - 1 - got ? (size_t)n : sizeof out - 1 - got;
			memcpy(out + got, tmp, k);
			got += k;
		}
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 60) {
			hung = true;
			kill(pid, SIGKILL);
			break;
		}
	}
	out[got] = '\0';
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return hung ? -1 : st;
}

static long cases, failures;
static uint64_t seed;

static void fail(long c, const char *what, char *const *argv, char *const *env)
{
	failures++;
	if (failures > 20)
		return;
	fprintf(stderr, "FAIL case %ld (seed %llu): %s\n  env:", c, (unsigned long long)seed, what);
	for (int i = 0; env && env[i]; i++)
		fprintf(stderr, " '%.200s'%s", env[i], strlen(env[i]) > 200 ? "..." : "");
	fprintf(stderr, "\n  argv:");
	for (int i = 0; argv[i]; i++)
		fprintf(stderr, " '%.200s'", argv[i]);
	fprintf(stderr, "\n  output: %.1500s\n", out);
}

/* ---- hostile values ------------------------------------------------------- */

static char *pick(const char *const *v, size_t n) { return strdup(v[rnd() % n]); }
#define PICK(a) pick(a, sizeof a / sizeof a[0])

static const char *const fixed_values[] = {
	"", " ", "0", "1", "-1", "-0", "+1", "2", "true", "no", "json", "text", "free", "dontneed",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "99999999999999999999999999999999",
	"2147483647", "2147483648", "-2147483649", "4294967296", "0x10", "1e9", "nan", "inf",
	"1K", "64K", "2M", "1G", "16T", "17179869184T", "1P", "2MiB", "2mb", "1.5M", "K", "M ",
	"local", "bind:0", "interleave:0-1", "interleave:all@2M", "weighted:0=3,1=1", "preferred:0+tier",
	"preferred-many:0-1", "bind:", "interleave:0-1@", "interleave:0-1@3M", "bind:9999999999",
	"interleave:1-0", "weighted:0=0", "weighted:0=256", "bind:0,,1", "local+tier+tier",
	"0: cpus=0 mem=1G", "0: cpus=0 mem=1G; 1: cpus=1 mem=0", "0-1023: ncpus=1 mem=1M",
	"0: cpus=0 mem=1G; distance: 0-0=10", "0: cpus=0-8191 mem=1G", "0: mem=1G", ";;;;", "distance:",
	"0: cpus=0 mem=18446744073709551615", "1: cpus=0 mem=1G; 1: cpus=1 mem=1G",
	"fd:0:1", "fd:-1:0", "fd:99999999999:1", "fd:", "fd:1:", "1", "0",
	",", ";", ":", "=", "@", "+", "!", "\n", "\t", "a,b;c:d=e@f", "1;1", "1,1", "0\n1",
	"\xff\xfe", "\xc3\x28", "\xed\xa0\x80", "caf\xc3\xa9", "%s%s%n%n", "$(id)", "`id`",
};

/* a run of one character, or a pattern, 1..10240 bytes */
static char *long_value(void)
{
	size_t n = 1 + rnd() % 10240;
	char *s = malloc(n + 1);
	static const char pat[] = "0123456789,;:=@+-!KMGkmg \xff\xc3";
	char c = pat[rnd() % (sizeof pat - 1)];
	bool mixed = rnd() % 2;
	for (size_t i = 0; i < n; i++)
		s[i] = mixed ? pat[rnd() % (sizeof pat - 1)] : c;
	s[n] = '\0';
	return s;
}

/* a fixed value with a few bytes changed, inserted or cut */
static char *mutated(void)
{
	const char *base = fixed_values[rnd() % (sizeof fixed_values / sizeof fixed_values[0])];
	size_t n = strlen(base);
	char *s = malloc(n + 16);
	memcpy(s, base, n + 1);
	int edits = 1 + (int)(rnd() % 3);
	static const char bytes[] = "0123456789,;:=@+-!xKM \xff\x01";
	for (int e = 0; e < edits; e++) {
		size_t len = strlen(s), at = len ? rnd() % len : 0;
		switch (rnd() % 3) {
		case 0: if (len) s[at] = bytes[rnd() % (sizeof bytes - 1)]; break;
		case 1: memmove(s + at + 1, s + at, len - at + 1); s[at] = bytes[rnd() % (sizeof bytes - 1)]; break;
		default: if (len) memmove(s + at, s + at + 1, len - at); break;
		}
	}
	return s;
}

static char *hostile(void)
{
	switch (rnd() % 4) {
	case 0: return long_value();
	case 1: return mutated();
	default: return PICK(fixed_values);
	}
}

/* ---- env fuzz ------------------------------------------------------------- */

static char names[64][64];
static int nnames;

/* The variables, from the option table through NODALLOC_VERBOSE=1. */
static int read_names(char *self, const char *dir)
{
	char *argv[] = { self, "workload", NULL };
	char *env[] = { "NODALLOC_VERBOSE=1", NULL };
	int st = run_child(argv, env, dir);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	for (const char *p = out; (p = strstr(p, "nodalloc: option NODALLOC_")) && nnames < 64; p++) {
		p += strlen("nodalloc: option ");
		size_t n = strcspn(p, "=");
		snprintf(names[nnames++], sizeof names[0], "%.*s", (int)n, p);
	}
	return nnames > 0 ? 0 : -1;
}

static bool eq(const char *name, const char *var) { return strcasecmp(name, var) == 0; }

/* Keeps path values inside the case directory: no '/' at the start, no
 * "..": the fuzzer must not write (export) or point anywhere else. */
static char *contained(char *v)
{
	for (char *c = v; *c; c++)
		if (*c == '/' || (c[0] == '.' && c[1] == '.'))
			*c = '_';
	if (rnd() % 4 == 0) { /* sometimes in a directory that does not exist */
		char *s;
		if (asprintf(&s, "nodir/%s", v) < 0)
			abort();
		free(v);
		return s;
	}
	return v;
}

static int env_fuzz(char *self, long ncases)
{
	char dir[] = "/tmp/nd-fuzz-XXXXXX";
	if (!mkdtemp(dir) || read_names(self, dir) != 0) {
		fprintf(stderr, "fuzz_badinput: cannot list the NODALLOC_* variables: %s\n", out);
		return 1;
	}
	printf("env fuzz: %d variables:", nnames);
	for (int i = 0; i < nnames; i++)
		printf(" %s", names[i]);
	printf("\n");
	/* each variable once with a byte no parser takes, then random cases */
	for (long c = 0; c < ncases + nnames; c++) {
		char *env[8] = { 0 }, *vars[4] = { 0 };
		int nv = c < nnames ? 1 : 1 + (int)(rnd() % 3);
		bool surely_bad[4] = { false };
		for (int i = 0; i < nv; i++) {
			const char *name = c < nnames ? names[c] : names[rnd() % (uint64_t)nnames];
			for (int j = 0; j < i; j++) /* once per case (putenv replaces) */
				if (eq(vars[j], name))
					name = names[(rnd() % (uint64_t)nnames)];
			for (int j = 0; j < i; j++)
				if (eq(vars[j], name))
					name = "NODALLOC_ZZ_UNKNOWN";
			char *v = c < nnames ? strdup("\xff%bad") : hostile();
			char unknown[64];
			if (c >= nnames && rnd() % 16 == 0) { /* an unknown name */
				snprintf(unknown, sizeof unknown, "NODALLOC_%s%c", name + 9, 'A' + (int)(rnd() % 26));
				name = unknown;
			}
			if (eq(name, "NODALLOC_STATS_EXPORT") || eq(name, "NODALLOC_SYSFS_ROOT"))
				v = contained(v);
			if (eq(name, "NODALLOC_STATS_EXPORT") && c < nnames) {
				free(v);
				v = strdup("nodir/\xff%bad"); /* cannot be created */
			}
			surely_bad[i] = strchr(v, '\xff') != NULL && !eq(name, "NODALLOC_STATS_EXPORT");
			surely_bad[i] |= eq(name, "NODALLOC_STATS_EXPORT") && c < nnames;
			bool known = false;
			for (int j = 0; j < nnames; j++)
				known |= eq(names[j], name);
			if (!known) /* "unknown option NODALLOC_..." */
				surely_bad[i] = true;
			if (asprintf(&env[i], "%s=%s", name, v) < 0)
				abort();
			vars[i] = strndup(env[i], strcspn(env[i], "="));
			free(v);
		}
		/* messages to a descriptor other than stdout/stderr are not
		 * seen; with ABORT_ON_CONFIG_ERROR on, a bad value aborts */
		bool unseen = false, aborts = false, capped = false;
		for (int i = 0; i < nv; i++) {
			const char *v = env[i] + strlen(vars[i]) + 1;
			if (eq(vars[i], "NODALLOC_MSG_FD")) {
				const char *d = v + (*v == '-');
				unseen = *d && strspn(d, "0123456789") == strlen(d) && strcmp(v, "1") != 0 && strcmp(v, "2") != 0;
			}
			capped |= eq(vars[i], "NODALLOC_ARENA_RESERVE");
			capped |= eq(vars[i], "NODALLOC_TOPOLOGY") && small_node(v);
			if (eq(vars[i], "NODALLOC_ABORT_ON_CONFIG_ERROR"))
				aborts = !strcasecmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcasecmp(v, "true");
		}
		char *argv[] = { self, "workload", NULL };
		int st = run_child(argv, env, dir);
		cases++;
		char why[256] = "";
		if (st == -1)
			snprintf(why, sizeof why, "hang (killed after 60 s)");
		else if (WIFSIGNALED(st) && !(aborts && WTERMSIG(st) == SIGABRT && strstr(out, "NODALLOC_ABORT_ON_CONFIG_ERROR=1")))
			snprintf(why, sizeof why, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (!WIFSIGNALED(st) && capped && WEXITSTATUS(st) == 5)
			; /* ENOMEM under the cap the case set: the error a program gets */
		else if (!WIFSIGNALED(st) && (WEXITSTATUS(st) != 0 || !strstr(out, "workload ok\n")))
			snprintf(why, sizeof why, "exit %d: the program did not run to its end", WEXITSTATUS(st));
		/* every warning or error names a variable of this case */
		for (const char *l = out; !why[0] && *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
			size_t len = strcspn(l, "\n");
			if (strncmp(l, "nodalloc: warning:", 18) != 0 && strncmp(l, "nodalloc: error:", 16) != 0)
				continue;
			bool named = false;
			for (int i = 0; i < nv; i++) {
				char *hit = memmem(l, len, vars[i], strlen(vars[i]));
				named |= hit && !(hit[strlen(vars[i])] >= 'A' && hit[strlen(vars[i])] <= 'Z') &&
					 hit[strlen(vars[i])] != '_';
			}
			if (!named)
				snprintf(why, sizeof why, "a message names none of the case's variables: %.*s", (int)len, l);
		}
		/* every bad variable is reported by name; with ABORT_ON_CONFIG_ERROR
		 * the first bad one (it may be one this fuzzer does not know to
		 * be bad) aborts the program before the others are read, so the
		 * abort names one of the case's variables */
		bool aborted = aborts && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
		bool any_named = false;
		for (int i = 0; i < nv && !why[0] && !unseen; i++) {
			any_named |= strstr(out, vars[i]) != NULL;
			if (!aborted && surely_bad[i] && !strstr(out, vars[i]))
				snprintf(why, sizeof why, "bad %s not reported by name", vars[i]);
		}
		if (!why[0] && !unseen && aborted && !any_named)
			snprintf(why, sizeof why, "aborted without naming a variable of the case");
		if (why[0])
			fail(c, why, argv, env);
		for (int i = 0; i < nv; i++) {
			free(env[i]);
			free(vars[i]);
		}
	}
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_badinput: could not remove %s\n", dir);
	printf("env fuzz: %ld cases, %ld failures\n", cases, failures);
	return failures ? 1 : 0;
}

/* ---- nodactl fuzz --------------------------------------------------------- */

static const char *const long_names[] = {
	"interleave", "membind", "preferred", "preferred-many", "localalloc", "cpunodebind", "cpubind",
	"physcpubind", "all", "balancing", "show", "hardware", "help", "version", "granularity", "weights",
	"topology", "tier-order", "stats", "stats-children", "check", "export", "dry-run", "sysfs",
	"length", "shm", "file", "strict", "huge", "touch", "dump", "verify", "interval", "count", "json",
	"bogus", "",
};
static const char short_letters[] = "imPplNCabsHhcLoMISftuTdDVZ";
static const char *const values[] = {
	"0", "1", "0-1", "all", "!0", "+0", "+0-1", "!+1", "same", "0,1", "1-0", "9", "99999999999999999999",
	"-1", "", ",", "0,,1", "0-", "a", "2M", "4K", "3M", "0=3,1=1", "0=", "json", "text", "x",
	"0: cpus=0 mem=1G; 1: cpus=1 mem=1G", "0: cpus=0 mem=1G; 1: mem=0", "0: mem=1G", "nan", "inf", "1e9",
	"\xff", "=", "--", "-",
};
/* Words anywhere; a word may become the program run (the first after
 * the options): only true, or names not found, run. */
static const char *const words[] = {
	"--", "--", "true", "/bin/true", "nodactl-no-such-program", "hardwre", "stats", "tp", "1", "99999999",
	"/dev/null", "-", "sh",
};
/* nodactl's commands: first only (elsewhere stat and top are programs) */
static const char *const commands[] = { "hardware", "stat", "top", "maps" };

static char *nodactl_arg(void)
{
	char *s;
	int r = (int)(rnd() % 10);
	const char *val = values[rnd() % (sizeof values / sizeof values[0])];
	const char *ln = long_names[rnd() % (sizeof long_names / sizeof long_names[0])];
	size_t cut = strlen(ln) > 2 && rnd() % 3 == 0 ? 2 + rnd() % (strlen(ln) - 1) : strlen(ln); /* abbreviation */
	int ok;
	switch (r) {
	case 0: case 1: ok = asprintf(&s, "--%.*s", (int)cut, ln); break;
	case 2: case 3: ok = asprintf(&s, "--%.*s=%s", (int)cut, ln, val); break;
	case 4: case 5: ok = asprintf(&s, "-%c", short_letters[rnd() % (sizeof short_letters - 1)]); break;
	case 6: ok = asprintf(&s, "-%c%s", short_letters[rnd() % (sizeof short_letters - 1)], val); break;
	case 7: case 8: ok = asprintf(&s, "%s", val); break;
	default: ok = asprintf(&s, "%s", words[rnd() % (sizeof words / sizeof words[0])]); break;
	}
	if (ok < 0)
		abort();
	return s;
}

static int nodactl_fuzz(const char *nodactl, long ncases)
{
	char dir[] = "/tmp/nd-fuzz-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char *env[] = { NULL, NULL };
	long by_exit[4] = { 0 }; /* 0, 1, 2, 127 */
	for (long c = 0; c < ncases; c++) {
		char *argv[16] = { strdup(nodactl) };
		int argc = 1;
		if (rnd() % 4 == 0) /* a command first, sometimes: hardware, stat, top, maps */
			argv[argc++] = strdup(commands[rnd() % 4]);
		for (int i = (int)(rnd() % 8); i > 0; i--)
			argv[argc++] = nodactl_arg();
		/* top and stat watch until --count: one round (the last
		 * --count wins); a program: a harmless one */
		if (argc > 1 && (strcmp(argv[1], "top") == 0 || strcmp(argv[1], "stat") == 0))
			argv[argc++] = strdup("--count=1");
		else if (rnd() % 2) {
			argv[argc++] = strdup("--");
			argv[argc++] = strdup(rnd() % 2 ? "true" : "nodactl-no-such-program");
		}
		argv[argc] = NULL;
		/* a random word may be taken as the program: only these run */
		for (int i = 1; i < argc; i++)
			if (strcmp(argv[i], "sh") == 0 || strcmp(argv[i], "/dev/null") == 0) {
				free(argv[i]);
				argv[i] = strdup("true");
			}
		int st = run_child(argv, env, dir);
		cases++;
		char why[256] = "";
		if (st == -1)
			snprintf(why, sizeof why, "hang (killed after 60 s)");
		else if (WIFSIGNALED(st))
			snprintf(why, sizeof why, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (WEXITSTATUS(st) > 2 && WEXITSTATUS(st) != 127)
			snprintf(why, sizeof why, "exit %d", WEXITSTATUS(st));
		else if (WEXITSTATUS(st) == 127 && !strstr(out, "nodactl: execution of '"))
			snprintf(why, sizeof why, "exit 127 without saying what was not found");
		else if (WEXITSTATUS(st) != 0 && !strstr(out, "nodactl") && !strstr(out, "usage:"))
			snprintf(why, sizeof why, "exit %d without a message", WEXITSTATUS(st));
		/* messages are text: no control character (none is typed
		 * here; an option's internal code printed as a letter was) */
		for (const char *p = out; !why[0] && *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\033')
				snprintf(why, sizeof why, "control character 0x%02x in the output", (unsigned char)*p);
		if (why[0])
			fail(c, why, argv, env);
		else
			by_exit[WEXITSTATUS(st) == 127 ? 3 : WEXITSTATUS(st)]++;
		for (int i = 0; i < argc; i++)
			free(argv[i]);
	}
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_badinput: could not remove %s\n", dir);
	printf("nodactl fuzz: %ld cases (exit 0: %ld, 1: %ld, 2: %ld, 127: %ld), %ld failures\n", cases, by_exit[0],
	       by_exit[1], by_exit[2], by_exit[3], failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "workload") == 0)
		return workload();
	if (argc < 4) {
		fprintf(stderr, "usage: fuzz_badinput env|nodactl SEED CASES [NODACTL]\n");
		return 2;
	}
	/* make fuzz: ND_FUZZ_SEED and ND_FUZZ_OPS (cases = ops / 100) */
	const char *es = getenv("ND_FUZZ_SEED"), *eo = getenv("ND_FUZZ_OPS");
	seed = es ? strtoull(es, NULL, 10) : strtoull(argv[2], NULL, 10);
	long ncases = eo ? atol(eo) / 100 : atol(argv[3]);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	printf("fuzz_badinput %s: seed %llu\n", argv[1], (unsigned long long)seed);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0 || n >= (ssize_t)sizeof self - 1)
		return 2;
	self[n] = '\0';
	if (strcmp(argv[1], "env") == 0)
		return env_fuzz(self, ncases);
	if (strcmp(argv[1], "nodactl") == 0 && argc >= 5)
		return nodactl_fuzz(argv[4], ncases);
	fprintf(stderr, "usage: fuzz_badinput env|nodactl SEED CASES [NODACTL]\n");
	return 2;
}
