/*
 * btl_siwarp_module.c - the BTL module: procs, descriptors, eager sends.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

/* One place mapping negative errno values to OPAL error codes. */
int mca_btl_siwarp_errno_to_opal(int err)
{
    switch (err) {
    case 0:
        return OPAL_SUCCESS;
    case -EAGAIN:
    case -ENOMEM:
    case -ENOSPC:
        return OPAL_ERR_OUT_OF_RESOURCE;
    case -EINVAL:
        return OPAL_ERR_BAD_PARAM;
    case -ECONNREFUSED:
    case -EHOSTUNREACH:
    case -ENETUNREACH:
    case -ETIMEDOUT:
    case -ECONNRESET:
    case -EPIPE:
        return OPAL_ERR_UNREACH;
    case -ENOSYS:
    case -EOPNOTSUPP:
        return OPAL_ERR_NOT_SUPPORTED;
    default:
        return OPAL_ERROR;
    }
}

/* ---- procs ------------------------------------------------------------------- */

static int siwarp_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                            mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    opal_proc_t *me = opal_proc_local_get();

    OPAL_THREAD_LOCK(&m->lock);
    for (size_t i = 0; i < nprocs; i++) {
        mca_btl_siwarp_endpoint_t *ep;
        int usable = 0;

        ep = mca_btl_siwarp_ep_lookup(m, &procs[i]->proc_name, 0);
        if (procs[i] == me) {
            if (NULL == ep && NULL == (ep = mca_btl_siwarp_ep_create_self(m, me))) {
                continue;
            }
            peers[i] = ep;
            if (reachable) {
                opal_bitmap_set_bit(reachable, (int) i);
            }
            continue;
        }
        if (NULL == ep) {
            ep = mca_btl_siwarp_ep_create(m, procs[i]);
        }
        if (NULL == ep) {
            continue;
        }
        ep->proc = procs[i];
        /* reachable if one of its addresses is usable from here */
        for (int a = 0; a < ep->num_addrs && !usable; a++) {
            if (ep->addrs[a].loopback && !ep->local) {
                continue;
            }
            for (int l = 0; l < m->num_listen; l++) {
                usable |= m->modex[l].family == ep->addrs[a].family;
            }
        }
        if (usable && MCA_BTL_SIWARP_FALLBACK_ERROR == mca_btl_siwarp_component.fallback) {
            int iwarp = 0;
            for (int a = 0; a < ep->num_addrs; a++) {
                iwarp |= ep->addrs[a].flags & MCA_BTL_SIWARP_ADDR_F_IWARP;
            }
            if (!iwarp || !mca_btl_siwarp_component.mpa) {
                /* known now: let ob1 pick another BTL for this peer */
                mca_btl_siwarp_ep_refuse_fallback(ep, mca_btl_siwarp_component.mpa ?
                                                  "MPA is disabled at the peer" :
                                                  "MPA is disabled here");
                usable = 0;
            }
        }
        if (!usable) {
            BTL_VERBOSE(("%s has no address reachable from here",
                         OPAL_NAME_PRINT(procs[i]->proc_name)));
            continue;
        }
        peers[i] = ep;
        if (reachable) {
            opal_bitmap_set_bit(reachable, (int) i);
        }
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    return OPAL_SUCCESS;
}

static int siwarp_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                            mca_btl_base_endpoint_t **peers)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;

    OPAL_THREAD_LOCK(&m->lock);
    for (size_t i = 0; i < nprocs; i++) {
        if (peers[i]) {
            mca_btl_siwarp_ep_release(peers[i]);
        }
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    return OPAL_SUCCESS;
}

static int siwarp_register_error(mca_btl_base_module_t *btl,
                                 mca_btl_base_module_error_cb_fn_t cbfunc)
{
    ((mca_btl_siwarp_module_t *) btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

/* ---- descriptors ------------------------------------------------------------- */

SWP_HOT
static mca_btl_base_descriptor_t *siwarp_alloc(mca_btl_base_module_t *btl,
                                               mca_btl_base_endpoint_t *ep, uint8_t order,
                                               size_t size, uint32_t flags)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_frag_t *frag;

    if (OPAL_UNLIKELY(size > btl->btl_max_send_size)) {
        return NULL;
    }
    frag = mca_btl_siwarp_frag_alloc_eager(m);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->segments[0].seg_len = size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    frag->endpoint = ep;
    return &frag->base;
}

static int siwarp_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_siwarp_frag_return((mca_btl_siwarp_frag_t *) des);
    return OPAL_SUCCESS;
}

