/* nodactl's subcommands, one file each. */
#ifndef NODACTL_H
#define NODACTL_H
#include <stdio.h>
int nodactl_launch(int argc, char **argv); /* nodactl [options] -- program */
int nodactl_stat(int argc, char **argv);   /* nodactl stat PID */
void nodactl_usage(FILE *f);               /* the help text (nodactl.c) */
#endif
