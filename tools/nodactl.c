// SPDX-License-Identifier: MIT
/*
 * nodactl: the command-line tool of nodalloc.
 *
 *   nodactl --hardware [--topology=SPEC | --sysfs=ROOT]
 *       what `numactl --hardware` prints, plus each node's fallback list
 *       (node and tier order) and each CPU's memory node
 *   nodactl hardware ...            (the same, as a subcommand)
 *   nodactl stat PID|FILE [--json]  live statistics of a process (stat.c)
 *   nodactl top [--interval=S] [--count=N]  every exporting process (top.c)
 *   nodactl maps PID                per-node memory of any process (maps.c)
 *   nodactl [policy options] [--] program args
 *                                   run a program on nodalloc (launch.c)
 *
 * Dispatch: main() sends "stat" to stat.c and anything that does not ask
 * for this inspector (--hardware, --help, "hardware") to the launcher in
 * launch.c. The inspector's options are read from one table (opts[]) into
 * a nodactl_t; the first non-option word is a subcommand (subs[]); "--"
 * ends the options. To add a command:
 * a row in subs[] and a function taking the parsed nodactl_t; to add an
 * option: a row in opts[]. Bad arguments print a message naming the
 * argument and exit 1 (numactl's usage exit).
 *
 * The tool is linked with the whole static library, so it calls the
 * hidden _nd_ functions directly. It may use stdio (it is not the library).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "nodactl.h"

typedef struct nodactl {
	const char *topology; /* --topology=SPEC: an emulated topology */
	const char *sysfs;    /* --sysfs=ROOT: a sysfs-shaped tree */
	bool hardware;        /* --hardware / -H */
	bool help;
	int argc;             /* the command's plain arguments */
	char **argv;
} nodactl_t;

typedef struct opt {
	const char *name; /* long name without "--" */
	char short_name;  /* 0: none */
	bool has_arg;     /* --name=VALUE or --name VALUE (-x VALUE) */
	int (*set)(nodactl_t *n, const char *value);
	const char *help;
} opt_t;

typedef struct sub {
	const char *name;
	int (*run)(nodactl_t *n);
	const char *help;
} sub_t;

static int set_hardware(nodactl_t *n, const char *v) { (void)v; n->hardware = true; return 0; }
static int set_topology(nodactl_t *n, const char *v) { n->topology = v; return 0; }
static int set_sysfs(nodactl_t *n, const char *v) { n->sysfs = v; return 0; }
static int set_help(nodactl_t *n, const char *v) { (void)v; n->help = true; return 0; }

static const opt_t opts[] = {
	{ "hardware", 'H', false, set_hardware, "show nodes, CPUs, memory, distances, fallback lists" },
	{ "topology", 0, true, set_topology, "use an emulated topology (docs/topology.md)" },
	{ "sysfs", 0, true, set_sysfs, "read the topology from a sysfs-shaped tree" },
	{ "help", 'h', false, set_help, "this text" },
};

static int cmd_hardware(nodactl_t *n);

static const sub_t subs[] = {
	{ "hardware", cmd_hardware, "the same as --hardware" },
};

void nodactl_usage(FILE *f)
{
	fprintf(f, "usage: nodactl [options] [command]\n");
	fprintf(f, "       nodactl --hardware [--topology=SPEC | --sysfs=ROOT]\n");
	fprintf(f, "       nodactl stat PID|FILE [--json] [--interval=S] [--count=N]\n");
	fprintf(f, "       nodactl top [--interval=S] [--count=N]\n");
	fprintf(f, "       nodactl maps PID\n");
	fprintf(f, "       nodactl [--interleave=NODES | --membind=NODES | --preferred=NODE |\n"
		   "                --preferred-many=NODES | --localalloc | --weights=N=W,...]\n"
		   "               [--granularity=SIZE] [--cpunodebind=NODES | --physcpubind=CPUS]\n"
		   "               [--all] [--balancing] [--topology=SPEC] [--tier-order]\n"
		   "               [--stats[=json]] [--stats-children] [--check] [--export]\n"
		   "               [--dry-run | --show] [--] program [args]\n"
		   "       nodactl --version\n");
	fprintf(f, "NODES: 0-3,5 | all | !1 | +0-1 (relative to the allowed nodes) | same (the list before)\n");
	fprintf(f, "A policy option sets the kernel's policy of the program (all its memory) and\n"
		   "nodalloc's for its heap; see nodactl(1) and docs/numactl.md.\n");
	fprintf(f, "options of --hardware:\n");
	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "--%s%s", opts[i].name, opts[i].has_arg ? "=VALUE" : "");
		if (opts[i].short_name)
			fprintf(f, "  %-20s -%c  %s\n", name, opts[i].short_name, opts[i].help);
		else
			fprintf(f, "  %-24s %s\n", name, opts[i].help);
	}
	fprintf(f, "commands:\n");
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
		fprintf(f, "  %-24s %s\n", subs[i].name, subs[i].help);
}

