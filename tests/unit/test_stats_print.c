// SPDX-License-Identifier: MIT
/* Statistics printers: the numastat-like table laid out exactly, JSON that
 * python's json module parses with the right values, NODALLOC_STATS at
 * exit (the destructor, in a child run of this binary).
 * The binary runs on nodalloc's malloc, which counts its own allocations
 * (and the arenas' reservation at the first one): every printed table is
 * fed right before it is printed (feed() resets first), and nothing
 * allocates between the two (capture uses a pipe and read). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define SPEC                                                                                   \
	"0:cpus=0-1,mem=64M; 1:cpus=2-3,mem=64M; 2:cpus=4-5,mem=64M; 3:mem=64M; 4:cpus=6,mem=0; " \
	"distance: 0-1=20,0-2=30,0-3=40,1-2=25,1-3=35,2-3=22,4-0=15,4-1=26,4-2=33,4-3=44"

static char out[65536];

/* Everything fn writes to a pipe. */
static const char *capture(void (*fn)(int))
{
	int p[2];
	if (pipe(p) != 0)
		return "";
	fn(p[1]);
	close(p[1]);
	size_t k = 0;
	ssize_t n;
	while ((n = read(p[0], out + k, sizeof out - 1 - k)) > 0)
		k += (size_t)n;
	out[k] = '\0';
	close(p[0]);
	return out;
}

static void at_exit_to(int fd)
{
	char b[16];
	snprintf(b, sizeof b, "%d", fd);
	_nd_opt_set("msg_fd", b);
	_nd_stats_at_exit();
	_nd_opt_set("msg_fd", "2");
}

static void feed(void)
{
	_nd_stats_reset();
	for (int i = 0; i < 1234567; i++)
		_nd_stats_count(0, 0, 0, false);
	_nd_stats_count(1, 2, 0, false);
	_nd_stats_count(3, 3, 2, true);
	_nd_stats_count(3, 3, 2, true);
	_nd_stats_in_use(0, 3 << 19);                 /* 1.50 MiB */
	_nd_stats_committed(0, 2 << 20);              /* 2.00 */
	_nd_stats_reserved(0, (int64_t)3 << 30);      /* 3072.00 */
	_nd_stats_in_use(1, 1);                       /* 0.00 */
	_nd_stats_in_use(2, (1 << 20) - 1);           /* 1.00 (rounded) */
	_nd_stats_in_use(3, (1 << 20) + 5243);      /* 1.01 (just over 1.005 rounds up) */
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		/* the destructor prints what NODALLOC_STATS asks for */
		_nd_stats_count(0, 0, 0, false);
		return 0;
	}
	char err[256];
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);

	/* the table: 16-wide label column, 16-wide right-aligned node columns
	 * (numastat's layout), every online node including memoryless 4 */
	feed();
	capture(nd_stats_print);
	char want[4096];
	size_t k = 0;
	/* counts are page runs, named so; a Total column (numastat -p's);
	 * fragmented = committed - in use, per node (never negative) */
