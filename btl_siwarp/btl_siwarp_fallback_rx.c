/*
 * btl_siwarp_fallback_rx.c - the receive side of the plain framed TCP
 * fallback (frames: btl_siwarp_fallback.c).
 *
 * One recv a message: each endpoint stages what its socket holds, up to
 * one full DATA frame (header + btl_max_send_size), and takes every whole
 * frame from there: a small message costs one recv, where reading the
 * header, then the body, then learning that nothing more came cost three
 * (a syscall is about a microsecond on this VM).  Bodies that have a
 * target of their own (PUT, GET_RESP: any length) take what is staged and
 * read the rest straight into the target.  A DATA frame left partial at
 * the end of a read is moved to the front of the buffer, so the buffer
 * always has room for the rest of it.
 *
 * Every frame is checked before anything is written: op and length, and
 * for PUT / GET_REQ the handle, rights and bounds against the
 * registrations we handed out (module->regtab).
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "opal/util/output.h"
#include "opal/util/show_help.h"

#define TCP_HDR_LEN sizeof(mca_btl_siwarp_tcp_hdr_t)

void mca_btl_siwarp_tcp_rx_reset(mca_btl_siwarp_endpoint_t *ep)
{
    ep->rx_hdr_got = 0;
    ep->rx_left = 0;
    ep->rx_dst = NULL;
    ep->rx_get = NULL;
    ep->rx_in_frame = 0;
    ep->rx_direct = 0;
    ep->rx_head = ep->rx_tail = 0;
}

/* Read the rest of a body straight into rx_dst: 1 when it is all in, 0 for
 * later, -1 on end of stream or error (errno set; 0 for end of stream). */
int mca_btl_siwarp_tcp_rx_body(mca_btl_siwarp_endpoint_t *ep)
{
    ssize_t n;

    while (ep->rx_left > 0) {
        n = recv(ep->fd, ep->rx_dst, ep->rx_left, 0);
        if (n > 0) {
            ep->rx_bytes += (uint64_t) n;
            ep->rx_dst += n;
            ep->rx_left -= (size_t) n;
            continue;
        }
        if (0 == n) {
            errno = 0;
            return -1;
        }
        return (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno) ? 0 : -1;
    }
    return 1;
}

/* May the peer put into / get from [addr, addr + len) through stag?  On no,
 * tell the user which peer asked for what, and fail the endpoint. */
static int access_ok(mca_btl_siwarp_endpoint_t *ep, const char *what, uint32_t stag,
                     uint64_t addr, uint64_t len, uint32_t access)
{
    int rc = mca_btl_siwarp_regtab_check(&ep->module->regtab, stag, addr, len, access);
    char detail[160];

    if (0 == rc) {
        return 1;
    }
    snprintf(detail, sizeof(detail), "%s of %" PRIu64 " bytes at 0x%" PRIx64
             " through handle 0x%08x", what, len, addr, stag);
    /* printed by this process directly: ORTE's show_help relay can lose the
     * message below when the job aborts right after it */
    BTL_ERROR(("siwarp: refused %s from %s: %s", detail, OPAL_NAME_PRINT(ep->name),
               mca_btl_siwarp_regtab_strerror(rc)));
    opal_show_help("help-mpi-btl-siwarp.txt", "remote access refused", true,
                   opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
                   mca_btl_siwarp_ep_peer_host(ep), detail,
                   mca_btl_siwarp_regtab_strerror(rc));
    return 0;
}

/* A frame header is in ep->rx_hdr: check it and say where its body goes.
 * 0 ok, -1 malformed, -2 refused access. */
static int rx_setup(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = ep->module;
    size_t len = ntohl(ep->rx_hdr.len);
    uint64_t arg = be64toh(ep->rx_hdr.arg);
    mca_btl_siwarp_frag_t *frag;

    ep->rx_len = len;
    ep->rx_direct = 0;
    switch (ep->rx_hdr.op) {
    case MCA_BTL_SIWARP_TCP_DATA:
        /* staged whole: the buffer holds a header and frag_size bytes */
        if (len < sizeof(mca_btl_siwarp_hdr_t) || len > m->frag_size) {
            return -1;
        }
        break;
    case MCA_BTL_SIWARP_TCP_GET_REQ:
        if (len != sizeof(ep->rx_small)) {
            return -1;
        }
        break;
    case MCA_BTL_SIWARP_TCP_PUT:
        /* the target must lie inside a registration we handed out */
        if (!access_ok(ep, "put", ntohl(ep->rx_hdr.stag), arg, len,
                       MCA_BTL_SIWARP_REGTAB_WRITE)) {
            return -2;
        }
        ep->rx_dst = (uint8_t *) (uintptr_t) arg;
        ep->rx_direct = 1;
        break;
    case MCA_BTL_SIWARP_TCP_GET_RESP:
        ep->rx_get = NULL;
        OPAL_LIST_FOREACH(frag, &ep->gets_inflight, mca_btl_siwarp_frag_t) {
            if ((uint64_t) (uintptr_t) frag == arg) {
                ep->rx_get = frag;
                break;
            }
        }
        if (NULL == ep->rx_get || len != ep->rx_get->rdma_size) {
            return -1;
        }
        ep->rx_dst = ep->rx_get->local_address;
        ep->rx_direct = 1;
        break;
    default:
        return -1;
    }
    ep->rx_left = len;
    return 0;
}

