/*
 * raw_peer.c - see raw_peer.h.
 */
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "raw_peer.h"



void peer_setup(struct peer *p, bool crc, bool markers)
{
    peer_setup_p2p(p, crc, markers, 0);
}

void peer_setup_p2p(struct peer *p, bool crc, bool markers, int rtr)
{
    peer_setup_nego(p, crc, markers, rtr, false);
}

/* srq_max: receives from an SRQ of that many WQEs (0: the QP's own) */
static void setup(struct peer *p, bool crc, bool markers, int rtr, bool siwarp, uint32_t srq_max,
                  uint32_t max_ulpdu)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int sv[2];

    memset(p, 0, sizeof(*p));
    p->crc = crc;
    p->markers = markers;
    ASSERT_OK(siwarp_ctx_create(&p->ctx));
    ASSERT_OK(siwarp_alloc_pd(p->ctx, &p->pd));
    ASSERT_OK(siwarp_alloc_pd(p->ctx, &p->pd2));
    ASSERT_OK(siwarp_create_cq(p->ctx, 256, &p->cq));
    a.send_cq = a.recv_cq = p->cq;
    a.max_send_wr = a.max_recv_wr = 64;
    a.max_sge = 2;
    if (srq_max) {
        struct siwarp_srq_init_attr sa = { .max_wr = srq_max, .max_sge = 2 };
        ASSERT_OK(siwarp_create_srq(p->pd, &sa, &p->srq));
        a.srq = p->srq;
    }
    ASSERT_OK(siwarp_create_qp(p->pd, &a, &p->qp));
    ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    p->raw = sv[1];
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = crc;
    n.markers_tx = n.markers_rx = markers;
    n.ird = n.ord = 4;
    n.mulpdu = 16384;
    n.max_rx_ulpdu = max_ulpdu;
    n.p2p = rtr != 0;
    n.rtr = rtr;
    if (rtr)
        n.ird = n.ord = 1;          /* as rping: the RTR takes the only Read slot */
    n.initiator = true;          /* the raw peer plays the responder */
    n.peer_is_siwarp = siwarp;
    ASSERT_OK(swp_qp_attach_fd(p->qp, sv[0], &n));
    p->map = mmap(NULL, REGION + 2 * CANARY, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT(p->map != MAP_FAILED);
    memset(p->map, 0xa5, REGION + 2 * CANARY);
    p->region = p->map + CANARY;
    memset(p->region, 0, REGION);
    ASSERT_OK(siwarp_reg_mr(p->pd, p->region, REGION, ACC_ALL, &p->mr));
}

/* siwarp: the raw peer passes for siwarp (as its Reply's reserved bit would) */
void peer_setup_nego(struct peer *p, bool crc, bool markers, int rtr, bool siwarp)
{
    setup(p, crc, markers, rtr, siwarp, 0, 16384);
}

void peer_setup_rx(struct peer *p, bool crc, uint32_t srq_max, uint32_t max_ulpdu)
{
    setup(p, crc, false, 0, false, srq_max, max_ulpdu);
}

void canaries_intact(struct peer *p)
{
    for (size_t i = 0; i < CANARY; i++) {
        ASSERT_EQ(p->map[i], 0xa5);
        ASSERT_EQ(p->map[CANARY + REGION + i], 0xa5);
    }
}

void peer_keep_mr(struct peer *p, struct siwarp_mr *mr)
{
    for (size_t i = 0; i < sizeof(p->kept) / sizeof(p->kept[0]); i++) {
        if (!p->kept[i]) {
            p->kept[i] = mr;
            return;
        }
    }
    FAIL("more than %zu MRs kept by one raw peer", sizeof(p->kept) / sizeof(p->kept[0]));
}

void peer_teardown(struct peer *p)
{
    for (size_t i = 0; i < sizeof(p->kept) / sizeof(p->kept[0]); i++)
        if (p->kept[i])
            ASSERT_OK(siwarp_dereg_mr(p->kept[i]));
    ASSERT_OK(siwarp_destroy_qp(p->qp));
    if (p->srq)
        ASSERT_OK(siwarp_destroy_srq(p->srq));
    ASSERT_OK(siwarp_destroy_cq(p->cq));
    ASSERT_OK(siwarp_dereg_mr(p->mr));
    ASSERT_OK(siwarp_dealloc_pd(p->pd));
    ASSERT_OK(siwarp_dealloc_pd(p->pd2));
    siwarp_ctx_destroy(p->ctx);
    munmap(p->map, REGION + 2 * CANARY);
    close(p->raw);
}

