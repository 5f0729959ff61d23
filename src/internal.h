// SPDX-License-Identifier: MIT
/*
 * Internal cross-file interface of nodalloc: one header per layer,
 * included here in layer order after the shared definitions (nd_base.h).
 * A file may call only the layers above its own (see src/README.md).
 * Every function declared is hidden (-fvisibility=hidden) and prefixed _nd_.
 */
#ifndef ND_INTERNAL_H
#define ND_INTERNAL_H

#include "nd_base.h"

#include "nd_os.h"
#include "nd_msg.h"
#include "nd_lock.h"
#include "nd_thread.h"
#include "nd_options.h"
#include "nd_topo.h"
#include "nd_stats.h"
#include "nd_policy.h"
#include "nd_page.h"
#include "nd_slab.h"
#include "nd_large.h"
#include "nd_percpu.h"
#include "nd_table.h"
#include "nd_malloc.h"

#endif /* ND_INTERNAL_H */