/* A DATA body to ob1.  Frames follow each other at any offset of the
 * staging buffer; ob1 reads its headers in place, so a body that does not
 * start 8-aligned is copied to an aligned buffer first. */
static int rx_data(mca_btl_siwarp_endpoint_t *ep, uint8_t *body)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_hdr_t *hdr;
    mca_btl_base_segment_t seg;

    if ((uintptr_t) body & 7) {
        if (NULL == ep->rx_buf && NULL == (ep->rx_buf = malloc(m->frag_size))) {
            return -1;
        }
        memcpy(ep->rx_buf, body, ep->rx_len);
        body = ep->rx_buf;
    }
    hdr = (mca_btl_siwarp_hdr_t *) body;
    if (MCA_BTL_SIWARP_MSG_ATOMIC == hdr->type || MCA_BTL_SIWARP_MSG_ATOMIC_RESP == hdr->type) {
        return mca_btl_siwarp_atomic_recv(ep, hdr, ep->rx_len);
    }
    if (MCA_BTL_SIWARP_MSG_AM != hdr->type) {
        return -1;
    }
    seg.seg_addr.pval = hdr + 1;
    seg.seg_len = ep->rx_len - sizeof(*hdr);
    mca_btl_siwarp_deliver_am(&m->super, ep, hdr->tag, &seg);
    return 0;
}

/* A whole frame is in: act on it.  body: a staged body (DATA, GET_REQ);
 * NULL for one read to its target.  0 ok, -1 malformed, -2 refused. */
static int rx_dispatch(mca_btl_siwarp_endpoint_t *ep, uint8_t *body)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_frag_t *frag;

    switch (ep->rx_hdr.op) {
    case MCA_BTL_SIWARP_TCP_DATA:
        return rx_data(ep, body);
    case MCA_BTL_SIWARP_TCP_PUT:
        return 0;
    case MCA_BTL_SIWARP_TCP_GET_REQ: {
        uint64_t addr, len;
        memcpy(ep->rx_small, body, sizeof(ep->rx_small));
        addr = be64toh(ep->rx_small[0]);
        len = be64toh(ep->rx_small[1]);
        if (len > UINT32_MAX) {
            return -1;
        }
        /* the source must lie inside a registration we handed out */
        if (!access_ok(ep, "get", ntohl(ep->rx_hdr.stag), addr, len,
                       MCA_BTL_SIWARP_REGTAB_READ)) {
            return -2;
        }
        frag = mca_btl_siwarp_frag_alloc_rdma(m);
        if (NULL == frag) {
            return -1;
        }
        frag->type = MCA_BTL_SIWARP_FRAG_GET_RESP;
        frag->remote_address = be64toh(ep->rx_hdr.arg);
        frag->local_address = (void *) (uintptr_t) addr;
        frag->rdma_size = len;
        mca_btl_siwarp_tcp_submit(ep, frag);
        return 0;
    }
    case MCA_BTL_SIWARP_TCP_GET_RESP:
        frag = ep->rx_get;
        opal_list_remove_item(&ep->gets_inflight, &frag->base.super.super);
        ep->rx_get = NULL;
        mca_btl_siwarp_frag_complete(m, frag, OPAL_SUCCESS);
        return 0;
    }
    return -1;
}

static void tcp_lost(mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    if (opal_list_is_empty(&ep->tx_queue) && opal_list_is_empty(&ep->gets_inflight) &&
        opal_list_is_empty(&ep->pending)) {
        /* orderly hang-up with nothing outstanding (e.g. the peer finalized) */
        mca_btl_siwarp_tcp_close(ep);
        ep->transport = MCA_BTL_SIWARP_TR_NONE;
        mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CLOSED);
        return;
    }
    mca_btl_siwarp_ep_fail(ep, why, 2);
}

/* A malformed or refused frame ends the endpoint: nothing of it was
 * written anywhere. */
