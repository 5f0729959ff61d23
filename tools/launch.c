/*
 * nodactl's launcher: `nodactl [options] [--] program args` runs a program
 * with libnodalloc preloaded and the policy set, as numactl does with the
 * kernel's policy. Options are numactl's where it has them, plus nodalloc's.
 * Bad arguments exit 1 (numactl's usage exit) with the argument named.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

typedef struct launch {
	const char *mode;       /* policy mode word, NULL = inherit */
	char nodes[256];        /* node list argument of the mode */
	const char *mode_opt;   /* the option that set the mode (for messages) */
	char granularity[32];
	char weights[256];
	const char *cpunodes;
	const char *topology;
	const char *stats;      /* NULL, "1" or "json" */
	bool tier, check, export_stats;
} launch_t;

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "nodactl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'nodactl --help'.\n");
	return 1;
}

/* "--name=value", "--name value", "-x value": returns the value or NULL. */
static const char *opt_value(const char *arg, const char *lng, char shrt, int *i, int argc, char **argv)
{
	size_t n = strlen(lng);
	if (strncmp(arg, lng, n) == 0) {
		if (arg[n] == '=')
			return arg + n + 1;
		if (arg[n] == '\0' && *i + 1 < argc)
			return argv[++*i];
		return NULL;
	}
	if (shrt && arg[0] == '-' && arg[1] == shrt) {
		if (arg[2])
			return arg + 2;
		if (*i + 1 < argc)
			return argv[++*i];
	}
	return NULL;
}

static bool is_opt(const char *arg, const char *lng, char shrt)
{
	size_t n = strlen(lng);
	return (strncmp(arg, lng, n) == 0 && (arg[n] == '=' || arg[n] == '\0')) ||
	       (shrt && arg[0] == '-' && arg[1] == shrt && arg[1] != '-');
}

static int set_mode(launch_t *l, const char *mode, const char *opt, const char *nodes)
{
	if (l->mode && strcmp(l->mode, mode) != 0)
		return usage_error("%s conflicts with an earlier policy option", opt);
	if (!nodes || !*nodes)
		return usage_error("%s expects a node list such as 0-3,5 or all", opt);
	char err[200];
	nd_nodemask_t m;
	if (nd_nodemask_parse(nodes, &m, err, sizeof err) != 0) {
		fprintf(stderr, "nodactl: %s: %s\n", opt, err);
		return 1;
	}
	l->mode = mode;
	l->mode_opt = opt;
	snprintf(l->nodes, sizeof l->nodes, "%s", nodes);
	return 0;
}

/* Finds libnodalloc.so next to the nodactl binary, or in ../lib (installed). */
static int find_library(char *out, size_t len)
{
	const char *env = getenv("NODALLOC_LIBRARY");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	*slash = '\0';
	static const char *const rel[] = { "/libnodalloc.so", "/../lib/libnodalloc.so",
					   "/../lib/x86_64-linux-gnu/libnodalloc.so", "/../lib64/libnodalloc.so" };
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		snprintf(out, len, "%s%s", exe, rel[i]);
		if (access(out, R_OK) == 0)
			return 0;
	}
	return -1;
}

static int bind_cpus(const char *nodes)
{
	char err[200];
	nd_nodemask_t m;
	if (nd_nodemask_parse(nodes, &m, err, sizeof err) != 0) {
		fprintf(stderr, "nodactl: --cpunodebind: %s\n", err);
		return 1;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	int count = 0;
	for (int cpu = 0; cpu < nd_cpu_limit() && cpu < CPU_SETSIZE; cpu++) {
		int node = nd_node_of_cpu(cpu);
		if (node >= 0 && nd_nodemask_isset(&m, node)) {
			CPU_SET(cpu, &set);
			count++;
		}
	}
	if (count == 0)
		return usage_error("--cpunodebind=%s: these nodes have no CPUs", nodes);
	/* Under an emulated topology the CPUs are fake: nothing to bind. */
	if (_nd_topo()->emulated) {
		fprintf(stderr, "nodactl: warning: --cpunodebind ignored under an emulated topology\n");
		return 0;
	}
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		fprintf(stderr, "nodactl: --cpunodebind=%s: sched_setaffinity: %s\n", nodes, strerror(errno));
		return 1;
	}
	return 0;
}