/* Build one FPDU with the given ULPDU (header + payload) at f; its length. */
uint32_t build_fpdu(struct peer *p, uint8_t *f, const uint8_t *ulpdu, uint32_t len,
                           bool bad_crc)
{
    uint32_t pad = swp_mpa_pad(len), n, crc;

    swp_put16(f, (uint16_t)len);
    memcpy(f + 2, ulpdu, len);
    memset(f + 2 + len, 0, pad);
    n = 2 + len + pad;
    crc = p->crc ? swp_crc32c(0, f, n) : 0;
    if (bad_crc)
        crc ^= 0x10;
    swp_mpa_put_crc(f + n, crc);
    return n + 4;
}

/* Write one FPDU with the given ULPDU (header + payload). */
void raw_fpdu(struct peer *p, const uint8_t *ulpdu, uint32_t len, bool bad_crc)
{
    uint8_t f[70000];
    uint32_t n = build_fpdu(p, f, ulpdu, len, bad_crc);

    ASSERT_EQ(write(p->raw, f, n), (ssize_t)n);
}

uint32_t tagged(uint8_t *h, unsigned op, bool last, uint32_t stag, uint64_t to)
{
    return swp_ddp_build_tagged(h, op, last, stag, to);
}

uint32_t untagged(uint8_t *h, unsigned op, bool last, uint32_t qn, uint32_t msn, uint32_t mo)
{
    return swp_ddp_build_untagged(h, op, last, qn, msn, mo, 0);
}

/* Progress until the QP is in ERROR, then read what the QP sent back and
 * return the Terminate code found in it (0 if none). */
uint32_t wait_error_read_term(struct peer *p, uint8_t *flags_out)
{
    struct siwarp_qp_attr at;
    uint8_t in[4096];
    ssize_t got = 0, n;

    for (int i = 0; i < 4000; i++) {
        siwarp_wait(p->ctx, 2);
        siwarp_query_qp(p->qp, &at);
        if (at.state == SIWARP_QPS_ERROR)
            break;
    }
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    for (int i = 0; i < 100; i++)     /* let the Terminate leave */
        siwarp_wait(p->ctx, 2);
    struct pollfd pf = { p->raw, POLLIN, 0 };
    while (poll(&pf, 1, 200) > 0 && (n = read(p->raw, in + got, sizeof(in) - (size_t)got)) > 0)
        got += n;
    /* the last FPDU on the stream must be the Terminate */
    for (ssize_t off = 0; off + 2 <= got;) {
        uint32_t ulen = swp_get16(in + off);
        const struct swp_ctrl *c = (const struct swp_ctrl *)(in + off + 2);
        if (!swp_ctrl_tagged(c) && swp_ctrl_opcode(c) == SWP_OP_TERMINATE) {
            const uint8_t *h = in + off + 2;
            ASSERT_EQ(swp_get32(h + 6), SWP_QN_TERMINATE);
            ASSERT_EQ(swp_get32(h + 10), 1);          /* first Terminate: MSN 1 */
            ASSERT(swp_ctrl_last(c));
            if (p->crc) {
                uint32_t flen = 2 + ulen + swp_mpa_pad(ulen);
                ASSERT_EQ(swp_mpa_get_crc(in + off + flen), swp_crc32c(0, in + off, flen));
            }
            uint32_t term;
            ASSERT_OK(swp_rdmap_parse_term(h, ulen, &term));
            ASSERT_EQ(term, at.term_sent);
            if (flags_out)
                *flags_out = h[SWP_HDR_UNTAGGED + 2];
            return term;
        }
        off += 2 + ulen + swp_mpa_pad(ulen) + 4;
    }
    return 0;
}

void expect_term_hdr(struct peer *p, uint32_t want, bool hdr_copied)
{
    uint8_t flags = 0;
    uint32_t term = wait_error_read_term(p, &flags);
    if (term != want) {
        char got_s[128], want_s[128];
        FAIL("terminate 0x%04x (%s), expected 0x%04x (%s)", term,
             swp_term_str(term, got_s, sizeof(got_s)), want,
             swp_term_str(want, want_s, sizeof(want_s)));
    }
    if (hdr_copied)
        ASSERT(flags & SWP_TERM_FLAG_D);    /* offending header copied in */
    else
        ASSERT_EQ(flags, 0);               /* nothing trustworthy to copy */
    canaries_intact(p);
}

void expect_term(struct peer *p, uint32_t want)
{
    expect_term_hdr(p, want, SWP_TERM_LAYER(want) != SWP_TERM_LAYER_LLP);
}
