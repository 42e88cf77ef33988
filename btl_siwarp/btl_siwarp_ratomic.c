/*
 * btl_siwarp_ratomic.c - BTL atomics as RFC 7306 Atomic Requests.
 *
 * Toward a peer that is siwarp too and negotiated RFC 7306 at connection
 * set-up (conn_param.rfc7306; btl_siwarp_rfc7306=1, the default), an
 * atomic osc/rdma asks for goes on the wire as an Atomic Request that the
 * target's libsiwarp executes itself, with the CPU's atomic instructions,
 * inside its receive path: no BTL message, no callback in the target's
 * MPI, so with btl_siwarp_progress_thread=1 the target's progress thread
 * answers it while the application computes (a message-carried atomic
 * waits for the target's next MPI call).  The target's libsiwarp checks
 * STag, PD, the remote-atomic right, bounds and 8-byte alignment in
 * RFC 7306's order and answers a violation with a Terminate.
 *
 * RFC 7306 has FetchAdd, CmpSwap and their masked forms on an 8-byte
 * aligned 64-bit word; libsiwarp's siwarp_atomic_prep (common/atomic_map.c)
 * maps ADD, CSWAP, SWAP, AND and OR, 64- and 32-bit, onto them.
 * Everything else (XOR, MIN, MAX, the logical ops, floating point, a
 * 64-bit operand that is only 4-aligned -- osc/rdma places some lock
 * words so) stays a BTL message (btl_siwarp_atomic.c).  Both kinds execute
 * as CPU atomics on the same word, so mixing them keeps every operation
 * atomic (MCA_BTL_ATOMIC_SUPPORTS_GLOB).
 *
 * An operation is sent this way only when the origin can tell that the
 * target will accept it: the registration handle says the region carries
 * the remote-atomic right and gives its bounds, which must hold the whole
 * 8-byte word.  A request the target refused would end the connection.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <string.h>

#include "opal/util/output.h"

/* What the frag's registered buffer holds: the request, and the 8 bytes
 * the Atomic Response's original value is stored into (the WR's SGE). */
typedef struct {
    uint64_t fetched;            /* first: the SGE, 8-aligned in the buffer */
    uint64_t remote_addr;        /* the 8-aligned word at the target */
    uint64_t compare_add, swap, compare_add_mask, swap_mask;
    uint32_t rkey;
    int32_t opcode;              /* enum siwarp_wr_opcode */
    uint32_t shift;              /* the operand's bit offset in the word */
    uint32_t width;              /* 4 or 8: bytes stored to the caller */
} mca_btl_siwarp_ratomic_req_t;

/* Fill r for op on the word through libsiwarp's mapping (atomic_map.c);
 * 0, or -1 if RFC 7306 cannot express it. */
static int plan(mca_btl_siwarp_ratomic_req_t *r, int op, int flags, uint64_t addr,
                uint64_t operand, uint64_t compare)
{
    struct siwarp_send_wr wr;
    enum siwarp_atomic_op aop;
    unsigned shift;

    memset(r, 0, sizeof(*r));
    if (flags & MCA_BTL_SIWARP_AF_FLOAT) {
        return -1;
    }
    switch (op) {
    case MCA_BTL_SIWARP_AOP_ADD:   aop = SIWARP_AOP_ADD; break;
    case MCA_BTL_SIWARP_AOP_CSWAP: aop = SIWARP_AOP_CSWAP; break;
    case MCA_BTL_SIWARP_AOP_SWAP:  aop = SIWARP_AOP_SWAP; break;
    case MCA_BTL_SIWARP_AOP_AND:   aop = SIWARP_AOP_AND; break;
    case MCA_BTL_SIWARP_AOP_OR:    aop = SIWARP_AOP_OR; break;
    default:
        return -1;
    }
    r->width = (flags & MCA_BTL_SIWARP_AF_32BIT) ? 4 : 8;
    if (0 != siwarp_atomic_prep(&wr, aop, r->width, addr, operand, compare, &shift)) {
        return -1;                      /* misaligned: a message instead */
    }
    r->shift = shift;
    r->opcode = wr.opcode;
    r->remote_addr = wr.atomic.remote_addr;
    r->compare_add = wr.atomic.compare_add;
    r->swap = wr.atomic.swap;
    r->compare_add_mask = wr.atomic.compare_add_mask;
    r->swap_mask = wr.atomic.swap_mask;
    return 0;
}