static void rx_bad_frame(mca_btl_siwarp_endpoint_t *ep, int rc)
{
    if (-2 == rc) {
        /* reported with the peer's name; the PML must still learn */
        mca_btl_siwarp_ep_fail(ep, "remote access outside our registrations",
                               MCA_BTL_SIWARP_FAIL_REPORTED);
        return;
    }
    BTL_ERROR(("siwarp: malformed TCP frame from %s (op %u, %u bytes)",
               OPAL_NAME_PRINT(ep->name), ep->rx_hdr.op, ntohl(ep->rx_hdr.len)));
    mca_btl_siwarp_ep_fail(ep, "malformed frame on the TCP fallback connection", 2);
}

static size_t stage_size(const mca_btl_siwarp_module_t *m)
{
    return (TCP_HDR_LEN + m->frag_size + 63) & ~(size_t) 63;
}

/* Take what the staging buffer holds: 1 when a frame was handled, 0 when
 * more bytes are needed, -1 when the endpoint failed. */
static int rx_staged(mca_btl_siwarp_endpoint_t *ep)
{
    size_t avail = ep->rx_tail - ep->rx_head;
    uint8_t *p = ep->rx_stage + ep->rx_head;
    int rc;

    if (!ep->rx_in_frame) {
        if (avail < TCP_HDR_LEN) {
            return 0;
        }
        memcpy(&ep->rx_hdr, p, TCP_HDR_LEN);
        ep->rx_head += TCP_HDR_LEN;
        p += TCP_HDR_LEN;
        avail -= TCP_HDR_LEN;
        rc = rx_setup(ep);
        if (rc < 0) {
            rx_bad_frame(ep, rc);
            return -1;
        }
        ep->rx_in_frame = 1;
    }
    if (ep->rx_direct) {
        size_t take = avail < ep->rx_left ? avail : ep->rx_left;
        memcpy(ep->rx_dst, p, take);
        ep->rx_head += take;
        ep->rx_dst += take;
        ep->rx_left -= take;
        if (ep->rx_left > 0) {
            return 0;       /* the rest goes straight to the target */
        }
        p = NULL;
    } else if (avail < ep->rx_len) {
        return 0;
    } else {
        ep->rx_head += ep->rx_len;
    }
    ep->rx_in_frame = 0;
    rc = rx_dispatch(ep, p);
    if (rc < 0) {
        rx_bad_frame(ep, rc);
        return -1;
    }
    return 1;
}

int mca_btl_siwarp_tcp_rx_progress(mca_btl_siwarp_endpoint_t *ep)
{
    size_t size = stage_size(ep->module);
    bool drained = false;
    int rc, count = 0;
    ssize_t n;

    if (NULL == ep->rx_stage && NULL == (ep->rx_stage = malloc(size))) {
        mca_btl_siwarp_ep_fail(ep, "no memory for the TCP receive buffer", 2);
        return 0;
    }
    while (MCA_BTL_SIWARP_EP_CONNECTED == ep->state && ep->fd >= 0) {
        if (ep->rx_in_frame && ep->rx_direct && ep->rx_head == ep->rx_tail) {
            rc = mca_btl_siwarp_tcp_rx_body(ep);
            if (rc < 0) {
                tcp_lost(ep, errno ? strerror(errno) : "peer closed the connection");
                return count;
            }
            if (0 == rc) {
                return count;
            }
            ep->rx_in_frame = 0;
            rc = rx_dispatch(ep, NULL);
            if (rc < 0) {
                rx_bad_frame(ep, rc);
                return count;
            }
            count++;
            continue;
        }
        rc = rx_staged(ep);
        if (rc < 0) {
            return count;
        }
        if (rc > 0) {
            count++;
            continue;
        }
        if (ep->rx_in_frame && ep->rx_direct) {
            continue;       /* staging drained into the target: read the rest there */
        }
        /* a read that did not fill the buffer emptied the socket: the next
         * progress call reads again, this one need not learn EAGAIN */
        if (drained) {
            return count;
        }
        if (ep->rx_head == ep->rx_tail) {
            ep->rx_head = ep->rx_tail = 0;
        } else if (ep->rx_head > 0) {
            /* part of one frame: to the front, where the whole one fits */
            memmove(ep->rx_stage, ep->rx_stage + ep->rx_head, ep->rx_tail - ep->rx_head);
            ep->rx_tail -= ep->rx_head;
            ep->rx_head = 0;
        }
        n = recv(ep->fd, ep->rx_stage + ep->rx_tail, size - ep->rx_tail, 0);
        if (n > 0) {
            ep->rx_bytes += (uint64_t) n;
            drained = (size_t) n < size - ep->rx_tail;
            ep->rx_tail += (size_t) n;
            continue;
        }
        if (0 == n || (EAGAIN != errno && EWOULDBLOCK != errno && EINTR != errno)) {
            tcp_lost(ep, 0 == n ? "peer closed the connection" : strerror(errno));
        }
        return count;
    }
    return count;
}