#define ROW(label, a, b, c, d, e, t) \
	k += (size_t)snprintf(want + k, sizeof want - k, "%-16s%16s%16s%16s%16s%16s%16s\n", label, a, b, c, d, e, t)
	ROW("", "node0", "node1", "node2", "node3", "node4", "Total");
	ROW("hit_runs", "1234567", "0", "0", "2", "0", "1234569");
	ROW("miss_runs", "0", "0", "1", "0", "0", "1");
	ROW("foreign_runs", "0", "1", "0", "0", "0", "1");
	ROW("interleave_runs", "0", "0", "0", "2", "0", "2");
	ROW("local_runs", "1234567", "0", "0", "0", "0", "1234567");
	ROW("other_runs", "0", "0", "1", "2", "0", "3");
	ROW("in_use_MiB", "1.50", "0.00", "1.00", "1.01", "0.00", "3.51");
	ROW("committed_MiB", "2.00", "0.00", "0.00", "0.00", "0.00", "2.00");
	ROW("reserved_MiB", "3072.00", "0.00", "0.00", "0.00", "0.00", "3072.00");
	ROW("fragmented_MiB", "0.50", "0.00", "0.00", "0.00", "0.00", "0.50");
	CHECK(strcmp(out, want) == 0, "table:\n%s\nexpected:\n%s", out, want);
	CHECK(strncmp(out, "                           node0", 32) == 0); /* as numastat */

	/* JSON: valid, with the values, checked by python's parser */
	capture(nd_stats_print_json);
	CHECK(strncmp(out, "{\"version\":1,", 13) == 0, "%s", out);
	CHECK(strstr(out, "\"0\":{\"numa_hit\":1234567,\"numa_miss\":0,") != NULL, "%s", out);
	CHECK(strstr(out, "\"bytes_fragmented\":524288}") != NULL, "%s", out);
	CHECK(strstr(out, "\"total\":{\"numa_hit\":1234569,\"numa_miss\":1,") != NULL, "%s", out);
	char path[] = "/tmp/nd_stats_json_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, out, strlen(out)) == (ssize_t)strlen(out));
	close(fd);
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=d[\"nodes\"]; "
		 "print(d[\"version\"], sorted(n), n[\"0\"][\"numa_hit\"], n[\"3\"][\"interleave_hit\"], "
		 "n[\"2\"][\"numa_miss\"], n[\"1\"][\"numa_foreign\"], n[\"0\"][\"bytes_reserved\"], len(n[\"4\"]), "
		 "d[\"total\"][\"other_node\"])' %s",
		 path);
	FILE *py = popen(cmd, "r");
	CHECK(py != NULL);
	char line[256] = "";
	if (py) {
		if (!fgets(line, sizeof line, py))
			line[0] = '\0';
		CHECK_EQ(pclose(py), 0);
	}
	CHECK_STR(line, "1 ['0', '1', '2', '3', '4'] 1234567 2 1 1 3221225472 10 3\n");
	unlink(path);

	/* NODALLOC_STATS values, to the message descriptor (popen above
	 * allocated: feed again before each table) */
	_nd_opt_set("stats", "json");
	feed();
	capture(at_exit_to);
	CHECK(strncmp(out, "{\"version\":1,", 13) == 0, "json: %s", out);
	/* at exit the report names its process (not started by nodactl) */
	char label[128];
	snprintf(label, sizeof label, "\"pid\":%d,\"program\":\"test_stats_print\",\"ppid\":%d,\"role\":\"process\",",
		 (int)getpid(), (int)getppid());
	CHECK(strstr(out, label) != NULL, "json: want %s in %s", label, out);
	CHECK(strstr(out, "\"peak_bytes_in_use\":") != NULL && strstr(out, "\"rss_bytes\":") != NULL, "json: %s", out);
	snprintf(label, sizeof label, "nodalloc statistics of pid %d (test_stats_print), parent %d\npeak in use ",
		 (int)getpid(), (int)getppid());
	_nd_opt_set("stats", "1");
	feed();
	capture(at_exit_to);
	CHECK(strncmp(out, label, strlen(label)) == 0 && strstr(out, want) != NULL, "1: %s", out);
	_nd_opt_set("stats", "text");
	feed();
	capture(at_exit_to);
	CHECK(strncmp(out, label, strlen(label)) == 0 && strstr(out, want) != NULL, "text: %s", out);
	_nd_opt_set("stats", "yes");
	feed();
	capture(at_exit_to);
	CHECK(strncmp(out, label, strlen(label)) == 0 && strstr(out, want) != NULL, "yes: %s", out);
	_nd_opt_set("stats", "0");
	capture(at_exit_to);
	CHECK_STR(out, "");
	_nd_opt_set("stats", "");
	capture(at_exit_to);
	CHECK_STR(out, "");
	_nd_opt_set("stats", "xml");
	capture(at_exit_to);
	CHECK(strstr(out, "nodalloc: warning: NODALLOC_STATS: unknown value 'xml' (expected 1, text or json)"),
	      "got: %s", out);
	_nd_opt_set("stats", "");

	/* at exit for real: a child run of this binary with the environment */
	snprintf(cmd, sizeof cmd, "NODALLOC_STATS=json /proc/%d/exe child 2>&1", (int)getpid());
	FILE *ch = popen(cmd, "r");
	CHECK(ch != NULL);
	if (ch) {
		size_t n = fread(out, 1, sizeof out - 1, ch);
		out[n] = '\0';
		CHECK_EQ(pclose(ch), 0);
		CHECK(strstr(out, "{\"version\":1,") != NULL && strstr(out, "\"numa_hit\":") != NULL, "child: %s", out);
	}
	snprintf(cmd, sizeof cmd, "NODALLOC_STATS=1 /proc/%d/exe child 2>&1", (int)getpid());
	ch = popen(cmd, "r");
	CHECK(ch != NULL);
	if (ch) {
		size_t n = fread(out, 1, sizeof out - 1, ch);
		out[n] = '\0';
		CHECK_EQ(pclose(ch), 0);
		CHECK(strstr(out, "hit_runs") != NULL && strstr(out, "reserved_MiB") != NULL, "child: %s", out);
	}
	return CHECK_DONE();
}
