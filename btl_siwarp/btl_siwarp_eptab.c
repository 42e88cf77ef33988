/*
 * btl_siwarp_eptab.c - endpoints by peer process name (see the header).
 */
#include "btl_siwarp_eptab.h"

#include <errno.h>
#include <string.h>

/* the name's 64 bits as they lie in memory: equal names, equal keys
 * (opal_process_name_t is jobid and vpid, 32 bits each, no padding) */
_Static_assert(sizeof(opal_process_name_t) == sizeof(uint64_t), "process name is 64 bits");

static uint64_t name_key(const opal_process_name_t *name)
{
    uint64_t k;

    memcpy(&k, name, sizeof(k));
    return k;
}

int mca_btl_siwarp_eptab_init(opal_hash_table_t *t)
{
    OBJ_CONSTRUCT(t, opal_hash_table_t);
    /* grows by itself; 256 buckets cost 6 KiB and hold a node's ranks */
    return OPAL_SUCCESS == opal_hash_table_init(t, 256) ? 0 : -ENOMEM;
}

void mca_btl_siwarp_eptab_fini(opal_hash_table_t *t)
{
    OBJ_DESTRUCT(t);
}

int mca_btl_siwarp_eptab_add(opal_hash_table_t *t, const opal_process_name_t *name, void *ep)
{
    void *old;
    uint64_t k = name_key(name);

    if (NULL == ep) {
        return -EINVAL;
    }
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(t, k, &old)) {
        return -EEXIST;
    }
    return OPAL_SUCCESS == opal_hash_table_set_value_uint64(t, k, ep) ? 0 : -ENOMEM;
}

void *mca_btl_siwarp_eptab_find(opal_hash_table_t *t, const opal_process_name_t *name)
{
    void *ep;

    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(t, name_key(name), &ep)) {
        return NULL;
    }
    return ep;
}

int mca_btl_siwarp_eptab_remove(opal_hash_table_t *t, const opal_process_name_t *name,
                                const void *ep)
{
    void *cur;
    uint64_t k = name_key(name);

    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(t, k, &cur) || cur != ep) {
        return -ENOENT;
    }
    return OPAL_SUCCESS == opal_hash_table_remove_value_uint64(t, k) ? 0 : -ENOENT;
}