/* Contiguous data of MCA_BTL_SIWARP_INPLACE_MIN bytes or more, to a peer
 * connected over iWARP on the software backend, is not copied: the Send
 * gathers the headers from the eager buffer and the data from the user's
 * memory (SIWARP_SEND_UNREGISTERED; the frag completes, and ob1 may reuse
 * the buffer, once the kernel has taken the bytes).  Everything else is
 * packed into the registered eager buffer. */
#define MCA_BTL_SIWARP_INPLACE_MIN 1024

SWP_HOT
static mca_btl_base_descriptor_t *prepare_src_inplace(mca_btl_base_module_t *btl,
                                                      mca_btl_base_endpoint_t *ep,
                                                      opal_convertor_t *convertor,
                                                      uint8_t order, size_t reserve,
                                                      size_t *size, uint32_t flags)
{
    mca_btl_siwarp_frag_t *frag;
    struct iovec iov = { .iov_base = NULL };
    uint32_t iov_count = 1;
    size_t max_data = *size;

    if (reserve + max_data > btl->btl_max_send_size) {
        max_data = btl->btl_max_send_size - reserve;
    }
    frag = (mca_btl_siwarp_frag_t *) siwarp_alloc(btl, ep, order, reserve, flags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    iov.iov_len = max_data;
    if (OPAL_UNLIKELY(opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0)) {
        mca_btl_siwarp_frag_return(frag);
        return NULL;
    }
    frag->segments[1].seg_addr.pval = iov.iov_base;
    frag->segments[1].seg_len = max_data;
    frag->base.des_segment_count = 2;
    *size = max_data;
    return &frag->base;
}

SWP_HOT
static mca_btl_base_descriptor_t *siwarp_prepare_src(mca_btl_base_module_t *btl,
                                                     mca_btl_base_endpoint_t *ep,
                                                     opal_convertor_t *convertor,
                                                     uint8_t order, size_t reserve,
                                                     size_t *size, uint32_t flags)
{
    mca_btl_siwarp_frag_t *frag;
    struct iovec iov;
    uint32_t iov_count = 1;
    size_t max_data = *size;
    int rc;

    if (reserve + max_data > btl->btl_max_send_size) {
        max_data = btl->btl_max_send_size - reserve;
    }
    if (((mca_btl_siwarp_module_t *) btl)->inplace && max_data >= MCA_BTL_SIWARP_INPLACE_MIN &&
        MCA_BTL_SIWARP_EP_CONNECTED == ep->state &&
        MCA_BTL_SIWARP_TR_IWARP == ep->transport &&
        !opal_convertor_need_buffers(convertor)) {
        return prepare_src_inplace(btl, ep, convertor, order, reserve, size, flags);
    }
    frag = (mca_btl_siwarp_frag_t *) siwarp_alloc(btl, ep, order, reserve + max_data, flags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    iov.iov_base = mca_btl_siwarp_frag_payload(frag) + reserve;
    iov.iov_len = max_data;
    rc = opal_convertor_pack(convertor, &iov, &iov_count, &max_data);
    if (OPAL_UNLIKELY(rc < 0)) {
        mca_btl_siwarp_frag_return(frag);
        return NULL;
    }
    frag->segments[0].seg_len = reserve + max_data;
    *size = max_data;
    return &frag->base;
}

/* ---- sends --------------------------------------------------------------------- */

SWP_HOT
static int siwarp_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                       mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_frag_t *frag = (mca_btl_siwarp_frag_t *) des;
    int rc;

    frag->type = MCA_BTL_SIWARP_FRAG_SEND;
    frag->tag = tag;
    OPAL_THREAD_LOCK(&m->lock);
    rc = mca_btl_siwarp_ep_submit(ep, frag);
    OPAL_THREAD_UNLOCK(&m->lock);
    return rc;
}

/* Inline send: succeeds only if it can go out now (connected, no queue,
 * a credit and an SQ slot, and nothing would hold it back for the next
 * progress call); otherwise hand back a descriptor.  ob1 completes the MPI
 * request when sendi succeeds, and the process may then block outside MPI
 * until the peer has the message (MPI_Comm_spawn's roots wait in
 * PMIx_Connect for ranks that wait in a bcast for them): a held message
 * would never leave.  Through the descriptor the request completes when
 * the message is written, and coalescing still batches a window of them. */
SWP_HOT
static int siwarp_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                        opal_convertor_t *convertor, void *header, size_t header_size,
                        size_t payload_size, uint8_t order, uint32_t flags,
                        mca_btl_base_tag_t tag, mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_frag_t *frag;
    size_t total = header_size + payload_size;
    int rc;

    if (OPAL_UNLIKELY(total > btl->btl_eager_limit)) {
        if (descriptor) {
            *descriptor = NULL;
        }
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    OPAL_THREAD_LOCK(&m->lock);
    if (MCA_BTL_SIWARP_EP_CONNECTED != ep->state || !opal_list_is_empty(&ep->pending) ||
        (MCA_BTL_SIWARP_TR_IWARP == ep->transport &&
         (ep->send_credits <= 0 || ep->sq_free <= 0)) ||
        !mca_btl_siwarp_ep_send_goes_now(ep)) {
        OPAL_THREAD_UNLOCK(&m->lock);
        goto busy;
    }
    frag = mca_btl_siwarp_frag_alloc_eager(m);
    if (OPAL_UNLIKELY(NULL == frag)) {
        OPAL_THREAD_UNLOCK(&m->lock);
        goto busy;
    }
    memcpy(mca_btl_siwarp_frag_payload(frag), header, header_size);
    if (payload_size) {
        struct iovec iov = {
            .iov_base = mca_btl_siwarp_frag_payload(frag) + header_size,
            .iov_len = payload_size,
        };
        uint32_t iov_count = 1;
        size_t max_data = payload_size;
        opal_convertor_pack(convertor, &iov, &iov_count, &max_data);
    }
    frag->segments[0].seg_len = total;
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->base.des_cbfunc = NULL;
    frag->type = MCA_BTL_SIWARP_FRAG_SEND;
    frag->tag = tag;
    rc = mca_btl_siwarp_ep_try_send_now(ep, frag);
    OPAL_THREAD_UNLOCK(&m->lock);
    if (rc >= 0) {
        return OPAL_SUCCESS;    /* 1: complete already, the frag returned */
    }
    /* the payload was packed already: the convertor has advanced, so the
     * frag must go out as it is - queue it */
    OPAL_THREAD_LOCK(&m->lock);
    rc = mca_btl_siwarp_ep_submit(ep, frag);
    OPAL_THREAD_UNLOCK(&m->lock);
    return rc > 0 ? OPAL_SUCCESS : rc;

busy:
    if (descriptor) {
        *descriptor = siwarp_alloc(btl, ep, order, total, flags);
    }
    return OPAL_ERR_RESOURCE_BUSY;
}

static int siwarp_register(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                           mca_btl_base_module_recv_cb_fn_t cbfunc, void *cbdata)
{
    (void) btl;
    mca_btl_base_active_message_trigger[tag].cbfunc = cbfunc;
    mca_btl_base_active_message_trigger[tag].cbdata = cbdata;
    return OPAL_SUCCESS;
}

static void siwarp_dump(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, int verbose)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_endpoint_t *e;
    (void) verbose;

    OPAL_LIST_FOREACH(e, &m->endpoints, mca_btl_siwarp_endpoint_t) {
        if (ep && ep != e) {
            continue;
        }
        opal_output(0, "siwarp: %s state %d transport %d credits %d ctrl %d owed %d sq_free %d "
                    "outstanding %d pending %zu",
                    OPAL_NAME_PRINT(e->name), e->state, e->transport, e->send_credits,
                    e->send_ctrl, e->owed_credits, e->sq_free, e->outstanding,
                    opal_list_get_size(&e->pending));
    }
}

