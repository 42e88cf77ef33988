/*
 * btl_siwarp_atomic.c - BTL atomics (btl_atomic_op, _fop, _cswap), so that
 * osc/rdma can run one-sided MPI over siwarp.
 *
 * An atomic travels as a BTL message (MCA_BTL_SIWARP_MSG_ATOMIC) on the
 * endpoint's connection, whatever carries it -- iWARP Sends, a verbs
 * device, the plain-TCP fallback -- and the target's BTL executes it with
 * the CPU's atomic instructions on the registered word, then answers
 * (MSG_ATOMIC_RESP) with the old value.  Atomic against the target
 * process's own CPU atomics too (MCA_BTL_ATOMIC_SUPPORTS_GLOB): osc/rdma
 * then updates its own window's words with CPU atomics, and a peer's BTL
 * atomic and a local one never tear each other.
 *
 * The target checks every request before it touches memory, in the fixed
 * order of every remote access here: the handle is one this process
 * handed out -> it grants remote atomics -> [addr, addr + size) lies inside
 * it (overflow checked) -> addr is aligned (align_of); a request
 * that fails is refused with a message naming the peer, and the connection
 * fails (as a refused fallback put or get does).
 *
 * Completion is the answer: the operation has been executed at the target
 * (remote completion), fetched or not.  The same round trip completes a
 * put on the TCP fallback: a NOP request behind the PUT frame is answered
 * once the target, which handles a connection's frames in order, placed
 * it.  (On iWARP a zero-length RDMA Read does that: iwarp_post.)
 *
 * Progress: the target executes a request when its BTL progresses (an MPI
 * call).  Toward a siwarp peer that negotiated RFC 7306, the operations
 * RFC 7306 can express go as Atomic Requests instead (btl_siwarp_ratomic.c),
 * which the target's libsiwarp executes by itself -- also in the progress
 * thread (btl_siwarp_progress_thread=1) while the application computes.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"
#include "opal/util/show_help.h"

/* ---- execution at the target ------------------------------------------------ */

/* The alignment an operand of `size` bytes needs.  osc/rdma (Open MPI 4.1)
 * places some of its 8-byte lock words 4-aligned; x86-64 executes a locked
 * instruction on any address atomically, so there 4 is enough (a word that
 * straddles a cache line costs a bus lock, not atomicity).  Elsewhere the
 * natural alignment. */
static uint64_t align_of(uint64_t size)
{
#if defined(__x86_64__)
    return size < 4 ? size : 4;
#else
    return size;
#endif
}

static uint64_t to_bits(double d, int is32)
{
    uint64_t v = 0;
    if (is32) {
        float f = (float) d;
        uint32_t w;
        memcpy(&w, &f, 4);
        v = w;
    } else {
        memcpy(&v, &d, 8);
    }
    return v;
}