static int bad_args(const char *fmt, const char *what)
{
	fprintf(stderr, "nodactl: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n");
	nodactl_usage(stderr);
	return 1;
}

/* Parses argv into *n: options anywhere (before "--"), the first plain
 * word is the command, later plain words are its arguments (n->argv).
 * 0, or 1 on a bad argument (message printed). */
static int parse_args(int argc, char **argv, nodactl_t *n, const sub_t **sub)
{
	*sub = NULL;
	int words = 1; /* plain words are compacted into argv[1..] (w <= i) */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		const opt_t *o = NULL;
		const char *value = NULL;
		if (a[0] == '-' && a[1] == '-') {
			const char *name = a + 2;
			size_t len = strcspn(name, "=");
			/* exact, else a unique prefix (as getopt_long) */
			int prefixes = 0;
			for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
				if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0)
					o = &opts[k];
			for (size_t k = 0; !o && k < sizeof opts / sizeof opts[0]; k++)
				if (strncmp(opts[k].name, name, len) == 0)
					prefixes++;
			for (size_t k = 0; !o && prefixes == 1 && k < sizeof opts / sizeof opts[0]; k++)
				if (strncmp(opts[k].name, name, len) == 0)
					o = &opts[k];
			if (!o)
				return bad_args(prefixes > 1 ? "option '%s' is ambiguous" : "unrecognized option '%s'", a);
			if (name[len] == '=') {
				if (!o->has_arg)
					return bad_args("option '%s' takes no value", a);
				value = name + len + 1;
			}
		} else if (a[0] == '-' && a[1] && !a[2]) {
			for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
				if (opts[k].short_name == a[1])
					o = &opts[k];
			if (!o)
				return bad_args("unrecognized option '%s'", a);
		} else if (a[0] == '-') {
			return bad_args("unrecognized option '%s'", a);
		} else if (!*sub) {
			for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++)
				if (strcmp(subs[k].name, a) == 0)
					*sub = &subs[k];
			if (!*sub)
				return bad_args("unknown command '%s'", a);
			continue;
		} else {
			argv[words++] = argv[i];
			continue;
		}
		if (o->has_arg && !value) {
			if (i + 1 >= argc)
				return bad_args("option '%s' needs a value", a);
			value = argv[++i];
		}
		if (o->set(n, value))
			return 1;
	}
	n->argv = argv + 1;
	n->argc = words - 1;
	return 0;
}

/* ---- --hardware ----------------------------------------------------------- */

/* "0-3,5" style list of the set entries of flags[0..len). */
static void print_ranges(const uint8_t *flags, int len)
{
	bool first = true;
	for (int i = 0; i < len; i++) {
		if (!flags[i])
			continue;
		int j = i;
		while (j + 1 < len && flags[j + 1])
			j++;
		printf("%s%d", first ? "" : ",", i);
		if (j > i)
			printf("-%d", j);
		first = false;
		i = j;
	}
}

static void print_hardware(const _nd_topo_t *t)
{
	int L = t->node_limit, count = 0;
	for (int i = 0; i < L; i++)
		count += t->online[i] != 0;
	/* The numactl --hardware part. */
	printf("available: %d nodes (", count);
	print_ranges(t->online, L);
	printf(")\n");
	for (int node = 0; node < L; node++) {
		if (!t->online[node])
			continue;
		printf("node %d cpus:", node);
		for (int c = 0; c < t->cpu_limit; c++)
			if (t->cpu_node[c] == node)
				printf(" %d", c);
		printf("\n");
		printf("node %d size: %llu MB\n", node, (unsigned long long)(t->mem_total[node] >> 20));
		printf("node %d free: %llu MB\n", node, (unsigned long long)(_nd_topo_node_free_in(t, node) >> 20));
	}
	printf("node distances:\n");
	printf("node ");
	for (int i = 0; i < L; i++)
		if (t->online[i])
			printf("%3d ", i);
	printf("\n");
	for (int i = 0; i < L; i++) {
		if (!t->online[i])
			continue;
		printf("%3d: ", i);
		for (int k = 0; k < L; k++)
			if (t->online[k])
				printf("%3d ", t->distance[(size_t)i * (size_t)L + (size_t)k]);
		printf("\n");
	}

	/* nodalloc's part. */
	printf("memory tiers:");
	for (int tier = 0; tier < t->tier_count; tier++) {
		printf(" %d = {", tier);
		bool first = true;
		for (int n = 0; n < L; n++)
			if (t->tier[n] == tier) {
				printf("%s%d", first ? "" : ",", n);
				first = false;
			}
		printf("}");
	}
	printf("\n");
	for (int order = 0; order < 2; order++) {
		printf("fallback lists (%s order):\n", order ? "tier" : "node");
		for (int n = 0; n < L; n++) {
			if (!t->online[n])
				continue;
			const int *l = order ? t->fallback_tier[n] : t->fallback[n];
			printf("node %d:", n);
			for (int i = 0; i < t->fallback_len[n]; i++)
				printf(" %d", l[i]);
			printf("\n");
		}
	}
	printf("cpu memory nodes (cpu: node -> memory node):\n");
	for (int c = 0; c < t->cpu_limit; c++)
		if (t->cpu_node[c] >= 0)
			printf("cpu %d: %d -> %d%s\n", c, t->cpu_node[c], t->cpu_mem_node[c],
			       t->cpu_allowed[c] ? "" : " (not allowed)");
	for (int n = 0; n < L; n++)
		if (t->online[n] && !t->mem_allowed[n])
			printf("node %d: memory not allowed (Mems_allowed)\n", n);
}

