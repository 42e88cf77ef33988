/*
 * ddp.c - DDP (RFC 5041) and RDMAP (RFC 5040) header construction and the
 * opcode table that drives the receive path.
 */
#include "swp.h"

/* RFC 5040 4.3 / 5.1 and RFC 7306: which DDP model and queue every RDMAP
 * opcode uses.  A stream that did not negotiate RFC 7306 refuses its
 * opcodes (swp_ddp_check_ctrl). */
const struct swp_opinfo swp_opinfo[SWP_OP_MAX] = {
    [SWP_OP_WRITE]       = { "RDMA Write",         SWP_HDR_TAGGED,    true,  0, true },
    [SWP_OP_READ_REQ]    = { "RDMA Read Request",  SWP_HDR_READ_REQ,  false, SWP_QN_READ_REQ, false },
    [SWP_OP_READ_RESP]   = { "RDMA Read Response", SWP_HDR_TAGGED,    true,  0, true },
    [SWP_OP_SEND]        = { "Send",               SWP_HDR_UNTAGGED,  false, SWP_QN_SEND, true },
    [SWP_OP_SEND_INV]    = { "Send with Invalidate", SWP_HDR_UNTAGGED, false, SWP_QN_SEND, true },
    [SWP_OP_SEND_SE]     = { "Send with SE",       SWP_HDR_UNTAGGED,  false, SWP_QN_SEND, true },
    [SWP_OP_SEND_SE_INV] = { "Send with SE and Invalidate", SWP_HDR_UNTAGGED, false, SWP_QN_SEND, true },
    [SWP_OP_TERMINATE]   = { "Terminate",          SWP_HDR_TERMINATE, false, SWP_QN_TERMINATE, true },
    [SWP_OP_IMM]         = { "Immediate Data",     SWP_HDR_IMM,       false, SWP_QN_SEND, false },
    [SWP_OP_IMM_SE]      = { "Immediate Data with SE", SWP_HDR_IMM,   false, SWP_QN_SEND, false },
    [SWP_OP_ATOMIC_REQ]  = { "Atomic Request",     SWP_HDR_ATOMIC_REQ, false, SWP_QN_READ_REQ, false },
    [SWP_OP_ATOMIC_RESP] = { "Atomic Response",    SWP_HDR_ATOMIC_RESP, false, SWP_QN_ATOMIC_RESP, false },
};

uint32_t swp_ddp_check_ctrl(const struct swp_ctrl *c, bool rfc7306)
{
    bool tagged = swp_ctrl_tagged(c);
    unsigned op = swp_ctrl_opcode(c);

    /* RFC 5041 5.1: DV must be 1; the error is a tagged or untagged buffer
     * error depending on the T flag (RFC 5041 7.2). */
    if (swp_ctrl_dv(c) != SWP_DDP_VERSION)
        return tagged ? SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_DDP_VER)
                      : SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_DDP_VER);
    /* RFC 5040 4.2: RV must be 1 */
    if (swp_ctrl_rv(c) != SWP_RDMAP_VERSION)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_INV_RDMAP_VER);
    /* RFC 5040 4.3: reserved opcodes, and an opcode whose DDP model does
     * not match the T flag, are unexpected opcodes. */
    if (op >= SWP_OP_MAX || swp_opinfo[op].tagged != tagged)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE);
    /* RFC 7306's opcodes are reserved ones to a stream that did not
     * negotiate it (mpa.h): unexpected, whatever their length */
    if (op >= SWP_OP_IMM && !rfc7306)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE);
    return 0;
}

uint32_t swp_ddp_build_tagged(uint8_t *h, unsigned op, bool last, uint32_t stag, uint64_t to)
{
    struct swp_ddp_tagged_hdr *t = (struct swp_ddp_tagged_hdr *)h;

    t->ctrl.ddp = swp_ctrl_ddp(1, last);
    t->ctrl.rdmap = swp_ctrl_rdmap(op);
    swp_put32(t->stag, stag);
    swp_put64(t->to, to);
    return SWP_HDR_TAGGED;
}

SWP_HOT
uint32_t swp_ddp_build_untagged(uint8_t *h, unsigned op, bool last, uint32_t qn,
                                uint32_t msn, uint32_t mo, uint32_t inv_stag)
{
    struct swp_ddp_untagged_hdr *u = (struct swp_ddp_untagged_hdr *)h;

    u->ctrl.ddp = swp_ctrl_ddp(0, last);
    u->ctrl.rdmap = swp_ctrl_rdmap(op);
    /* RFC 5040 4.4: the reserved ULP field is zero except for the
     * Send-with-Invalidate opcodes, where it names the STag to invalidate */
    swp_put32(u->inv_stag, inv_stag);
    swp_put32(u->qn, qn);
    swp_put32(u->msn, msn);
    swp_put32(u->mo, mo);
    return SWP_HDR_UNTAGGED;
}