static double from_bits(uint64_t v, int is32)
{
    if (is32) {
        uint32_t w = (uint32_t) v;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    double d;
    memcpy(&d, &v, 8);
    return d;
}

/* The new value of a word holding `old` under op with operand `x` (not
 * SWAP or CSWAP).  Integers are signed for MIN and MAX, as MPI's MIN and
 * MAX on the signed types osc/rdma hands to the BTL. */
static uint64_t apply(int op, int flags, uint64_t old, uint64_t x)
{
    int is32 = flags & MCA_BTL_SIWARP_AF_32BIT;

    if (is32) {
        /* a 32-bit operand is its low word only: Open MPI 5's osc/rdma
         * copies the 4 bytes into an uninitialised 64-bit operand, and the
         * high word's garbage made LAND/LOR/LXOR see a non-zero operand */
        old = (uint32_t) old;
        x = (uint32_t) x;
    }
    if (flags & MCA_BTL_SIWARP_AF_FLOAT) {
        double a = from_bits(old, is32), b = from_bits(x, is32);
        switch (op) {
        case MCA_BTL_SIWARP_AOP_ADD: return to_bits(a + b, is32);
        case MCA_BTL_SIWARP_AOP_MIN: return to_bits(b < a ? b : a, is32);
        case MCA_BTL_SIWARP_AOP_MAX: return to_bits(b > a ? b : a, is32);
        default: return old;
        }
    }
    int64_t s = is32 ? (int64_t) (int32_t) old : (int64_t) old;
    int64_t t = is32 ? (int64_t) (int32_t) x : (int64_t) x;
    switch (op) {
    case MCA_BTL_SIWARP_AOP_ADD:  return old + x;
    case MCA_BTL_SIWARP_AOP_AND:  return old & x;
    case MCA_BTL_SIWARP_AOP_OR:   return old | x;
    case MCA_BTL_SIWARP_AOP_XOR:  return old ^ x;
    case MCA_BTL_SIWARP_AOP_LAND: return (old != 0) && (x != 0);
    case MCA_BTL_SIWARP_AOP_LOR:  return (old != 0) || (x != 0);
    case MCA_BTL_SIWARP_AOP_LXOR: return (old != 0) != (x != 0);
    case MCA_BTL_SIWARP_AOP_MIN:  return t < s ? x : old;
    case MCA_BTL_SIWARP_AOP_MAX:  return t > s ? x : old;
    default: return old;
    }
}

/* Execute on the word at p (aligned, 4 or 8 bytes); returns the old value.
 * A compare-and-exchange loop makes every op atomic against any CPU atomic
 * on the same word; integer ADD, AND, OR, XOR and SWAP use the direct
 * instruction. */
static uint64_t execute(void *p, int op, int flags, uint64_t x, uint64_t compare)
{
    int is32 = flags & MCA_BTL_SIWARP_AF_32BIT;
    int direct = !(flags & MCA_BTL_SIWARP_AF_FLOAT);

    if (is32) {
        uint32_t *w = p, old, v = (uint32_t) x;
        switch (direct ? op : -1) {
        case MCA_BTL_SIWARP_AOP_ADD: return __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
        case MCA_BTL_SIWARP_AOP_AND: return __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST);
        case MCA_BTL_SIWARP_AOP_OR:  return __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST);
        case MCA_BTL_SIWARP_AOP_XOR: return __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST);
        default: break;
        }
        if (MCA_BTL_SIWARP_AOP_SWAP == op) {
            return __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST);
        }
        if (MCA_BTL_SIWARP_AOP_CSWAP == op) {
            old = (uint32_t) compare;
            __atomic_compare_exchange_n(w, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return old;
        }
        old = __atomic_load_n(w, __ATOMIC_SEQ_CST);
        while (!__atomic_compare_exchange_n(w, &old, (uint32_t) apply(op, flags, old, x), 0,
                                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        }
        return old;
    }
    uint64_t *w = p, old;
    switch (direct ? op : -1) {
    case MCA_BTL_SIWARP_AOP_ADD: return __atomic_fetch_add(w, x, __ATOMIC_SEQ_CST);
    case MCA_BTL_SIWARP_AOP_AND: return __atomic_fetch_and(w, x, __ATOMIC_SEQ_CST);
    case MCA_BTL_SIWARP_AOP_OR:  return __atomic_fetch_or(w, x, __ATOMIC_SEQ_CST);
    case MCA_BTL_SIWARP_AOP_XOR: return __atomic_fetch_xor(w, x, __ATOMIC_SEQ_CST);
    default: break;
    }
    if (MCA_BTL_SIWARP_AOP_SWAP == op) {
        return __atomic_exchange_n(w, x, __ATOMIC_SEQ_CST);
    }
    if (MCA_BTL_SIWARP_AOP_CSWAP == op) {
        old = compare;
        __atomic_compare_exchange_n(w, &old, x, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return old;
    }
    old = __atomic_load_n(w, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(w, &old, apply(op, flags, old, x), 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
    }
    return old;
}

/* ---- messages ------------------------------------------------------------------ */

/* An eager frag carrying one atomic message, queued or sent. */
static int send_msg(mca_btl_siwarp_endpoint_t *ep, uint8_t type, const void *body, size_t len)
{
    mca_btl_siwarp_frag_t *frag = mca_btl_siwarp_frag_alloc_eager(ep->module);
    int rc;

    if (NULL == frag) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(mca_btl_siwarp_frag_payload(frag), body, len);
    frag->segments[0].seg_len = len;
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->msg_type = type;
    frag->tag = 0;
    rc = mca_btl_siwarp_ep_submit(ep, frag);
    if (rc < 0) {
        mca_btl_siwarp_frag_return(frag);
        return rc;
    }
    return OPAL_SUCCESS;    /* 1: written at once, the frag already returned */
}

/* A request: checked, executed, answered.  0, or -1 (malformed) / -2
 * (refused): the caller fails the endpoint. */
static int handle_request(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_atomic_req_t *rq)
{
    mca_btl_siwarp_atomic_resp_t resp = { .id = rq->id, .value = 0 };
    uint64_t addr = be64toh(rq->addr);
    uint32_t stag = ntohl(rq->stag);
    uint64_t size = (rq->flags & MCA_BTL_SIWARP_AF_32BIT) ? 4 : 8;
    const char *why = NULL;
    char detail[160];
    int rc;

    if (rq->op >= MCA_BTL_SIWARP_AOP_COUNT || 0 != rq->reserved ||
        0 != (rq->flags & ~(MCA_BTL_SIWARP_AF_32BIT | MCA_BTL_SIWARP_AF_FLOAT |
                            MCA_BTL_SIWARP_AF_FETCH))) {
        return -1;
    }
    if (MCA_BTL_SIWARP_AOP_NOP != rq->op) {
        rc = mca_btl_siwarp_regtab_check(&ep->module->regtab, stag, addr, size,
                                         MCA_BTL_SIWARP_REGTAB_ATOMIC);
        if (rc < 0) {
            why = mca_btl_siwarp_regtab_strerror(rc);
        } else if (addr & (align_of(size) - 1)) {
            why = "address not aligned for the operand size";
        }
        if (why) {
            snprintf(detail, sizeof(detail), "atomic of %" PRIu64 " bytes at 0x%" PRIx64
                     " through handle 0x%08x", size, addr, stag);
            BTL_ERROR(("siwarp: refused %s from %s: %s", detail, OPAL_NAME_PRINT(ep->name),
                       why));
            opal_show_help("help-mpi-btl-siwarp.txt", "remote access refused", true,
                           opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
                           mca_btl_siwarp_ep_peer_host(ep), detail, why);
            return -2;
        }
        resp.value = execute((void *) (uintptr_t) addr, rq->op, rq->flags,
                             be64toh(rq->operand), be64toh(rq->compare));
        if (!(rq->flags & MCA_BTL_SIWARP_AF_FETCH)) {
            resp.value = 0;
        }
        resp.value = htobe64(resp.value);
    }
    if (send_msg(ep, MCA_BTL_SIWARP_MSG_ATOMIC_RESP, &resp, sizeof(resp)) < 0) {
        return -1;
    }
    return 0;
}

/* The fetched old value into the origin's buffer, at the operand's width. */
static void store_fetched(void *dst, uint64_t value, int flags)
{
    if (flags & MCA_BTL_SIWARP_AF_32BIT) {
        uint32_t v32 = (uint32_t) value;
        memcpy(dst, &v32, 4);
    } else {
        memcpy(dst, &value, 8);
    }
}

static int handle_answer(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_atomic_resp_t *rs)
{
    mca_btl_siwarp_frag_t *frag, *found = NULL;
    uint64_t value = be64toh(rs->value);

    /* the id names one of our requests, never an address the peer picked */
    OPAL_LIST_FOREACH(frag, &ep->atomics, mca_btl_siwarp_frag_t) {
        if (frag->atomic_id == rs->id) {
            found = frag;
            break;
        }
    }
    if (NULL == found) {
        return -1;
    }
    opal_list_remove_item(&ep->atomics, &found->base.super.super);
    if ((found->atomic_flags & MCA_BTL_SIWARP_AF_FETCH) && found->local_address) {
        store_fetched(found->local_address, value, found->atomic_flags);
    }
    mca_btl_siwarp_frag_complete(ep->module, found, OPAL_SUCCESS);
    return 0;
}

int mca_btl_siwarp_atomic_recv(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_hdr_t *hdr,
                               size_t len)
{
    size_t body = len - sizeof(*hdr);

    if (MCA_BTL_SIWARP_MSG_ATOMIC == hdr->type) {
        mca_btl_siwarp_atomic_req_t rq;
        if (body != sizeof(rq)) {
            return -1;
        }
        memcpy(&rq, hdr + 1, sizeof(rq));
        return handle_request(ep, &rq);
    }
    mca_btl_siwarp_atomic_resp_t rs;
    if (body != sizeof(rs)) {
        return -1;
    }
    memcpy(&rs, hdr + 1, sizeof(rs));
    return handle_answer(ep, &rs);
}

static void fence_done(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, mca_btl_base_registration_handle_t *local_handle,
                       void *context, void *data, int status)
{
    (void) ep;
    (void) local_address;
    (void) local_handle;
    (void) data;
    mca_btl_siwarp_frag_complete((mca_btl_siwarp_module_t *) btl, context, status);
}

int mca_btl_siwarp_atomic_fence(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *put)
{
    return mca_btl_siwarp_atomic_submit(ep, MCA_BTL_SIWARP_AOP_NOP, 0, NULL, 0, NULL, 0, 0, 0,
                                        fence_done, put, NULL);
}

void mca_btl_siwarp_atomic_fail_all(mca_btl_siwarp_endpoint_t *ep, int status)
{
    mca_btl_siwarp_frag_t *frag;

    while (NULL != (frag = (mca_btl_siwarp_frag_t *) opal_list_remove_first(&ep->atomics))) {
        mca_btl_siwarp_frag_complete(ep->module, frag, status);
    }
}

/* ---- the origin ---------------------------------------------------------------- */

static int wire_op(mca_btl_base_atomic_op_t op)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:  return MCA_BTL_SIWARP_AOP_ADD;
    case MCA_BTL_ATOMIC_AND:  return MCA_BTL_SIWARP_AOP_AND;
    case MCA_BTL_ATOMIC_OR:   return MCA_BTL_SIWARP_AOP_OR;
    case MCA_BTL_ATOMIC_XOR:  return MCA_BTL_SIWARP_AOP_XOR;
    case MCA_BTL_ATOMIC_LAND: return MCA_BTL_SIWARP_AOP_LAND;
    case MCA_BTL_ATOMIC_LOR:  return MCA_BTL_SIWARP_AOP_LOR;
    case MCA_BTL_ATOMIC_LXOR: return MCA_BTL_SIWARP_AOP_LXOR;
    case MCA_BTL_ATOMIC_SWAP: return MCA_BTL_SIWARP_AOP_SWAP;
    case MCA_BTL_ATOMIC_MIN:  return MCA_BTL_SIWARP_AOP_MIN;
    case MCA_BTL_ATOMIC_MAX:  return MCA_BTL_SIWARP_AOP_MAX;
    default: return -1;
    }
}

