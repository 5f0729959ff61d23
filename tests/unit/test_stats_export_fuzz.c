// SPDX-License-Identifier: MIT
/*
 * Fuzzing the export reader (_nd_stats_read_export, what `nodactl stat`
 * runs; issue 12, item 4): thousands of files made from a real export by
 * byte mutations, cuts and extensions, and wholly random files. The
 * reader must never crash and must decide as the format says: a changed
 * identity or layout field (magic, version, slot size, pid, slot count,
 * start time) or size is refused; counters and padding are free values
 * and accepted; whatever it accepts is consistent. A sample also goes
 * through nodactl stat. The seed is written by this binary re-executed
 * with NODALLOC_STATS_EXPORT, kept alive while the reader runs (the
 * reader checks that the writer runs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "run_cmd.h"

#define SEED_SIZE (4096 + 128 * (ND_MAX_NODES + 1)) /* header page, node slots, process slot */
/* Header fields (stats.c's export_hdr_t): a change there is refused,
 * except node_limit (bytes 20-23), which may land on another valid count. */
#define HDR_END 40
#define PID_OFF 16

/* Start time of pid (field 22 of /proc/PID/stat), 0 if none. */
static unsigned long long start_of(int pid)
{
	char path[64], b[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = pid > 0 ? fopen(path, "r") : NULL;
	size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
	if (f)
		fclose(f);
	b[n] = '\0';
	char *p = strrchr(b, ')');
	unsigned long long v = 0;
	for (int field = 2; p && *p && field < 22; p++)
		field += *p == ' ';
	if (p)
		v = strtoull(p, NULL, 10);
	return v;
}

#define NL_OFF 20

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned char seed[SEED_SIZE], buf[SEED_SIZE + 4096];
static _nd_stats_all_t st;

static int put(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, data, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -1;
}

/* 0 accepted, -1 refused (err set); checks what an accepted one says. */
static int read_file(const char *path, int writer, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	int pid = -7;
	err[0] = '\0';
	int r = _nd_stats_read_export(fd, &st, &pid, NULL, err, errlen);
	close(fd);
	if (r == 0) {
		CHECK((pid == writer || start_of(pid) == start_of(writer)) && st.node_limit >= 1 &&
			      st.node_limit <= ND_MAX_NODES,
		      "pid %d, %d nodes", pid, st.node_limit);
	} else {
		CHECK(r == -1 || r == -2);
		CHECK(err[0] != '\0', "refused without a reason");
	}
	return r == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* the writer: some allocations, then wait for EOF */
		for (int i = 0; i < 300; i++)
			nd_malloc(64 << 10);
		printf("ready\n");
		fflush(stdout);
		char c;
		while (read(0, &c, 1) > 0)
			;
		return 0;
	}
	char dir[128], seedpath[200], path[200], err[256], env[300];
	snprintf(dir, sizeof dir, "/dev/shm/nd-export-fuzz-%d", (int)getpid());
	mkdir(dir, 0700);
	snprintf(seedpath, sizeof seedpath, "%s/seed.stats", dir);
	snprintf(path, sizeof path, "%s/case.stats", dir);
	snprintf(env, sizeof env, "NODALLOC_STATS_EXPORT=%s", seedpath);
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return 1;
	pid_t writer = fork();
	if (writer == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		char *envp[] = { env, NULL };
		execle("/proc/self/exe", argv[0], "writer", (char *)NULL, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	char ready[8] = "";
	CHECK(read(out[0], ready, 6) == 6, "writer did not start");
	int fd = open(seedpath, O_RDONLY);
	CHECK(fd >= 0 && read(fd, seed, sizeof seed) == (ssize_t)sizeof seed, "seed: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	CHECK(read_file(seedpath, writer, err, sizeof err) == 0, "the seed itself: %s", err);
	CHECK(st.nodes[0].numa_hit >= 300, "seed numa_hit %llu", (unsigned long long)st.nodes[0].numa_hit);

	int cases = 0, accepted = 0, refused = 0, wrong = 0;
	/* 1. Byte mutations of the seed: 1-8 bytes, half of them in the header. */
	for (int i = 0; i < 3000; i++, cases++) {
		memcpy(buf, seed, sizeof seed);
		int n = 1 + (int)(rnd() % 8);
		bool must_refuse = false, header_nl = false, header_pid = false;
		char what[200] = "";
		for (int k = 0; k < n; k++) {
			size_t off = rnd() % 2 ? rnd() % 64 : rnd() % sizeof seed;
			unsigned char v = (unsigned char)rnd();
			if (v == buf[off])
				continue;
			buf[off] = v;
			snprintf(what + strlen(what), sizeof what - strlen(what), " %zu:%02x", off, v);
			if (off >= NL_OFF && off < NL_OFF + 4)
				header_nl = true;
			else if (off >= PID_OFF && off < PID_OFF + 4)
				header_pid = true;
			else if (off < HDR_END)
				must_refuse = true;
		}
		CHECK(put(path, buf, sizeof seed) == 0);
		int r = read_file(path, writer, err, sizeof err);
		int32_t nl;
		memcpy(&nl, buf + NL_OFF, 4);
		bool nl_ok = nl >= 1 && nl <= ND_MAX_NODES;
		int32_t newpid;
		memcpy(&newpid, buf + PID_OFF, 4);
		/* a pid changed to a process that started in the same clock tick
		 * (this test, its writer's parent) names that process: valid */
		if (header_pid && !(newpid == writer || start_of(newpid) == start_of(writer)))
			must_refuse = true;
		bool expect_ok = !must_refuse && (!header_nl || nl_ok);
		if ((r == 0) != expect_ok) {
			wrong++;
			CHECK(0, "mutation case %d (bytes%s): %s (%s)", i, what, r == 0 ? "accepted" : "refused", err);
		}
		r == 0 ? accepted++ : refused++;
		if (r == 0 && expect_ok)
			CHECK_EQ(st.node_limit, nl);
	}
	/* 2. Cut or extended: always refused (the size is part of the format). */
	for (int i = 0; i < 500; i++, cases++) {
		size_t len = rnd() % 3 ? rnd() % sizeof seed : sizeof seed + 1 + rnd() % 4096;
		memcpy(buf, seed, sizeof seed);
		memset(buf + sizeof seed, 0, sizeof buf - sizeof seed);
		CHECK(put(path, buf, len) == 0);
		if (read_file(path, writer, err, sizeof err) == 0) {
			wrong++;
			CHECK(0, "a %zu-byte file was accepted", len);
			accepted++;
		} else {
			refused++;
			CHECK(strstr(err, "truncated") || strstr(err, "wrong size"), "%zu bytes: %s", len, err);
		}
	}
	/* 3. Random files (random sizes, some of the export's size): refused. */
	for (int i = 0; i < 1500; i++, cases++) {
		size_t len = rnd() % 4 == 0 ? sizeof seed : rnd() % (sizeof seed + 100);
		for (size_t k = 0; k < len; k += 8) {
			uint64_t v = rnd();
			memcpy(buf + k, &v, len - k < 8 ? len - k : 8);
		}
		if (i % 3 == 0 && len >= 8)
			memcpy(buf, seed, 8); /* the right magic, random fields */
		CHECK(put(path, buf, len) == 0);
		if (read_file(path, writer, err, sizeof err) == 0) {
			wrong++;
			accepted++;
			CHECK(0, "random file %d accepted", i);
		} else {
			refused++;
		}
	}
	/* 4. A sample through nodactl stat: exit 0 or 1, never a signal. */
	int tool = 0;
	for (int i = 0; i < 60; i++, tool++) {
		memcpy(buf, seed, sizeof seed);
		for (int k = 0; k < 4; k++)
			buf[rnd() % (i % 2 ? 64 : sizeof seed)] = (unsigned char)rnd();
		size_t len = i % 5 == 0 ? rnd() % sizeof seed : sizeof seed;
		CHECK(put(path, buf, len) == 0);
		int rc = run(NODACTL " stat %s --json", path);
		CHECK(rc == 0 || rc == 1, "nodactl stat exit %d: %s", rc, run_out);
	}
	close(in[1]); /* the writer ends */
	waitpid(writer, NULL, 0);
	CHECK(read_file(seedpath, writer, err, sizeof err) != 0, "the export outlived its writer");
	printf("export reader fuzz: %d files (%d accepted, %d refused, %d decided wrongly), %d through nodactl stat\n",
	       cases, accepted, refused, wrong, tool);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return CHECK_DONE();
}
