// SPDX-License-Identifier: MIT
/* nodactl's subcommands, one file each. */
#ifndef NODACTL_H
#define NODACTL_H
#include <stdio.h>
int nodactl_launch(int argc, char **argv); /* nodactl [options] -- program */
int nodactl_stat(int argc, char **argv);   /* nodactl stat PID */
int nodactl_top(int argc, char **argv);    /* nodactl top (top.c) */
int nodactl_maps(int argc, char **argv);   /* nodactl maps PID (maps.c) */
void nodactl_usage(FILE *f);               /* the help text (nodactl.c) */
/* stat.c: is pid alive (not a zombie); its label from /proc. */
#include <stdbool.h>
struct _nd_stats_label;
bool nodactl_alive(int pid);
/* stat.c: does pid map the file open at fd (in /proc/PID/maps)? 1 yes,
 * 0 no (an export its process no longer counts into: it executed a
 * program without nodalloc, or a newer image replaced the file), -1
 * cannot tell. */
int nodactl_maps_file(int pid, int fd);
/* stat.c: --interval=S and --count=N of stat and top (1 and a message
 * naming cmd if bad), and the sleep between rounds. */
int nodactl_interval(const char *cmd, const char *v, double *out);
int nodactl_count(const char *cmd, const char *v, long *out);
void nodactl_sleep(double seconds);
/* collect.c: run argv as a child and report its statistics when it ends. */
int nodactl_run_collected(char **argv, bool json, bool children, bool named);
void nodactl_label_of(int pid, struct _nd_stats_label *lb);
#endif