/* Test hook, never set in production: SIWARP_BTL_TEST_HOSTILE_ATOMIC makes
 * this process a hostile peer for atomics - "stag" names a handle we never
 * got, "below" moves the target 2 MiB down, "misalign" by one byte, "wrap"
 * to an address whose end wraps around 2^64.  test/mpi/mpi_hostile_atomic.c
 * checks that the target refuses and its memory stays untouched -- its BTL
 * for a message, its libsiwarp (a Terminate) for an RFC 7306 request,
 * forged after the origin's own checks (btl_siwarp_ratomic.c). */
void mca_btl_siwarp_atomic_test_forge(uint32_t *stag, uint64_t *addr)
{
    static int mode = -1;
    if (mode < 0) {
        const char *e = getenv("SIWARP_BTL_TEST_HOSTILE_ATOMIC");
        const char *names[] = { "stag", "below", "misalign", "wrap" };
        mode = 0;
        for (int i = 0; e && i < 4; i++) {
            mode = 0 == strcmp(e, names[i]) ? i + 1 : mode;
        }
    }
    switch (mode) {
    case 1: *stag ^= 0x5a5a5a00u; break;
    case 2: *addr -= 2u << 20; break;
    case 3: *addr += 1; break;
    case 4: *addr = UINT64_MAX - 3; break;
    default: break;
    }
}

