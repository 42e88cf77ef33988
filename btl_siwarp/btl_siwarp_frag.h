/*
 * btl_siwarp_frag.h - descriptors.
 *
 * An eager frag owns a registered buffer of module->frag_size bytes: the
 * 8-byte mca_btl_siwarp_hdr_t followed by up to btl_max_send_size payload
 * bytes.  The same kind of frag is posted as a receive buffer.  An RDMA frag
 * has no buffer; it remembers a put/get until its work request completes.
 */
#ifndef MCA_BTL_SIWARP_FRAG_H
#define MCA_BTL_SIWARP_FRAG_H

#include "btl_siwarp.h"

BEGIN_C_DECLS

typedef enum {
    MCA_BTL_SIWARP_FRAG_SEND,     /* AM from alloc / prepare_src / sendi */
    MCA_BTL_SIWARP_FRAG_CREDIT,   /* explicit credit message */
    MCA_BTL_SIWARP_FRAG_RECV,     /* posted receive buffer */
    MCA_BTL_SIWARP_FRAG_PUT,
    MCA_BTL_SIWARP_FRAG_GET,
    MCA_BTL_SIWARP_FRAG_GET_RESP, /* fallback only: data answering a GET_REQ */
    MCA_BTL_SIWARP_FRAG_HELLO,    /* fallback only: connection handshake */
    MCA_BTL_SIWARP_FRAG_ATOMIC,   /* an atomic awaiting its answer (no buffer) */
    MCA_BTL_SIWARP_FRAG_RATOMIC,  /* an RFC 7306 Atomic Request: an eager frag whose
                                     buffer holds the request and the fetched word */
} mca_btl_siwarp_frag_type_t;

typedef struct mca_btl_siwarp_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[2];
    mca_btl_siwarp_frag_type_t type;
    int on_srq;                     /* a receive buffer of the module's SRQ */
    struct mca_btl_base_endpoint_t *endpoint;
    opal_free_list_t *list;

    /* eager */
    mca_btl_siwarp_hdr_t *hdr;      /* start of the registered buffer */
    uint32_t lkey;
    mca_btl_base_tag_t tag;
    uint8_t msg_type;               /* MCA_BTL_SIWARP_MSG_AM, or an atomic's */

    /* rdma */
    void *local_address;
    uint64_t remote_address;
    uint32_t local_stag, remote_stag;
    size_t rdma_size;
    uint64_t atomic_id;             /* ATOMIC: the request's id */
    int atomic_flags;               /* ATOMIC: MCA_BTL_SIWARP_AF_* */
    mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;

    /* fallback framing: header plus up to two body pieces */
    mca_btl_siwarp_tcp_hdr_t tcp_hdr;
    uint64_t tcp_body[2];           /* GET_REQ body, HELLO body */
    struct iovec iov[3];
    int iov_cnt;
    size_t tx_total, tx_done;
} mca_btl_siwarp_frag_t;

OBJ_CLASS_DECLARATION(mca_btl_siwarp_frag_t);

int  mca_btl_siwarp_frag_init(opal_free_list_item_t *item, void *ctx);
mca_btl_siwarp_frag_t *mca_btl_siwarp_frag_alloc_eager(mca_btl_siwarp_module_t *m);
mca_btl_siwarp_frag_t *mca_btl_siwarp_frag_alloc_rdma(mca_btl_siwarp_module_t *m);
void mca_btl_siwarp_frag_return(mca_btl_siwarp_frag_t *frag);
/* Run the completion of a send / rdma frag and free it if the BTL owns it. */
void mca_btl_siwarp_frag_complete(mca_btl_siwarp_module_t *m, mca_btl_siwarp_frag_t *frag,
                                  int status);

static inline uint8_t *mca_btl_siwarp_frag_payload(mca_btl_siwarp_frag_t *frag)
{
    return (uint8_t *) (frag->hdr + 1);
}

END_C_DECLS
#endif
