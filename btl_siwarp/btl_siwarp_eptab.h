/*
 * btl_siwarp_eptab.h - this module's endpoints by peer process name.
 *
 * ob1 adds every peer (lazily, on first use) and every accepted connection
 * names its peer; each asks for the endpoint of a name.  A walk of the
 * endpoint list made connecting N peers O(N^2): 299 us per lookup at 65,536
 * endpoints (contrib/probes/ep-lookup.c).  The table is an
 * opal_hash_table_t with the 64-bit process name as its key, as btl tcp's
 * procs table is.  One entry per name; the endpoint list stays for the
 * walks that want every endpoint (finalize, flush of all, dump).
 *
 * Not thread safe: callers hold the module lock.  Functions return 0 or a
 * negative errno.
 */
#ifndef MCA_BTL_SIWARP_EPTAB_H
#define MCA_BTL_SIWARP_EPTAB_H

#include "opal_config.h"

#include "opal/class/opal_hash_table.h"
#include "opal/util/proc.h"

/* the table is constructed even when this fails: fini it in any case */
int mca_btl_siwarp_eptab_init(opal_hash_table_t *t);
void mca_btl_siwarp_eptab_fini(opal_hash_table_t *t);
/* -EEXIST if the name has an endpoint already: one endpoint per peer */
int mca_btl_siwarp_eptab_add(opal_hash_table_t *t, const opal_process_name_t *name, void *ep);
/* NULL if none */
void *mca_btl_siwarp_eptab_find(opal_hash_table_t *t, const opal_process_name_t *name);
/* only if the name maps to ep (-ENOENT otherwise): an endpoint released
 * late never removes the one that replaced it */
int mca_btl_siwarp_eptab_remove(opal_hash_table_t *t, const opal_process_name_t *name,
                                const void *ep);

#endif