static int cmd_hardware(nodactl_t *n)
{
	if (n->topology && n->sysfs) {
		fprintf(stderr, "nodactl: --topology and --sysfs exclude each other\n");
		return 1;
	}
	if (n->argc > 0) {
		fprintf(stderr, "nodactl: hardware: unexpected argument '%s'\n", n->argv[0]);
		return 1;
	}
	char err[512]; /* the parser quotes tokens, not the spec: bounded */
	const _nd_topo_t *t;
	/* Built aside, not installed: the live topology may already be frozen
	 * (stdio has allocated). */
	if (n->topology) {
		t = _nd_topo_build_spec(n->topology, err, sizeof err);
		if (!t) {
			fprintf(stderr, "nodactl: --topology: %s\n", err);
			return 1;
		}
	} else if (n->sysfs) {
		t = _nd_topo_build_sysfs(n->sysfs, err, sizeof err);
		if (!t) {
			fprintf(stderr, "nodactl: --sysfs: %s\n", err);
			return 1;
		}
	} else {
		_nd_ensure_init();
		t = _nd_topo();
	}
	print_hardware(t);
	_nd_topo_discard(t);
	return 0;
}

/* Does argv ask for the inspector (--hardware, --help, a subcommand), rather
 * than the launcher? Only words before "--" count; --hardware may be
 * abbreviated as getopt_long allows (--hard). */
static bool wants_inspector(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];
		size_t len = strcspn(a, "=");
		if ((len >= 4 && strncmp(a, "--hardware", len) == 0) || strcmp(a, "-H") == 0 || strcmp(a, "--help") == 0 ||
		    strcmp(a, "-h") == 0 || strncmp(a, "--sysfs", 7) == 0)
			return true;
		if (a[0] != '-')
			return i == 1 && strcmp(a, "hardware") == 0;
	}
	return argc < 2;
}

/* The commands, for the mistyped-command check (the inspector's subs[]
 * and the files of their own). */
static const char *const commands[] = { "hardware", "stat", "top", "maps" };

static bool in_path(const char *name)
{
	if (strchr(name, '/'))
		return true;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	char buf[PATH_MAX];
	while (*path) {
		size_t n = strcspn(path, ":");
		/* a name cut to fit would be another file: such a path is no
		 * program (execvp would fail with ENAMETOOLONG) */
		if ((size_t)snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, name) < sizeof buf && access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* `nodactl stats 1234`: a first word one edit away from a command (two for
 * long ones), that is no program in PATH, is a mistyped command, not a
 * program to run. Returns the command meant, or NULL. */
static const char *mistyped_command(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return NULL;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		int d = _nd_opt_distance(argv[1], strlen(argv[1]), commands[i]);
		if (strcmp(argv[1], commands[i]) != 0 && d <= (strlen(commands[i]) >= 6 ? 2 : 1) && !in_path(argv[1]))
			return commands[i];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "stat") == 0)
		return nodactl_stat(argc, argv);
	if (argc > 1 && strcmp(argv[1], "top") == 0)
		return nodactl_top(argc, argv);
	if (argc > 1 && strcmp(argv[1], "maps") == 0)
		return nodactl_maps(argc, argv);
	const char *meant = mistyped_command(argc, argv);
	if (meant) {
		fprintf(stderr, "nodactl: unknown command '%s' (did you mean '%s'?); to run a program of that name: nodactl -- %s\n",
			argv[1], meant, argv[1]);
		return 1;
	}
	if (!wants_inspector(argc, argv))
		return nodactl_launch(argc, argv);
	nodactl_t n = { 0 };
	const sub_t *sub;
	if (parse_args(argc, argv, &n, &sub))
		return 1;
	if (n.help) {
		nodactl_usage(stdout);
		return 0;
	}
	if (sub)
		return sub->run(&n);
	if (n.hardware)
		return cmd_hardware(&n);
	if (n.topology || n.sysfs)
		return bad_args("%s needs a command (e.g. --hardware)", n.topology ? "--topology" : "--sysfs");
	nodactl_usage(stderr);
	return 1;
}
