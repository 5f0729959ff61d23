/* Large tables: STUB until the tables issue lands (helper replaces). */
#include <errno.h>
#include "internal.h"
int nd_table_alloc(const nd_table_desc_t *d, nd_table_t *out) { (void)d; (void)out; errno = ENOSYS; return -1; }
void nd_table_free(nd_table_t *t) { (void)t; }
