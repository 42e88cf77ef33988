/*
 * btl_siwarp_compat.h - the one place where the BTL interface versions the
 * component builds against differ: Open MPI 4.1 (BTL 3.1, Debian 12) and
 * Open MPI 5.0 (BTL 3.3, Debian 13).  btl.h defines BTL_VERSION (310, 330);
 * everything else in btl_siwarp/ is written once, against the names below.
 *
 * What changed from 3.1 to 3.3, as far as this BTL sees it:
 *   - the active-message callback takes one const receive descriptor
 *     (endpoint, segments, tag, cbdata) instead of (tag, descriptor,
 *     cbdata): mca_btl_siwarp_deliver_am() below builds whichever the
 *     headers declare;
 *   - opal/threads/ moved into the threads framework (opal/mca/threads/);
 *   - the CUDA flags became ACCELERATOR flags and btl_ft_event went away
 *     (this BTL uses neither).
 * Open MPI 5's osc rdma can also emulate put/get/atomics over active
 * messages ("alternate BTLs"); nothing here depends on it: this BTL offers
 * real RDMA and its own atomics (btl_siwarp_atomic.c) on both versions.
 */
#ifndef MCA_BTL_SIWARP_COMPAT_H
#define MCA_BTL_SIWARP_COMPAT_H

#include "opal_config.h"

#include <string.h>

#include "opal/mca/btl/btl.h"

#if !defined(BTL_VERSION) || (BTL_VERSION != 310 && BTL_VERSION != 330)
#error "btl_siwarp builds against BTL interface 3.1 (Open MPI 4.1) or 3.3 (Open MPI 5.0)"
#endif

#if BTL_VERSION >= 330
#include "opal/mca/threads/mutex.h"
#include "opal/mca/pmix/pmix-internal.h"
#else
#include "opal/threads/mutex.h"
#include "opal/mca/pmix/pmix.h"
#endif

/* 5.0 calls PMIx directly: its key, scope and type names replace the
 * OPAL_ aliases 4.1 defined for them (the modex macros kept their names) */
#if BTL_VERSION >= 330
#ifndef OPAL_PMIX_GLOBAL
#define OPAL_PMIX_GLOBAL PMIX_GLOBAL
#endif
#ifndef OPAL_PMIX_JOB_SIZE
#define OPAL_PMIX_JOB_SIZE PMIX_JOB_SIZE
#endif
#ifndef OPAL_UINT32
#define OPAL_UINT32 PMIX_UINT32
#endif
#ifndef OPAL_STRING
#define OPAL_STRING PMIX_STRING
#endif
#ifndef OPAL_PMIX_LOCAL_PEERS
#define OPAL_PMIX_LOCAL_PEERS PMIX_LOCAL_PEERS
#endif
#ifndef OPAL_PMIX_CPUSET
#define OPAL_PMIX_CPUSET PMIX_CPUSET
#endif
#endif

/* 3.3 asks a BTL whether its put/get/atomics complete remotely (the data
 * placed at the target when the callback runs); osc/rdma of 5.0 uses a
 * BTL directly only if so, and otherwise emulates RDMA and atomics with
 * active messages over it.  This BTL's do: a put completes with the
 * zero-length Read (or fallback NOP) behind it, atomics and gets with
 * their answer (btl_siwarp_datapath.c, btl_siwarp_atomic.c). */
#if BTL_VERSION >= 330
#define MCA_BTL_SIWARP_FLAGS_REMOTE_COMPLETION MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION
#else
#define MCA_BTL_SIWARP_FLAGS_REMOTE_COMPLETION 0
#endif

/* 5.0 dropped OPAL_MODULE_DECLSPEC; OPAL_DECLSPEC is the same attribute */
#ifndef OPAL_MODULE_DECLSPEC
#define OPAL_MODULE_DECLSPEC OPAL_DECLSPEC
#endif

/* Hand one received active message (tag, one segment) to the callback the
 * upper layer registered for its tag.  The segment is valid only during
 * the call, as both interface versions specify. */
static inline void mca_btl_siwarp_deliver_am(mca_btl_base_module_t *btl,
                                             struct mca_btl_base_endpoint_t *ep,
                                             mca_btl_base_tag_t tag,
                                             mca_btl_base_segment_t *seg)
{
    const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;

    if (NULL == reg->cbfunc) {
        return;
    }
#if BTL_VERSION >= 330
    {
        const mca_btl_base_receive_descriptor_t desc = {
            .endpoint = ep,
            .des_segments = seg,
            .des_segment_count = 1,
            .tag = tag,
            .cbdata = reg->cbdata,
        };
        reg->cbfunc(btl, &desc);
    }
#else
    {
        mca_btl_base_descriptor_t des;

        (void) ep;
        memset(&des, 0, sizeof(des));
        des.des_segments = seg;
        des.des_segment_count = 1;
        reg->cbfunc(btl, tag, &des, reg->cbdata);
    }
#endif
}

#endif /* MCA_BTL_SIWARP_COMPAT_H */