/* Queue one request; its answer completes it (cbfunc). */
int mca_btl_siwarp_atomic_submit(mca_btl_siwarp_endpoint_t *ep, int op, int flags,
                                 void *local_address, uint64_t remote_address,
                                 mca_btl_base_registration_handle_t *local_handle,
                                 uint32_t remote_stag, uint64_t operand, uint64_t compare,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_atomic_req_t rq;
    mca_btl_siwarp_frag_t *rec;
    int rc;

    if (MCA_BTL_SIWARP_EP_FAILED == ep->state) {
        return OPAL_ERR_UNREACH;
    }
    rec = mca_btl_siwarp_frag_alloc_rdma(m);
    if (NULL == rec) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rec->type = MCA_BTL_SIWARP_FRAG_ATOMIC;
    rec->endpoint = ep;
    rec->local_address = local_address;
    rec->local_handle = local_handle;
    rec->atomic_flags = flags;
    rec->atomic_id = ep->atomic_id++;
    rec->cbfunc = cbfunc;
    rec->cbcontext = cbcontext;
    rec->cbdata = cbdata;
    memset(&rq, 0, sizeof(rq));
    rq.op = (uint8_t) op;
    rq.flags = (uint8_t) flags;
    if (MCA_BTL_SIWARP_AOP_NOP != op) {
        mca_btl_siwarp_atomic_test_forge(&remote_stag, &remote_address);
    }
    rq.stag = htonl(remote_stag);
    rq.addr = htobe64(remote_address);
    rq.operand = htobe64(operand);
    rq.compare = htobe64(compare);
    rq.id = rec->atomic_id;         /* opaque to the peer: sent as is */
    opal_list_append(&ep->atomics, &rec->base.super.super);
    rc = send_msg(ep, MCA_BTL_SIWARP_MSG_ATOMIC, &rq, sizeof(rq));
    if (rc < 0) {
        opal_list_remove_item(&ep->atomics, &rec->base.super.super);
        mca_btl_siwarp_frag_return(rec);
        return rc;
    }
    return OPAL_SUCCESS;
}