int mca_btl_siwarp_ratomic_try(mca_btl_siwarp_endpoint_t *ep, int op, int flags,
                               void *local_address, uint64_t remote_address,
                               const mca_btl_base_registration_handle_t *remote_handle,
                               uint64_t operand, uint64_t compare,
                               mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                               void *cbdata)
{
    mca_btl_siwarp_ratomic_req_t r;
    mca_btl_siwarp_frag_t *frag;
    int rc;

    if (!ep->rfc7306 || MCA_BTL_SIWARP_TR_IWARP != ep->transport ||
        MCA_BTL_SIWARP_EP_CONNECTED != ep->state ||
        !(remote_handle->flags & MCA_BTL_SIWARP_HANDLE_RFC7306) ||
        0 != plan(&r, op, flags, remote_address, operand, compare)) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    /* the whole word inside the region (overflow-safe), or the target
     * would refuse it with a Terminate and the connection would end */
    if (r.remote_addr < remote_handle->base ||
        r.remote_addr - remote_handle->base > remote_handle->len ||
        remote_handle->len - (r.remote_addr - remote_handle->base) < 8) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    r.rkey = remote_handle->stag;
    /* a test's hostile origin forges here, past the checks above; an
     * address it misaligns goes as a message, which our libsiwarp would
     * refuse to post as an Atomic Request */
    mca_btl_siwarp_atomic_test_forge(&r.rkey, &r.remote_addr);
    if (r.remote_addr & 7) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    frag = mca_btl_siwarp_frag_alloc_eager(ep->module);
    if (NULL == frag) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    _Static_assert(sizeof(r) <= 128, "an eager buffer holds the request");
    memcpy(frag->hdr, &r, sizeof(r));
    frag->type = MCA_BTL_SIWARP_FRAG_RATOMIC;
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->local_address = (flags & MCA_BTL_SIWARP_AF_FETCH) ? local_address : NULL;
    frag->local_handle = NULL;
    frag->cbfunc = cbfunc;
    frag->cbcontext = cbcontext;
    frag->cbdata = cbdata;
    rc = mca_btl_siwarp_ep_submit(ep, frag);
    if (rc < 0) {
        mca_btl_siwarp_frag_return(frag);
        return rc;
    }
    return OPAL_SUCCESS;
}

void mca_btl_siwarp_ratomic_wr(mca_btl_siwarp_frag_t *frag, struct siwarp_send_wr *wr,
                               struct siwarp_sge *sge)
{
    const mca_btl_siwarp_ratomic_req_t *r = (const mca_btl_siwarp_ratomic_req_t *) frag->hdr;

    sge->addr = (void *) &((mca_btl_siwarp_ratomic_req_t *) frag->hdr)->fetched;
    sge->length = sizeof(uint64_t);
    sge->lkey = frag->lkey;
    wr->opcode = (enum siwarp_wr_opcode) r->opcode;
    wr->atomic.remote_addr = r->remote_addr;
    wr->atomic.rkey = r->rkey;
    wr->atomic.compare_add = r->compare_add;
    wr->atomic.swap = r->swap;
    wr->atomic.compare_add_mask = r->compare_add_mask;
    wr->atomic.swap_mask = r->swap_mask;
}

void mca_btl_siwarp_ratomic_store(mca_btl_siwarp_frag_t *frag)
{
    const mca_btl_siwarp_ratomic_req_t *r = (const mca_btl_siwarp_ratomic_req_t *) frag->hdr;

    if (NULL == frag->local_address) {
        return;
    }
    if (4 == r->width) {
        uint32_t v = (uint32_t) (r->fetched >> r->shift);
        memcpy(frag->local_address, &v, sizeof(v));
    } else {
        memcpy(frag->local_address, &r->fetched, sizeof(r->fetched));
    }
}
