/*
 * uct_siwarp_amo.c - UCT atomics as RFC 7306 atomic operations.
 *
 * RFC 7306 acts on one 8-octet, 8-aligned word (section 5.2.1); libsiwarp's
 * siwarp_atomic_prep (common/atomic_map.c) maps ADD, SWAP, CSWAP, AND and
 * OR, 64- and 32-bit, onto FetchAdd, CmpSwap and their masked forms (a
 * 32-bit operation acts on its half of the containing word and leaves
 * the other half as it was).  XOR has no such form (it needs the old value): it reads
 * the word (FetchAdd 0) and then CmpSwaps it from what it read to that XOR
 * the operand, again from the value found until the word held still in
 * between -- atomic against every other atomic on the word.
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <string.h>

/* Translate one UCT atomic on a value of width 64 or 32 at remote_addr
 * into wr (opcode, atomic fields) with libsiwarp's RFC 7306 mapping
 * (common/atomic_map.c); XOR's first step is a FetchAdd of 0. */
static ucs_status_t uct_siwarp_amo_map(uct_atomic_op_t opcode, uint64_t value, uint64_t compare,
                                       int is32, uint64_t remote_addr,
                                       struct siwarp_send_wr *wr, unsigned *shift)
{
    enum siwarp_atomic_op op;
    int rc;

    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:   op = SIWARP_AOP_ADD; break;
    case UCT_ATOMIC_OP_SWAP:  op = SIWARP_AOP_SWAP; break;
    case UCT_ATOMIC_OP_CSWAP: op = SIWARP_AOP_CSWAP; break;
    case UCT_ATOMIC_OP_AND:   op = SIWARP_AOP_AND; break;
    case UCT_ATOMIC_OP_OR:    op = SIWARP_AOP_OR; break;
    case UCT_ATOMIC_OP_XOR:   op = SIWARP_AOP_ADD; value = 0; break;
    default:
        return UCS_ERR_UNSUPPORTED;
    }
    rc = siwarp_atomic_prep(wr, op, is32 ? 4 : 8, remote_addr, value, compare, shift);
    if (rc == -EINVAL) {
        ucs_error("siwarp: %d-bit atomic at 0x%" PRIx64 " is not %d-aligned",
                  is32 ? 32 : 64, remote_addr, is32 ? 4 : 8);
        return UCS_ERR_INVALID_PARAM;
    }
    return (rc == 0) ? UCS_OK : UCS_ERR_UNSUPPORTED;
}

/* After a step of an XOR completed (op->slot holds the word's value then):
 * post the CmpSwap that applies it, or, if the last CmpSwap found the word
 * it expected, finish.  1: a step is posted; 0: done (op->slot is the old
 * value, as for any fetching atomic). */
int uct_siwarp_amo_xor_continue(uct_siwarp_op_t *op)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(op->ep->super.super.iface, uct_siwarp_iface_t);
    struct siwarp_sge sge = { .addr = op->slot, .length = 8,
                              .lkey = siwarp_mr_stag(iface->words_mr) };
    struct siwarp_send_wr wr = { .wr_id = (uintptr_t)op, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_ATOMIC_CMP_SWP };
    uint64_t seen = *op->slot;
    ucs_status_t status;

    if ((op->xor.active == 2) && (seen == op->xor.expect)) {
        op->xor.active = 0;
        return 0;                                  /* the CmpSwap held */
    }
    op->xor.active             = 2;
    op->xor.expect             = seen;
    wr.atomic.remote_addr      = op->xor.addr;
    wr.atomic.rkey             = op->xor.rkey;
    wr.atomic.compare_add      = seen;
    wr.atomic.swap             = seen ^ op->xor.operand;
    status = uct_siwarp_ep_post_internal(op->ep, &wr);
    if (status == UCS_INPROGRESS) {
        return 1;
    }
    ucs_error("siwarp: atomic xor: posting its compare-and-swap: %s", ucs_status_string(status));
    uct_siwarp_ep_set_failed(op->ep, UCS_ERR_IO_ERROR);
    op->xor.active = 0;
    return 0;
}