/* ---- finalize ------------------------------------------------------------------- */

static int siwarp_finalize(mca_btl_base_module_t *btl)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_endpoint_t *ep;

    m->finalizing = 1;
    if (m->thread_running) {
        (void) siwarp_ctx_stop_progress_thread(m->ctx);
        m->thread_running = 0;
    }
    OPAL_THREAD_LOCK(&m->lock);
    while (NULL != (ep = (mca_btl_siwarp_endpoint_t *) opal_list_get_first(&m->endpoints)) &&
           &ep->super != opal_list_get_end(&m->endpoints)) {
        mca_btl_siwarp_ep_release(ep);
    }
    mca_btl_siwarp_graveyard_clear(m);
    mca_btl_siwarp_srq_fini(m);          /* after the last QP */
    for (int i = 0; i < m->num_listen; i++) {
        if (m->listen[i].listener) {
            siwarp_listener_destroy(m->listen[i].listener);
        }
        if (m->listen[i].tcp_fd >= 0) {
            close(m->listen[i].tcp_fd);
        }
    }
    m->num_listen = 0;
    mca_btl_siwarp_tcp_accept_fini(m);
    OBJ_DESTRUCT(&m->eager_frags);
    OBJ_DESTRUCT(&m->rdma_frags);
    if (m->rcache) {
        mca_rcache_base_module_destroy(m->rcache);
        m->rcache = NULL;
    }
    if (m->regtab_ready) {
        mca_btl_siwarp_regtab_fini(&m->regtab);
        m->regtab_ready = 0;
    }
    if (m->cq) {
        siwarp_destroy_cq(m->cq);
    }
    free(m->rx_align);
    m->rx_align = NULL;
    if (m->pd) {
        siwarp_dealloc_pd(m->pd);
    }
    if (m->ctx) {
        siwarp_ctx_destroy(m->ctx);
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    OBJ_DESTRUCT(&m->endpoints);
    mca_btl_siwarp_eptab_fini(&m->procs);
    OBJ_DESTRUCT(&m->active);
    OBJ_DESTRUCT(&m->graveyard);
    OBJ_DESTRUCT(&m->lock);
    mca_btl_siwarp_component.module = NULL;
    free(m);
    return OPAL_SUCCESS;
}