int nodactl_launch(int argc, char **argv)
{
	launch_t l = { 0 };
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (is_opt(a, "--interleave", 'i')) {
			if (set_mode(&l, "interleave", "--interleave", opt_value(a, "--interleave", 'i', &i, argc, argv)))
				return 1;
		} else if (is_opt(a, "--membind", 'm')) {
			if (set_mode(&l, "bind", "--membind", opt_value(a, "--membind", 'm', &i, argc, argv)))
				return 1;
		} else if (is_opt(a, "--preferred-many", 'P')) {
			if (set_mode(&l, "preferred-many", "--preferred-many", opt_value(a, "--preferred-many", 'P', &i, argc, argv)))
				return 1;
		} else if (is_opt(a, "--preferred", 'p')) {
			v = opt_value(a, "--preferred", 'p', &i, argc, argv);
			char *end;
			if (!v || !*v || (strtol(v, &end, 10), *end != '\0'))
				return usage_error("--preferred expects one node number, got '%s'", v ? v : "");
			if (set_mode(&l, "preferred", "--preferred", v))
				return 1;
		} else if (is_opt(a, "--localalloc", 'l')) {
			if (l.mode && strcmp(l.mode, "local") != 0)
				return usage_error("%s conflicts with an earlier policy option", "--localalloc");
			l.mode = "local";
		} else if (is_opt(a, "--cpunodebind", 'N')) {
			l.cpunodes = opt_value(a, "--cpunodebind", 'N', &i, argc, argv);
			if (!l.cpunodes)
				return usage_error("%s expects a node list", "--cpunodebind");
		} else if (is_opt(a, "--granularity", 0)) {
			v = opt_value(a, "--granularity", 0, &i, argc, argv);
			uint64_t g;
			if (!v || _nd_opt_parse_size(v, &g) != 0 || g < 4096 || (g & (g - 1)))
				return usage_error("--granularity expects a power-of-two size of at least 4K (e.g. 2M), got '%s'", v ? v : "");
			snprintf(l.granularity, sizeof l.granularity, "%s", v);
		} else if (is_opt(a, "--weights", 0)) {
			v = opt_value(a, "--weights", 0, &i, argc, argv);
			if (!v || !*v)
				return usage_error("%s expects node=weight pairs such as 0=3,1=1", "--weights");
			snprintf(l.weights, sizeof l.weights, "%s", v);
		} else if (is_opt(a, "--topology", 0)) {
			l.topology = opt_value(a, "--topology", 0, &i, argc, argv);
			if (!l.topology)
				return usage_error("%s expects a topology spec (docs/topology.md)", "--topology");
			char err[256];
			if (nd_topology_emulate(l.topology, err, sizeof err) != 0) {
				fprintf(stderr, "nodactl: --topology: %s\n", err);
				return 1;
			}
		} else if (strcmp(a, "--tier-order") == 0) {
			l.tier = true;
		} else if (strcmp(a, "--check") == 0) {
			l.check = true;
		} else if (strcmp(a, "--export") == 0) {
			l.export_stats = true;
		} else if (strcmp(a, "--stats") == 0 || strcmp(a, "--stats=text") == 0) {
			l.stats = "1";
		} else if (strcmp(a, "--stats=json") == 0) {
			l.stats = "json";
		} else if (strncmp(a, "--stats=", 8) == 0) {
			return usage_error("--stats takes text or json, got '%s'", a + 8);
		} else {
			return usage_error("unrecognized option '%s'", a);
		}
	}
	if (i >= argc)
		return usage_error("%s", "no program to run (nodactl [options] -- program args)");

	/* The policy string, checked by the library's own parser. */
	char policy[640] = "";
	if (l.weights[0]) {
		if (l.mode && strcmp(l.mode, "interleave") != 0)
			return usage_error("--weights goes with --interleave, not %s", l.mode_opt);
		snprintf(policy, sizeof policy, "weighted:%s", l.weights);
	} else if (l.mode) {
		if (strcmp(l.mode, "local") == 0)
			snprintf(policy, sizeof policy, "local");
		else
			snprintf(policy, sizeof policy, "%s:%s", l.mode, l.nodes);
	}
	if (l.granularity[0]) {
		if (strncmp(policy, "interleave", 10) != 0 && strncmp(policy, "weighted", 8) != 0)
			return usage_error("%s goes with --interleave or --weights", "--granularity");
		size_t n = strlen(policy);
		snprintf(policy + n, sizeof policy - n, "@%s", l.granularity);
	}
	if (l.tier) {
		if (!policy[0])
			snprintf(policy, sizeof policy, "local");
		size_t n = strlen(policy);
		snprintf(policy + n, sizeof policy - n, "+tier");
	}
	if (policy[0]) {
		nd_policy_t p;
		char err[256];
		if (nd_policy_parse(policy, &p, err, sizeof err) != 0) {
			fprintf(stderr, "nodactl: policy '%s': %s\n", policy, err);
			return 1;
		}
		setenv("NODALLOC_POLICY", policy, 1);
	}
	if (l.cpunodes && bind_cpus(l.cpunodes) != 0)
		return 1;
	if (l.topology)
		setenv("NODALLOC_TOPOLOGY", l.topology, 1);
	if (l.stats)
		setenv("NODALLOC_STATS", l.stats, 1);
	if (l.check)
		setenv("NODALLOC_CHECK", "1", 1);
	if (l.export_stats)
		setenv("NODALLOC_STATS_EXPORT", "1", 1);

	char lib[PATH_MAX];
	if (find_library(lib, sizeof lib) != 0) {
		fprintf(stderr, "nodactl: cannot find libnodalloc.so next to nodactl or in ../lib (set NODALLOC_LIBRARY)\n");
		return 1;
	}
	const char *old = getenv("LD_PRELOAD");
	char preload[PATH_MAX * 2];
	if (old && *old)
		snprintf(preload, sizeof preload, "%s:%s", lib, old);
	else
		snprintf(preload, sizeof preload, "%s", lib);
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[i], argv + i);
	fprintf(stderr, "nodactl: execution of '%s': %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