static int submit_checked(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                          int op, int btl_flags, int fetch, void *local_address,
                          uint64_t remote_address,
                          mca_btl_base_registration_handle_t *local_handle,
                          mca_btl_base_registration_handle_t *remote_handle, uint64_t operand,
                          uint64_t compare, mca_btl_base_rdma_completion_fn_t cbfunc,
                          void *cbcontext, void *cbdata)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    int flags = fetch ? MCA_BTL_SIWARP_AF_FETCH : 0;
    uint64_t size = 8;
    int rc;

    if (btl_flags & MCA_BTL_ATOMIC_FLAG_32BIT) {
        flags |= MCA_BTL_SIWARP_AF_32BIT;
        size = 4;
    }
    if (btl_flags & MCA_BTL_ATOMIC_FLAG_FLOAT) {
        if (MCA_BTL_SIWARP_AOP_ADD != op && MCA_BTL_SIWARP_AOP_MIN != op &&
            MCA_BTL_SIWARP_AOP_MAX != op && MCA_BTL_SIWARP_AOP_SWAP != op &&
            MCA_BTL_SIWARP_AOP_CSWAP != op) {
            return OPAL_ERR_NOT_AVAILABLE;
        }
        flags |= MCA_BTL_SIWARP_AF_FLOAT;
    }
    if (op < 0 || NULL == remote_handle || (remote_address & (align_of(size) - 1)) ||
        (fetch && NULL == local_address)) {
        BTL_VERBOSE(("atomic to %s not available: op %d, handle %p, address 0x%" PRIx64
                     ", %d bytes", ep ? OPAL_NAME_PRINT(ep->name) : "self", op,
                     (void *) remote_handle, remote_address, (int) size));
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (mca_btl_siwarp_ep_is_self(ep)) {
        /* this process itself (mca_btl_siwarp_ep_create_self): execute
         * here, complete at once */
        uint64_t old = execute((void *) (uintptr_t) remote_address, op, flags, operand,
                               compare);
        if (fetch) {
            store_fetched(local_address, old, flags);
        }
        return 1;
    }
    OPAL_THREAD_LOCK(&m->lock);
    /* an RFC 7306 Atomic Request where the peer and the operation allow
     * (btl_siwarp_ratomic.c), else a BTL message */
    rc = mca_btl_siwarp_ratomic_try(ep, op, flags, local_address, remote_address,
                                    remote_handle, operand, compare, cbfunc, cbcontext, cbdata);
    if (OPAL_ERR_NOT_AVAILABLE == rc) {
        rc = mca_btl_siwarp_atomic_submit(ep, op, flags, local_address, remote_address,
                                          local_handle, remote_handle->stag, operand, compare,
                                          cbfunc, cbcontext, cbdata);
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    if (rc < 0) {
        BTL_VERBOSE(("atomic to %s: %d", OPAL_NAME_PRINT(ep->name), rc));
    }
    return rc;
}

int mca_btl_siwarp_atomic_op(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                             uint64_t remote_address,
                             mca_btl_base_registration_handle_t *remote_handle,
                             mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                             int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                             void *cbcontext, void *cbdata)
{
    (void) order;
    return submit_checked(btl, ep, wire_op(op), flags, 0, NULL, remote_address, NULL,
                          remote_handle, operand, 0, cbfunc, cbcontext, cbdata);
}

int mca_btl_siwarp_atomic_fop(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                              void *local_address, uint64_t remote_address,
                              mca_btl_base_registration_handle_t *local_handle,
                              mca_btl_base_registration_handle_t *remote_handle,
                              mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                              int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                              void *cbcontext, void *cbdata)
{
    (void) order;
    return submit_checked(btl, ep, wire_op(op), flags, 1, local_address, remote_address,
                          local_handle, remote_handle, operand, 0, cbfunc, cbcontext, cbdata);
}

int mca_btl_siwarp_atomic_cswap(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                                void *local_address, uint64_t remote_address,
                                mca_btl_base_registration_handle_t *local_handle,
                                mca_btl_base_registration_handle_t *remote_handle,
                                uint64_t compare, uint64_t value, int flags, int order,
                                mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                void *cbdata)
{
    (void) order;
    return submit_checked(btl, ep, MCA_BTL_SIWARP_AOP_CSWAP, flags, 1, local_address,
                          remote_address, local_handle, remote_handle, value, compare, cbfunc,
                          cbcontext, cbdata);
}