/* libsiwarp's progress thread serves incoming RDMA Reads, placements and
 * RFC 7306 atomics while the application computes, and stays asleep while
 * MPI progresses the context itself; BTL-level completions stay with
 * btl_progress. */
int mca_btl_siwarp_module_start_thread(mca_btl_siwarp_module_t *m)
{
    int rc = siwarp_ctx_start_progress_thread(m->ctx, 0);

    if (-EOPNOTSUPP == rc) {
        BTL_VERBOSE(("no progress thread: an RNIC answers its peers itself"));
        return OPAL_SUCCESS;
    }
    if (0 != rc) {
        BTL_VERBOSE(("siwarp_ctx_start_progress_thread: %s", strerror(-rc)));
        return OPAL_ERROR;
    }
    m->thread_running = 1;
#ifdef SIWARP_HAVE_HWLOC
    mca_btl_siwarp_topo_place_thread(m);
#endif
    return OPAL_SUCCESS;
}

/* ---- the module template ---------------------------------------------------------- */

/* The eager limit and largest Send: 64 KiB of data plus room for ob1's
 * header (the limit counts it), so that a 64 KiB message, a common halo
 * and MPI_Bcast segment size, goes eagerly in one leg instead of ob1's
 * RGET (its header, the Read Request, then the data).  osu_latency 64 KiB
 * on loopback, 3 alternating rounds (PERFORMANCE.md, *Latency*): 24.6-27.5
 * us eagerly against 37.3-43.3 by RGET and 32.8-38.9 for btl tcp; osu_bw
 * 64 KiB 4.4-5.6 against 3.6-4.6 GB/s.  A receive buffer grows by the
 * same 128 octets. */
#define MCA_BTL_SIWARP_EAGER_DEFAULT (64 * 1024 + 128)

const mca_btl_base_module_t mca_btl_siwarp_module_template = {
    .btl_component = &mca_btl_siwarp_component.super,
    .btl_add_procs = siwarp_add_procs,
    .btl_del_procs = siwarp_del_procs,
    .btl_register = siwarp_register,
    .btl_finalize = siwarp_finalize,
    .btl_alloc = siwarp_alloc,
    .btl_free = siwarp_free,
    .btl_prepare_src = siwarp_prepare_src,
    .btl_send = siwarp_send,
    .btl_sendi = siwarp_sendi,
    .btl_put = mca_btl_siwarp_put,
    .btl_get = mca_btl_siwarp_get,
    .btl_dump = siwarp_dump,
    .btl_register_mem = mca_btl_siwarp_register_mem,
    .btl_deregister_mem = mca_btl_siwarp_deregister_mem,
    .btl_register_error = siwarp_register_error,
    .btl_flush = mca_btl_siwarp_flush,
    .btl_atomic_op = mca_btl_siwarp_atomic_op,
    .btl_atomic_fop = mca_btl_siwarp_atomic_fop,
    .btl_atomic_cswap = mca_btl_siwarp_atomic_cswap,
    .btl_atomic_flags = MCA_BTL_SIWARP_ATOMIC_FLAGS,
    .btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 200,   /* above btl_tcp */
    .btl_latency = 50,
    .btl_bandwidth = 10000,
    .btl_eager_limit = MCA_BTL_SIWARP_EAGER_DEFAULT,
    .btl_rndv_eager_limit = 64 * 1024,
    .btl_max_send_size = MCA_BTL_SIWARP_EAGER_DEFAULT,
    .btl_rdma_pipeline_send_length = 1024 * 1024,
    .btl_rdma_pipeline_frag_size = 4 * 1024 * 1024,
    .btl_min_rdma_pipeline_size = 256 * 1024,
    .btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET |
                 MCA_BTL_FLAGS_RDMA_COMPLETION | MCA_BTL_FLAGS_ATOMIC_OPS |
                 MCA_BTL_FLAGS_ATOMIC_FOPS | MCA_BTL_SIWARP_FLAGS_REMOTE_COMPLETION,
    .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
    .btl_get_limit = 1024 * 1024 * 1024,
    .btl_get_alignment = 0,
    .btl_put_limit = 1024 * 1024 * 1024,
    .btl_put_alignment = 0,
    .btl_get_local_registration_threshold = 0,
    .btl_put_local_registration_threshold = 0,
};
