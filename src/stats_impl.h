// SPDX-License-Identifier: MIT
/*
 * Private to the statistics layer (stats.c: counters and the export;
 * stats_print.c: the printers). No other file includes this
 * (tests/check_layers.sh).
 */
#ifndef ND_STATS_IMPL_H
#define ND_STATS_IMPL_H

#include "internal.h"

/* The per-node counters (a slot's c[]) and byte counters (its b[]). */
enum { C_HIT, C_MISS, C_FOREIGN, C_IL_HIT, C_LOCAL, C_OTHER, C__N };
enum { B_IN_USE, B_COMMITTED, B_RESERVED, B__N };

/* The JSON output's format version (not nd_stats_t's). */
#define JSON_VERSION 1

/* Prints the live counters (and the size classes) to fd, headed by lb
 * when not NULL; takes the snapshot lock. */
void _nd_stats_print_live(int fd, bool json, const _nd_stats_label_t *lb);

#endif
