/*
 * btl_siwarp_frag.c - descriptor lists.
 */
#include <string.h>

#include "btl_siwarp.h"
#include "btl_siwarp_frag.h"

static void frag_construct(mca_btl_siwarp_frag_t *frag)
{
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 1;
    frag->base.order = MCA_BTL_NO_ORDER;
    frag->hdr = NULL;
    frag->lkey = 0;
    frag->on_srq = 0;
    frag->endpoint = NULL;
    frag->list = NULL;
}

OBJ_CLASS_INSTANCE(mca_btl_siwarp_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

/* What headers use at the start of an eager buffer: ours and the largest of
 * ob1's (its rendezvous-by-Read header with our registration handle) are
 * well under it. */
#define MCA_BTL_SIWARP_HDR_CLEAN_BYTES 256

/* opal_free_list item_init: the payload buffer was registered through our
 * rcache, so its registration carries the STag used as lkey. */
int mca_btl_siwarp_frag_init(opal_free_list_item_t *item, void *ctx)
{
    mca_btl_siwarp_frag_t *frag = (mca_btl_siwarp_frag_t *) item;
    mca_btl_siwarp_reg_t *reg = (mca_btl_siwarp_reg_t *) item->registration;

    frag->list = (opal_free_list_t *) ctx;
    frag->hdr = (mca_btl_siwarp_hdr_t *) item->ptr;
    /* Zeroed once, when the list grows: padding bytes that headers (ours,
     * ob1's: all within the first MCA_BTL_SIWARP_HDR_CLEAN_BYTES) never
     * write would otherwise carry old heap contents onto the wire
     * (valgrind: sendmsg points to uninitialised bytes).  Payload is always
     * written before it is sent.  Only the header prefix: the buffers are
     * not page-aligned, and zeroing a whole page touched two, 128 page
     * faults of a rank's MPI_Init; a page faulted here is one that a first
     * small receive no longer faults in while connections are being made
     * (touching nothing here made time to first message 15% longer). */
    if (item->ptr && frag->list->fl_payload_buffer_size) {
        size_t n = frag->list->fl_payload_buffer_size;
        memset(item->ptr, 0, n < MCA_BTL_SIWARP_HDR_CLEAN_BYTES ? n : MCA_BTL_SIWARP_HDR_CLEAN_BYTES);
    }
    frag->lkey = reg ? reg->handle.stag : 0;
    return OPAL_SUCCESS;
}

SWP_HOT
mca_btl_siwarp_frag_t *mca_btl_siwarp_frag_alloc_eager(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_frag_t *frag =
        (mca_btl_siwarp_frag_t *) opal_free_list_get(&m->eager_frags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->type = MCA_BTL_SIWARP_FRAG_SEND;
    frag->msg_type = MCA_BTL_SIWARP_MSG_AM;
    frag->on_srq = 0;
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 1;
    frag->base.des_flags = 0;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->base.des_context = NULL;
    frag->base.order = MCA_BTL_NO_ORDER;
    frag->segments[0].seg_addr.pval = mca_btl_siwarp_frag_payload(frag);
    frag->segments[0].seg_len = 0;
    frag->endpoint = NULL;
    frag->tx_done = frag->tx_total = 0;
    return frag;
}

mca_btl_siwarp_frag_t *mca_btl_siwarp_frag_alloc_rdma(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_frag_t *frag =
        (mca_btl_siwarp_frag_t *) opal_free_list_get(&m->rdma_frags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->list = &m->rdma_frags;
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->base.des_cbfunc = NULL;
    frag->endpoint = NULL;
    frag->cbfunc = NULL;
    frag->tx_done = frag->tx_total = 0;
    return frag;
}

void mca_btl_siwarp_frag_return(mca_btl_siwarp_frag_t *frag)
{
    opal_free_list_return(frag->list, &frag->base.super);
}

SWP_HOT
void mca_btl_siwarp_frag_complete(mca_btl_siwarp_module_t *m, mca_btl_siwarp_frag_t *frag,
                                  int status)
{
    switch (frag->type) {
    case MCA_BTL_SIWARP_FRAG_SEND: {
        int owned = frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
        /* completing here, btl_send returned 0 (queued): the callback
         * runs (a Send complete at once took send_done_now instead) */
        if (frag->base.des_cbfunc) {
            frag->base.des_cbfunc(&m->super, frag->endpoint, &frag->base, status);
        }
        if (owned) {
            mca_btl_siwarp_frag_return(frag);
        }
        break;
    }
    case MCA_BTL_SIWARP_FRAG_RATOMIC:
    case MCA_BTL_SIWARP_FRAG_PUT:
    case MCA_BTL_SIWARP_FRAG_GET:
    case MCA_BTL_SIWARP_FRAG_ATOMIC:
        if (MCA_BTL_SIWARP_FRAG_RATOMIC == frag->type && OPAL_SUCCESS == status) {
            mca_btl_siwarp_ratomic_store(frag);     /* the fetched value first */
        }
        if (frag->cbfunc) {
            frag->cbfunc(&m->super, frag->endpoint, frag->local_address,
                         frag->local_handle, frag->cbcontext, frag->cbdata, status);
        }
        mca_btl_siwarp_frag_return(frag);
        break;
    case MCA_BTL_SIWARP_FRAG_CREDIT:
    case MCA_BTL_SIWARP_FRAG_GET_RESP:
    case MCA_BTL_SIWARP_FRAG_HELLO:
        mca_btl_siwarp_frag_return(frag);
        break;
    case MCA_BTL_SIWARP_FRAG_RECV:
        break;   /* receive buffers are owned by their endpoint */
    }
}