static ucs_status_t uct_siwarp_amo_post(uct_ep_h tl_ep, uct_atomic_op_t opcode, uint64_t value,
                                        uint64_t compare, int is32, void *result,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_siwarp_ep_t *ep = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_siwarp_iface_t);
    struct siwarp_sge sge = { .length = 8, .lkey = siwarp_mr_stag(iface->words_mr) };
    struct siwarp_send_wr wr = { .sg_list = &sge, .num_sge = 1 };
    uct_siwarp_op_t *op;
    ucs_status_t status;
    unsigned shift;
    int rc;

    status = uct_siwarp_amo_map(opcode, value, compare, is32, remote_addr, &wr, &shift);
    if (status != UCS_OK) {
        return status;
    }
    rc = uct_siwarp_ep_check_connected(ep);
    if (rc == 0) {
        return UCS_ERR_NO_RESOURCE;          /* RFC 7306 or not is known at RTS */
    } else if (rc < 0) {
        return ep->fail_status;
    }
    if (!ep->conn->rfc7306) {
        if (!uct_siwarp_md_is_soft(iface->md)) {
            /* this iface offers no atomics, but UCX 1.13 picks a lane for
             * them by the target's capabilities alone (ucp/wireup/select.c,
             * ucp_wireup_add_amo_lanes): a software peer's are not enough */
            ucs_error("siwarp: atomics from %s: only libsiwarp's software stack sends RFC "
                      "7306 atomics; in a job that mixes it with verbs devices set "
                      "UCX_SIWARP_ATOMICS=n on the software ranks",
                      siwarp_ctx_backend(iface->md->ctx));
        } else {
            ucs_error("siwarp: the peer did not negotiate RFC 7306 atomics");
        }
        return UCS_ERR_UNSUPPORTED;
    }
    op = uct_siwarp_op_get(iface, ep, (result != NULL) ? UCT_SIWARP_OP_AMO :
                           UCT_SIWARP_OP_AMO_POST, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->result  = result;
    op->shift   = shift;
    op->xor.active = (opcode == UCT_ATOMIC_OP_XOR);
    if (op->xor.active) {
        op->xor.operand = is32 ? ((value & 0xffffffffull) << shift) : value;
        op->xor.addr    = remote_addr & ~7ull;
        op->xor.rkey    = (uint32_t)rkey;
    }
    op->is32    = is32;
    sge.addr    = op->slot;
    wr.wr_id    = (uintptr_t)op;
    wr.atomic.rkey = (uint32_t)rkey;
    status = uct_siwarp_ep_post(ep, &wr);
    if (status != UCS_INPROGRESS) {
        uct_siwarp_op_put(iface, op);
        return status;
    }
    if (op->xor.active) {
        op->xor.counted = 1;
        ep->xor_inflight++;
    }
    /* a non-fetching atomic is complete for UCT once posted; flush tells
     * when it executed */
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}

void uct_siwarp_amo_done(uct_siwarp_op_t *op)
{
    uint64_t old = *op->slot;

    if (op->result == NULL) {
        return;
    }
    if (op->is32) {
        *(uint32_t*)op->result = (uint32_t)(old >> op->shift);
    } else {
        *(uint64_t*)op->result = old;
    }
}

ucs_status_t uct_siwarp_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare, uint64_t swap,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uint64_t *result, uct_completion_t *comp)
{
    return uct_siwarp_amo_post(tl_ep, UCT_ATOMIC_OP_CSWAP, swap, compare, 0, result,
                               remote_addr, rkey, comp);
}

ucs_status_t uct_siwarp_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare, uint32_t swap,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uint32_t *result, uct_completion_t *comp)
{
    return uct_siwarp_amo_post(tl_ep, UCT_ATOMIC_OP_CSWAP, swap, compare, 1, result,
                               remote_addr, rkey, comp);
}

/* UCT's post and fetch entry points, both widths: which opcodes each has */
static ucs_status_t uct_siwarp_amo_entry(uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                                         int is32, void *result, uint64_t remote_addr,
                                         uct_rkey_t rkey, uct_completion_t *comp)
{
    uint64_t allowed = (result == NULL) ? UCT_SIWARP_AMO_OPS :
                       (UCT_SIWARP_AMO_FOPS & ~UCS_BIT(UCT_ATOMIC_OP_CSWAP));

    if (!(UCS_BIT(opcode) & allowed)) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_siwarp_amo_post(tl_ep, opcode, value, 0, is32, result, remote_addr, rkey, comp);
}

ucs_status_t uct_siwarp_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                                         uint64_t remote_addr, uct_rkey_t rkey)
{
    return uct_siwarp_amo_entry(tl_ep, opcode, value, 0, NULL, remote_addr, rkey, NULL);
}

ucs_status_t uct_siwarp_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode, uint32_t value,
                                         uint64_t remote_addr, uct_rkey_t rkey)
{
    return uct_siwarp_amo_entry(tl_ep, opcode, value, 1, NULL, remote_addr, rkey, NULL);
}

ucs_status_t uct_siwarp_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                          uint64_t value, uint64_t *result,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    return uct_siwarp_amo_entry(tl_ep, opcode, value, 0, result, remote_addr, rkey, comp);
}

ucs_status_t uct_siwarp_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                          uint32_t value, uint32_t *result,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    return uct_siwarp_amo_entry(tl_ep, opcode, value, 1, result, remote_addr, rkey, comp);
}
