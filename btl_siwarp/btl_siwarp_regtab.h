/*
 * btl_siwarp_regtab.h - the registrations this process handed out, by
 * handle (STag), for the plain-TCP fallback.
 *
 * On iWARP, libsiwarp checks every tagged placement and RDMA Read against
 * its MR table.  On the fallback transport the BTL places and reads memory
 * itself, and it executes every peer's atomics itself on either transport
 * (btl_siwarp_atomic.c), so it keeps its own copy of that table and checks
 * each PUT / GET_REQ / atomic from a peer in the same fixed order: handle
 * valid -> rights -> bounds (addr + len overflow checked).  A peer can never
 * make us touch memory outside what we registered.
 *
 * Plain C with no Open MPI dependency, so test/mpi/test_regtab.c drives it
 * directly.  Functions return 0 or a negative errno.  Thread safe.
 */
#ifndef MCA_BTL_SIWARP_REGTAB_H
#define MCA_BTL_SIWARP_REGTAB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define MCA_BTL_SIWARP_REGTAB_READ  0x1u   /* peer may read (GET) */
#define MCA_BTL_SIWARP_REGTAB_WRITE 0x2u   /* peer may write (PUT) */
#define MCA_BTL_SIWARP_REGTAB_ATOMIC 0x4u  /* peer may update it atomically */

typedef struct mca_btl_siwarp_regtab_entry_t {
    uint32_t stag;          /* 0: empty slot */
    uint32_t access;        /* MCA_BTL_SIWARP_REGTAB_* */
    uint64_t base;
    uint64_t len;
} mca_btl_siwarp_regtab_entry_t;

typedef struct mca_btl_siwarp_regtab_t {
    pthread_mutex_t lock;
    mca_btl_siwarp_regtab_entry_t *slots;   /* open addressing, linear probing */
    size_t cap;                             /* power of two */
    size_t used;
} mca_btl_siwarp_regtab_t;

int  mca_btl_siwarp_regtab_init(mca_btl_siwarp_regtab_t *t);
void mca_btl_siwarp_regtab_fini(mca_btl_siwarp_regtab_t *t);
/* -EINVAL (stag 0 or base + len wraps), -EEXIST, -ENOMEM */
int  mca_btl_siwarp_regtab_add(mca_btl_siwarp_regtab_t *t, uint32_t stag, uint64_t base,
                               uint64_t len, uint32_t access);
/* -ENOENT */
int  mca_btl_siwarp_regtab_remove(mca_btl_siwarp_regtab_t *t, uint32_t stag);
/* May a peer access [addr, addr + len) through stag with `access`?
 * 0, -ENOENT (no such handle), -EACCES (rights), -ERANGE (bounds / wrap). */
int  mca_btl_siwarp_regtab_check(mca_btl_siwarp_regtab_t *t, uint32_t stag, uint64_t addr,
                                 uint64_t len, uint32_t access);
const char *mca_btl_siwarp_regtab_strerror(int err);

#endif
