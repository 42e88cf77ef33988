/*
 * test_rx_errors.c - a raw peer sends hand-built FPDUs, good and broken, to
 * a siwarp QP.  Every protocol violation must come back as exactly the
 * Terminate the RFCs name (RFC 5040 7, RFC 5041 7, RFC 5044 8), move the QP
 * to ERROR, flush posted work, and leave memory outside the registered
 * region untouched (canaries).  Also: a stream fed one byte at a time, and
 * markers checked octet by octet on what siwarp transmits.
 */
#define _GNU_SOURCE 1          /* accept4 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "harness.h"
#include "raw_peer.h"
#include "swp.h"

static void write_case(struct peer *p, uint32_t stag, uint64_t to, uint32_t len, uint32_t want)
{
    uint8_t u[SWP_HDR_TAGGED + 4096];
    uint32_t h = tagged(u, SWP_OP_WRITE, true, stag, to);
    memset(u + h, 0x77, len);
    raw_fpdu(p, u, h + len, false);
    expect_term(p, want);
}


/* A peer that announces a Send of 1000 octets, sends `part` octets of the
 * FPDU and stops, its connection open.  With a stall time of 200 ms the
 * QP must fail with -ETIMEDOUT after 200 ms and a sweep (every 50 ms) or
 * so; a peer that stops between FPDUs is merely quiet and must not be cut
 * off. */
static void stall_case(uint32_t part, bool expect_cut)
{
    struct peer p;
    struct siwarp_qp_attr at;
    uint8_t u[SWP_HDR_UNTAGGED + 1000], f[1100];
    uint32_t h, n;
    uint64_t t0, ms;

    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_ctx_set_rx_stall(p.ctx, 200));
    struct siwarp_sge sg = { p.region, REGION, siwarp_mr_stag(p.mr) };
    struct siwarp_recv_wr r = { .wr_id = 5, .sg_list = &sg, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p.qp, &r, NULL));
    h = untagged(u, SWP_OP_SEND, true, SWP_QN_SEND, 1, 0);
    memset(u + h, 0x3c, 1000);
    n = build_fpdu(&p, f, u, h + 1000, false);
    ASSERT(part <= n);
    ASSERT_EQ(write(p.raw, f, part), (ssize_t)part);
    t0 = swp_now_ns();
    do {
        siwarp_wait(p.ctx, 5);
        siwarp_query_qp(p.qp, &at);
        ms = (swp_now_ns() - t0) / 1000000u;
    } while (at.state == SIWARP_QPS_RTS && ms < 1000);
    if (!expect_cut) {
        ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    } else {
        ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
        ASSERT_EQ(at.error, -ETIMEDOUT);
        ASSERT(ms >= 150 && ms <= 450);
    }
    canaries_intact(&p);
    peer_teardown(&p);
}

TEST(stall_inside_fpdu_header)
{
    stall_case(1, true);            /* half the length field */
}

TEST(stall_inside_fpdu_payload)
{
    stall_case(2 + SWP_HDR_UNTAGGED + 400, true);
}

TEST(stall_between_fpdus_is_quiet)
{
    stall_case(2 + SWP_HDR_UNTAGGED + 1000 + 4, false);    /* the whole FPDU: delivered */
}

/* The same among many quiet QPs, with a stall time of 2 s: a sweep then
 * looks at a slice of the context's QPs, on from where the last one
 * stopped, each QP seen at least every 500 ms (swp_qp_stall_sweep).  The
 * stalled QP is one of the last made, so that only a sweep that goes
 * round the list reaches it; it must fail within the stall time and a
 * quarter of it (plus a pass and slack), and none of the quiet ones. */
TEST(stall_found_among_many_quiet_qps)
{
    enum { EXTRA = 200, STALLED = 190, STALL_MS = 2000 };
    struct siwarp_qp_init_attr a = { 0 };
    struct siwarp_qp *qps[EXTRA];
    int raw[EXTRA];
    struct swp_nego n;
    struct siwarp_qp_attr at;
    struct peer p;
    uint8_t u[SWP_HDR_UNTAGGED + 1000], f[1100];
    uint32_t h;
    uint64_t t0, ms;

    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_ctx_set_rx_stall(p.ctx, STALL_MS));
    a.send_cq = a.recv_cq = p.cq;
    a.max_send_wr = a.max_recv_wr = 4;
    a.max_sge = 1;
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = true;
    n.ird = n.ord = 4;
    n.mulpdu = n.max_rx_ulpdu = 16384;
    n.initiator = true;
    for (int i = 0; i < EXTRA; i++) {
        int sv[2];

        ASSERT_OK(siwarp_create_qp(p.pd, &a, &qps[i]));
        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        ASSERT_OK(swp_qp_attach_fd(qps[i], sv[0], &n));
        raw[i] = sv[1];
    }
    struct siwarp_sge sg = { p.region, 1000, siwarp_mr_stag(p.mr) };
    struct siwarp_recv_wr r = { .wr_id = 5, .sg_list = &sg, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(qps[STALLED], &r, NULL));
    h = untagged(u, SWP_OP_SEND, true, SWP_QN_SEND, 1, 0);
    memset(u + h, 0x3c, 1000);
    build_fpdu(&p, f, u, h + 1000, false);
    ASSERT_EQ(write(raw[STALLED], f, 2 + SWP_HDR_UNTAGGED + 400), 2 + SWP_HDR_UNTAGGED + 400);
    t0 = swp_now_ns();
    do {
        siwarp_wait(p.ctx, 5);
        siwarp_query_qp(qps[STALLED], &at);
        ms = (swp_now_ns() - t0) / 1000000u;
    } while (at.state == SIWARP_QPS_RTS && ms < 4000);
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.error, -ETIMEDOUT);
    ASSERT(ms >= STALL_MS - 50 && ms <= STALL_MS + STALL_MS / 4 + 450);
    for (int i = 0; i < EXTRA; i++) {
        if (i != STALLED) {
            siwarp_query_qp(qps[i], &at);
            ASSERT_EQ(at.state, SIWARP_QPS_RTS);
        }
    }
    siwarp_query_qp(p.qp, &at);
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    for (int i = 0; i < EXTRA; i++) {
        ASSERT_OK(siwarp_destroy_qp(qps[i]));
        close(raw[i]);
    }
    canaries_intact(&p);
    peer_teardown(&p);
}

TEST(write_invalid_stag)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_case(&p, siwarp_mr_stag(p.mr) ^ 0x100, (uintptr_t)p.region, 64,
               T_DDP_TAG(SWP_DDP_EC_T_INV_STAG));
    peer_teardown(&p);
}

TEST(write_wrong_key_byte)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_case(&p, siwarp_mr_stag(p.mr) ^ 0x1, (uintptr_t)p.region, 64,
               T_DDP_TAG(SWP_DDP_EC_T_INV_STAG));
    peer_teardown(&p);
}

TEST(write_other_pd)
{
    struct peer p;
    struct siwarp_mr *m2;
    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_reg_mr(p.pd2, p.region, REGION, ACC_ALL, &m2));
    write_case(&p, siwarp_mr_stag(m2), (uintptr_t)p.region, 64, T_DDP_TAG(SWP_DDP_EC_T_STAG_STREAM));
    ASSERT_OK(siwarp_dereg_mr(m2));
    peer_teardown(&p);
}

TEST(write_no_rights)
{
    struct peer p;
    struct siwarp_mr *ro;
    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_reg_mr(p.pd, p.region, REGION, SIWARP_ACCESS_REMOTE_READ, &ro));
    write_case(&p, siwarp_mr_stag(ro), (uintptr_t)p.region, 64,
               T_RDMAP(SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_ACCESS));
    ASSERT_OK(siwarp_dereg_mr(ro));
    peer_teardown(&p);
}

TEST(write_beyond_end)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_case(&p, siwarp_mr_stag(p.mr), (uintptr_t)p.region + REGION - 10, 64,
               T_DDP_TAG(SWP_DDP_EC_T_BASE_BOUNDS));
    peer_teardown(&p);
}

TEST(write_before_start)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_case(&p, siwarp_mr_stag(p.mr), (uintptr_t)p.region - 1, 1, T_DDP_TAG(SWP_DDP_EC_T_BASE_BOUNDS));
    peer_teardown(&p);
}

TEST(write_offset_wraps)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_case(&p, siwarp_mr_stag(p.mr), UINT64_MAX - 15, 64, T_DDP_TAG(SWP_DDP_EC_T_TO_WRAP));
    peer_teardown(&p);
}

TEST(write_invalidated_stag)
{
    struct peer p;
    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_invalidate_stag(p.pd, siwarp_mr_stag(p.mr)));
    write_case(&p, siwarp_mr_stag(p.mr), (uintptr_t)p.region, 64, T_DDP_TAG(SWP_DDP_EC_T_INV_STAG));
    peer_teardown(&p);
}

TEST(stag_key_not_reused_after_dereg)
{
    struct peer p;
    peer_setup(&p, true, false);
    for (int i = 0; i < 200; i++) {
        uint32_t old = siwarp_mr_stag(p.mr);
        ASSERT_OK(siwarp_dereg_mr(p.mr));
        ASSERT_OK(siwarp_reg_mr(p.pd, p.region, REGION, ACC_ALL, &p.mr));
        ASSERT(siwarp_mr_stag(p.mr) != old);
    }
    peer_teardown(&p);
}

TEST(write_good_then_placed)
{
    struct peer p;
    uint8_t u[SWP_HDR_TAGGED + 100];
    peer_setup(&p, true, false);
    uint32_t h = tagged(u, SWP_OP_WRITE, true, siwarp_mr_stag(p.mr), (uintptr_t)p.region + 5);
    memset(u + h, 0x42, 100);
    raw_fpdu(&p, u, h + 100, false);
    for (int i = 0; i < 1000 && p.region[104] != 0x42; i++)
        siwarp_wait(p.ctx, 2);
    ASSERT_EQ(p.region[4], 0);
    ASSERT_EQ(p.region[5], 0x42);
    ASSERT_EQ(p.region[104], 0x42);
    ASSERT_EQ(p.region[105], 0);
    peer_teardown(&p);
}

static void send_case(struct peer *p, bool post, uint32_t qn, uint32_t msn, uint32_t mo,
                      uint32_t len, uint32_t want)
{
    uint8_t u[SWP_HDR_UNTAGGED + 8192];
    if (post) {
        struct siwarp_sge s = { p->region, 100, siwarp_mr_stag(p->mr) };
        struct siwarp_recv_wr r = { .wr_id = 77, .sg_list = &s, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p->qp, &r, NULL));
    }
    uint32_t h = untagged(u, SWP_OP_SEND, true, qn, msn, mo);
    memset(u + h, 0x66, len);
    raw_fpdu(p, u, h + len, false);
    expect_term(p, want);
    if (post) {
        struct siwarp_wc wc;
        ASSERT_EQ(siwarp_poll_cq(p->cq, 1, &wc), 1);
        ASSERT_EQ(wc.wr_id, 77);
        ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    }
    for (size_t i = 100; i < REGION; i++)
        ASSERT_EQ(p->region[i], 0);
}

TEST(send_without_posted_recv)
{
    struct peer p;
    peer_setup(&p, true, false);
    send_case(&p, false, 0, 1, 0, 10, T_DDP_UNT(SWP_DDP_EC_U_NO_BUF));
    peer_teardown(&p);
}

TEST(send_bad_msn)
{
    struct peer p;
    peer_setup(&p, true, false);
    send_case(&p, true, 0, 2, 0, 10, T_DDP_UNT(SWP_DDP_EC_U_MSN_RANGE));
    peer_teardown(&p);
}

TEST(send_bad_mo)
{
    struct peer p;
    peer_setup(&p, true, false);
    send_case(&p, true, 0, 1, 8, 10, T_DDP_UNT(SWP_DDP_EC_U_INV_MO));
    peer_teardown(&p);
}

TEST(send_too_long)
{
    struct peer p;
    peer_setup(&p, true, false);
    send_case(&p, true, 0, 1, 0, 101, T_DDP_UNT(SWP_DDP_EC_U_TOO_LONG));
    peer_teardown(&p);
}

/* A receive buffer whose MR went after the WR was posted (deregistered, or
 * its STag invalidated) must not be written: the Send ends the stream with
 * a local protection error reported as catastrophic, the WR is flushed.
 * The posted WQE's check is remembered (ctx->mr_gen), so these also prove
 * that deregistering and invalidating forget it. */
static void send_to_revoked_recv(bool dereg)
{
    struct peer p;
    struct siwarp_mr *m2;
    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_reg_mr(p.pd, p.region, REGION, ACC_ALL, &m2));
    struct siwarp_sge s = { p.region, 100, siwarp_mr_stag(m2) };
    struct siwarp_recv_wr r = { .wr_id = 78, .sg_list = &s, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p.qp, &r, NULL));
    if (dereg)
        ASSERT_OK(siwarp_dereg_mr(m2));
    else
        ASSERT_OK(siwarp_invalidate_stag(p.pd, siwarp_mr_stag(m2)));
    send_case(&p, false, 0, 1, 0, 10,
              T_RDMAP(SWP_RDMAP_ET_CATASTROPHIC, SWP_RDMAP_EC_CATA_STREAM));
    struct siwarp_wc wc;
    ASSERT_EQ(siwarp_poll_cq(p.cq, 1, &wc), 1);
    ASSERT_EQ(wc.wr_id, 78);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    for (size_t i = 0; i < 100; i++)
        ASSERT_EQ(p.region[i], 0);
    if (!dereg)
        ASSERT_OK(siwarp_dereg_mr(m2));
    peer_teardown(&p);
}

TEST(send_to_deregistered_recv_buffer) { send_to_revoked_recv(true); }
TEST(send_to_invalidated_recv_buffer) { send_to_revoked_recv(false); }

/* Deregistering some other MR makes the posted WQE's SGL be checked again
 * at arrival, and it still passes. */
TEST(send_after_unrelated_dereg_placed)
{
    struct peer p;
    struct siwarp_mr *other;
    struct siwarp_wc wc;
    uint8_t u[SWP_HDR_UNTAGGED + 10];
    peer_setup(&p, true, false);
    struct siwarp_sge s = { p.region, 100, siwarp_mr_stag(p.mr) };
    struct siwarp_recv_wr r = { .wr_id = 79, .sg_list = &s, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p.qp, &r, NULL));
    ASSERT_OK(siwarp_reg_mr(p.pd, p.region + 4096, 4096, ACC_ALL, &other));
    ASSERT_OK(siwarp_dereg_mr(other));
    uint32_t h = untagged(u, SWP_OP_SEND, true, 0, 1, 0);
    memset(u + h, 0x66, 10);
    raw_fpdu(&p, u, h + 10, false);
    for (int i = 0; i < 1000 && siwarp_poll_cq(p.cq, 1, &wc) == 0; i++)
        siwarp_wait(p.ctx, 2);
    ASSERT_EQ(wc.wr_id, 79);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 10);
    ASSERT_EQ(p.region[9], 0x66);
    ASSERT_EQ(p.region[10], 0);
    peer_teardown(&p);
}

TEST(send_bad_queue_number)
{
    struct peer p;
    peer_setup(&p, true, false);
    send_case(&p, true, 5, 1, 0, 10, T_DDP_UNT(SWP_DDP_EC_U_INV_QN));
    peer_teardown(&p);
}

static void ctrl_case(uint8_t ddp, uint8_t rdmap, uint32_t want)
{
    struct peer p;
    uint8_t u[SWP_HDR_UNTAGGED];
    peer_setup(&p, true, false);
    untagged(u, SWP_OP_SEND, true, 0, 1, 0);
    u[0] = ddp;
    u[1] = rdmap;
    raw_fpdu(&p, u, sizeof(u), false);
    expect_term(&p, want);
    peer_teardown(&p);
}

TEST(unknown_opcode)
{
    for (unsigned op = 8; op < 16; op++) {
        pid_t pid = fork();
        if (pid == 0) {
            ctrl_case(swp_ctrl_ddp(0, 1), swp_ctrl_rdmap(op),
                      T_RDMAP(SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE));
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}

TEST(tagged_opcode_untagged_flag)
{
    ctrl_case(swp_ctrl_ddp(0, 1), swp_ctrl_rdmap(SWP_OP_WRITE),
              T_RDMAP(SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE));
}

TEST(bad_ddp_version_untagged)
{
    ctrl_case((uint8_t)(SWP_DDP_FLAG_L | 2), swp_ctrl_rdmap(SWP_OP_SEND),
              T_DDP_UNT(SWP_DDP_EC_U_INV_DDP_VER));
}

TEST(bad_ddp_version_tagged)
{
    ctrl_case((uint8_t)(SWP_DDP_FLAG_T | SWP_DDP_FLAG_L | 0), swp_ctrl_rdmap(SWP_OP_WRITE),
              T_DDP_TAG(SWP_DDP_EC_T_INV_DDP_VER));
}

TEST(bad_rdmap_version)
{
    ctrl_case(swp_ctrl_ddp(0, 1), (uint8_t)(2 << 6 | SWP_OP_SEND),
              T_RDMAP(SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_INV_RDMAP_VER));
}

static uint32_t read_req(uint8_t *u, uint32_t msn, uint32_t src_stag, uint64_t src_to, uint32_t size)
{
    untagged(u, SWP_OP_READ_REQ, true, SWP_QN_READ_REQ, msn, 0);
    struct swp_rdmap_read_req *rr = (struct swp_rdmap_read_req *)(u + SWP_HDR_UNTAGGED);
    swp_put32(rr->sink_stag, 0x1234);
    swp_put64(rr->sink_to, 0);
    swp_put32(rr->size, size);
    swp_put32(rr->src_stag, src_stag);
    swp_put64(rr->src_to, src_to);
    return SWP_HDR_READ_REQ;
}

TEST(read_request_invalid_stag)
{
    struct peer p;
    uint8_t u[SWP_HDR_READ_REQ];
    peer_setup(&p, true, false);
    raw_fpdu(&p, u, read_req(u, 1, 0xdead00, (uintptr_t)p.region, 64), false);
    expect_term(&p, T_RDMAP(SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_INV_STAG));
    peer_teardown(&p);
}

TEST(read_request_no_rights)
{
    struct peer p;
    struct siwarp_mr *wo;
    uint8_t u[SWP_HDR_READ_REQ];
    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_reg_mr(p.pd, p.region, REGION,
                            SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE, &wo));
    raw_fpdu(&p, u, read_req(u, 1, siwarp_mr_stag(wo), (uintptr_t)p.region, 64), false);
    expect_term(&p, T_RDMAP(SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_ACCESS));
    ASSERT_OK(siwarp_dereg_mr(wo));
    peer_teardown(&p);
}

TEST(read_request_beyond_bounds)
{
    struct peer p;
    uint8_t u[SWP_HDR_READ_REQ];
    peer_setup(&p, true, false);
    raw_fpdu(&p, u, read_req(u, 1, siwarp_mr_stag(p.mr), (uintptr_t)p.region + 1, REGION), false);
    expect_term(&p, T_RDMAP(SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_BASE_BOUNDS));
    peer_teardown(&p);
}

/* A segment's target checked at its header and deregistered while its
 * payload arrives (the application takes the memory back; a verbs device
 * stops its DMA at deregistration): what arrives after that lands
 * nowhere, and the stream ends with the Terminate the header check would
 * have sent (RFC 5041 7.2 for a tagged segment; a local protection error
 * reported as catastrophic for a Send). */
static void target_gone_mid_payload(bool send, bool crc)
{
    struct peer p;
    struct siwarp_mr *m2;
    static uint8_t u[SWP_HDR_MAX + 4096], f[sizeof(u) + 64];   /* a Send's header is the longer */
    uint32_t h, n, first;

    peer_setup(&p, crc, false);
    ASSERT_OK(siwarp_reg_mr(p.pd, p.region, REGION, ACC_ALL, &m2));
    if (send) {
        struct siwarp_sge sg = { p.region, 4096, siwarp_mr_stag(m2) };
        struct siwarp_recv_wr r = { .wr_id = 79, .sg_list = &sg, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p.qp, &r, NULL));
        h = untagged(u, SWP_OP_SEND, true, SWP_QN_SEND, 1, 0);
    } else {
        h = tagged(u, SWP_OP_WRITE, true, siwarp_mr_stag(m2), (uintptr_t)p.region);
    }
    memset(u + h, 0x5a, 4096);
    n = build_fpdu(&p, f, u, h + 4096, false);
    first = SWP_MPA_HDR_LEN + h + 1024;             /* the header and 1 KiB of payload */
    ASSERT_EQ(write(p.raw, f, first), (ssize_t)first);
    for (int i = 0; i < 1000 && p.region[1023] != 0x5a; i++)
        siwarp_wait(p.ctx, 2);
    ASSERT_EQ(p.region[1023], 0x5a);                /* placed while registered */
    ASSERT_OK(siwarp_dereg_mr(m2));
    ASSERT_EQ(write(p.raw, f + first, n - first), (ssize_t)(n - first));
    expect_term(&p, send ? T_RDMAP(SWP_RDMAP_ET_CATASTROPHIC, SWP_RDMAP_EC_CATA_STREAM)
                         : T_DDP_TAG(SWP_DDP_EC_T_INV_STAG));
    for (size_t i = 1024; i < REGION; i++)
        ASSERT_EQ(p.region[i], 0);
    if (send) {
        struct siwarp_wc wc;
        ASSERT_EQ(siwarp_poll_cq(p.cq, 1, &wc), 1);
        ASSERT_EQ(wc.wr_id, 79);
        ASSERT(wc.status != SIWARP_WC_SUCCESS);
    }
    peer_teardown(&p);
}

TEST(write_target_deregistered_mid_payload_crc) { target_gone_mid_payload(false, true); }
TEST(write_target_deregistered_mid_payload_nocrc) { target_gone_mid_payload(false, false); }
TEST(send_buffer_deregistered_mid_payload_crc) { target_gone_mid_payload(true, true); }

/* The source checked at the header, looked up again when the Read Request
 * is whole: an MR deregistered while the CRC was on its way ends the
 * stream with an invalid-STag Terminate (RFC 5040 7.2), never a Response
 * read from memory that is no longer registered. */
TEST(read_request_source_gone_before_its_crc)
{
    struct peer p;
    struct siwarp_mr *m2;
    uint8_t u[SWP_HDR_READ_REQ], f[64];
    uint32_t n;

    peer_setup(&p, true, false);
    ASSERT_OK(siwarp_reg_mr(p.pd, p.region, REGION, ACC_ALL, &m2));
    n = build_fpdu(&p, f, u, read_req(u, 1, siwarp_mr_stag(m2), (uintptr_t)p.region, 4096),
                   false);
    ASSERT_EQ(write(p.raw, f, n - SWP_MPA_CRC_LEN), (ssize_t)(n - SWP_MPA_CRC_LEN));
    for (int i = 0; i < 20; i++)
        siwarp_progress(p.ctx);
    ASSERT_OK(siwarp_dereg_mr(m2));
    ASSERT_EQ(write(p.raw, f + n - SWP_MPA_CRC_LEN, SWP_MPA_CRC_LEN), SWP_MPA_CRC_LEN);
    expect_term(&p, T_RDMAP(SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_INV_STAG));
    peer_teardown(&p);
}

TEST(read_requests_beyond_ird)
{
    struct peer p;
    uint8_t u[SWP_HDR_READ_REQ];
    peer_setup(&p, true, false);
    /* the raw peer never reads, so responses back up in the QP: 4 fit the
     * IRD of 4, the 5th is one too many -- but responses may drain, so use
     * sizes that cannot all leave through a full socket buffer */
    int sz = 1;
    ASSERT_OK(setsockopt(p.raw, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)));
    for (uint32_t i = 1; i <= 5 + 64; i++) {
        raw_fpdu(&p, u, read_req(u, i, siwarp_mr_stag(p.mr), (uintptr_t)p.region, REGION), false);
        siwarp_progress(p.ctx);
        struct siwarp_qp_attr at;
        siwarp_query_qp(p.qp, &at);
        if (at.state == SIWARP_QPS_ERROR)
            break;
    }
    struct siwarp_qp_attr at;
    siwarp_query_qp(p.qp, &at);
    ASSERT_EQ(at.term_sent, T_RDMAP(SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_CATA_STREAM));
    peer_teardown(&p);
}

TEST(read_response_unsolicited)
{
    struct peer p;
    uint8_t u[SWP_HDR_TAGGED + 8];
    peer_setup(&p, true, false);
    uint32_t h = tagged(u, SWP_OP_READ_RESP, true, siwarp_mr_stag(p.mr), (uintptr_t)p.region);
    raw_fpdu(&p, u, h + 8, false);
    expect_term(&p, T_RDMAP(SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE));
    peer_teardown(&p);
}

/* A Write of len octets of fill to dst, as one FPDU */
static void write_fill(struct peer *p, uint32_t stag, const uint8_t *dst, uint8_t fill,
                       uint32_t len, bool bad_crc)
{
    uint8_t u[SWP_HDR_TAGGED + 256];
    uint32_t h = tagged(u, SWP_OP_WRITE, true, stag, (uintptr_t)dst);

    ASSERT(len <= 256);
    memset(u + h, fill, len);
    raw_fpdu(p, u, h + len, bad_crc);
}

static void wait_placed(struct peer *p, const uint8_t *dst, uint8_t fill, uint32_t len)
{
    for (int i = 0; i < 1000 && dst[len - 1] != fill; i++)
        siwarp_wait(p->ctx, 2);
    for (uint32_t i = 0; i < len; i++)
        ASSERT_EQ(dst[i], fill);
}

/* The QP's error names the FPDU whose CRC failed: its opcode and offset
 * (TO, or MSN and MO), ULPDU_Length and first octet in the stream, so that
 * a capture of the connection finds it. */
static void expect_crc_named(struct peer *p, const char *what, uint32_t ulpdu, uint64_t at)
{
    struct siwarp_qp_attr a;
    char want[96];

    siwarp_query_qp(p->qp, &a);
    snprintf(want, sizeof(want), "(%s, %u B at octet %llu)", what, ulpdu, (unsigned long long)at);
    if (!strstr(a.error_str, "CRC error: received 0x") || !strstr(a.error_str, want))
        FAIL("error \"%s\" does not end in \"%s\"", a.error_str, want);
}

TEST(bad_crc)
{
    struct peer p;
    char what[64];
    peer_setup(&p, true, false);
    write_fill(&p, siwarp_mr_stag(p.mr), p.region, 0, 16, true);
    expect_term(&p, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
    snprintf(what, sizeof(what), "RDMA Write TO 0x%llx", (unsigned long long)(uintptr_t)p.region);
    expect_crc_named(&p, what, SWP_HDR_TAGGED + 16, 0);
    peer_teardown(&p);
}

/* RFC 5044 4.4, 8: an FPDU that arrives whole has its CRC checked before
 * anything in it is acted on.  A corrupted Write places nothing... */
TEST(bad_crc_places_nothing)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_fill(&p, siwarp_mr_stag(p.mr), p.region, 0x77, 64, true);
    expect_term(&p, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
    for (size_t i = 0; i < REGION; i++)
        ASSERT_EQ(p.region[i], 0);
    peer_teardown(&p);
}

/* ...and a header that is wrong as well (an STag nobody registered) is not
 * trusted enough to be what the Terminate reports */
TEST(bad_crc_reported_before_bad_stag)
{
    struct peer p;
    peer_setup(&p, true, false);
    write_fill(&p, siwarp_mr_stag(p.mr) ^ 0x100, p.region, 0x77, 64, true);
    expect_term(&p, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
    peer_teardown(&p);
}

/* An FPDU checked whole, then one that arrives in two reads and is checked
 * piece by piece: both placed (the second's CRC is its own, not skipped
 * because the first one's was checked), then a split one with a bad CRC
 * caught. */
TEST(crc_whole_then_split)
{
    struct peer p;
    uint8_t u[SWP_HDR_TAGGED + 200], f[512];
    peer_setup(&p, true, false);
    write_fill(&p, siwarp_mr_stag(p.mr), p.region, 0x11, 64, false);
    wait_placed(&p, p.region, 0x11, 64);
    for (int bad = 0; bad < 2; bad++) {
        uint8_t fill = bad ? 0x33 : 0x22;
        uint8_t *dst = p.region + 1000 + 1000 * bad;
        uint32_t h = tagged(u, SWP_OP_WRITE, true, siwarp_mr_stag(p.mr), (uintptr_t)dst);
        memset(u + h, fill, 200);
        uint32_t n = build_fpdu(&p, f, u, h + 200, bad);
        ASSERT_EQ(write(p.raw, f, 30), 30);
        for (int i = 0; i < 20; i++)
            siwarp_progress(p.ctx);
        ASSERT_EQ(write(p.raw, f + 30, n - 30), (ssize_t)(n - 30));
        if (bad) {
            char what[64];
            expect_term(&p, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
            /* behind the 64-octet Write and the good split one */
            snprintf(what, sizeof(what), "RDMA Write TO 0x%llx", (unsigned long long)(uintptr_t)dst);
            expect_crc_named(&p, what, h + 200,
                             swp_fpdu_wire_len(SWP_HDR_TAGGED + 64, true) +
                                 swp_fpdu_wire_len(h + 200, true));
            break;
        }
        wait_placed(&p, dst, fill, 200);
        struct siwarp_qp_attr at;
        siwarp_query_qp(p.qp, &at);
        ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    }
    peer_teardown(&p);
}

TEST(crc_off_ignores_crc_field)
{
    struct peer p;
    peer_setup(&p, false, false);
    write_fill(&p, siwarp_mr_stag(p.mr), p.region, 9, 16, true);
    wait_placed(&p, p.region, 9, 16);
    peer_teardown(&p);
}

TEST(ulpdu_length_zero)
{
    struct peer p;
    uint8_t f[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    peer_setup(&p, false, false);
    ASSERT_EQ(write(p.raw, f, sizeof(f)), 8);
    expect_term_hdr(&p, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_CATASTROPHIC, 0), false);
    peer_teardown(&p);
}

TEST(ulpdu_length_over_mulpdu)
{
    struct peer p;
    uint8_t f[4];
    peer_setup(&p, false, false);
    swp_put16(f, 60000);
    f[2] = swp_ctrl_ddp(1, 1);
    f[3] = swp_ctrl_rdmap(SWP_OP_WRITE);
    ASSERT_EQ(write(p.raw, f, sizeof(f)), 4);
    expect_term_hdr(&p, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_CATASTROPHIC, 0), false);
    peer_teardown(&p);
}

TEST(terminate_received)
{
    struct peer p;
    uint8_t u[SWP_TERM_MAX_LEN];
    struct siwarp_wc wc;
    peer_setup(&p, true, false);
    struct siwarp_sge s = { p.region, 100, siwarp_mr_stag(p.mr) };
    struct siwarp_recv_wr r = { .wr_id = 5, .sg_list = &s, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p.qp, &r, NULL));
    uint32_t term = SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_CATA_GLOBAL);
    uint32_t len = swp_rdmap_build_term(u, 1, term, NULL, 0);
    raw_fpdu(&p, u, len, false);
    struct siwarp_qp_attr at;
    for (int i = 0; i < 1000; i++) {
        siwarp_wait(p.ctx, 2);
        siwarp_query_qp(p.qp, &at);
        if (at.state == SIWARP_QPS_ERROR)
            break;
    }
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.term_recv, term);
    ASSERT_EQ(at.term_sent, 0);          /* never answer a Terminate with one */
    ASSERT(strstr(at.error_str, "catastrophic") != NULL);
    ASSERT_EQ(siwarp_poll_cq(p.cq, 1, &wc), 1);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    peer_teardown(&p);
}

/* Several FPDUs delivered one byte per write, with progress in between:
 * the parser must resume at every boundary (STYLE: resumable cursors). */
static void byte_by_byte(bool crc)
{
    struct peer p;
    uint8_t stream[8192];
    uint32_t n = 0;
    peer_setup(&p, crc, false);
    struct siwarp_sge s1 = { p.region + 1000, 300, siwarp_mr_stag(p.mr) };
    struct siwarp_recv_wr r1 = { .wr_id = 1, .sg_list = &s1, .num_sge = 1 };
    struct siwarp_sge s2 = { p.region + 4000, 300, siwarp_mr_stag(p.mr) };
    struct siwarp_recv_wr r2 = { .wr_id = 2, .sg_list = &s2, .num_sge = 1 };
    r1.next = &r2;
    ASSERT_OK(siwarp_post_recv(p.qp, &r1, NULL));
    /* a Send of 700 bytes in 3 segments (MO 0, 300... no: one buffer of 300) */
    uint8_t u[SWP_HDR_UNTAGGED + 1500];
    struct { unsigned op; bool tagged; uint32_t len; uint32_t mo; bool last; uint32_t msn; } f[] = {
        { SWP_OP_SEND, false, 100, 0, false, 1 },
        { SWP_OP_SEND, false, 151, 100, true, 1 },
        { SWP_OP_WRITE, true, 777, 0, true, 0 },
        { SWP_OP_SEND_SE, false, 3, 0, true, 2 },
    };
    for (unsigned i = 0; i < 4; i++) {
        uint32_t h = f[i].tagged ? tagged(u, f[i].op, f[i].last, siwarp_mr_stag(p.mr), (uintptr_t)p.region + 2000)
                                 : untagged(u, f[i].op, f[i].last, 0, f[i].msn, f[i].mo);
        for (uint32_t k = 0; k < f[i].len; k++)
            u[h + k] = (uint8_t)(i * 31 + k);
        uint32_t len = h + f[i].len, pad = swp_mpa_pad(len);
        uint8_t *fp = stream + n;
        swp_put16(fp, (uint16_t)len);
        memcpy(fp + 2, u, len);
        memset(fp + 2 + len, 0, pad);
        swp_mpa_put_crc(fp + 2 + len + pad, crc ? swp_crc32c(0, fp, 2 + len + pad) : 0);
        n += 2 + len + pad + 4;
    }
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_EQ(write(p.raw, stream + i, 1), 1);
        siwarp_progress(p.ctx);
    }
    struct siwarp_wc wc;
    for (int i = 0; i < 100 && siwarp_poll_cq(p.cq, 1, &wc) == 0; i++)
        siwarp_wait(p.ctx, 2);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 1);
    ASSERT_EQ(wc.byte_len, 251);
    for (uint32_t k = 0; k < 100; k++)
        ASSERT_EQ(p.region[1000 + k], (uint8_t)k);
    for (uint32_t k = 0; k < 151; k++)
        ASSERT_EQ(p.region[1100 + k], (uint8_t)(31 + k));
    for (uint32_t k = 0; k < 777; k++)
        ASSERT_EQ(p.region[2000 + k], (uint8_t)(62 + k));
    ASSERT_EQ(siwarp_poll_cq(p.cq, 1, &wc), 1);
    ASSERT_EQ(wc.wr_id, 2);
    ASSERT_EQ(wc.byte_len, 3);
    ASSERT(wc.wc_flags & SIWARP_WC_SOLICITED);
    for (uint32_t k = 0; k < 3; k++)
        ASSERT_EQ(p.region[4000 + k], (uint8_t)(93 + k));
    canaries_intact(&p);
    peer_teardown(&p);
}

TEST(stream_byte_by_byte_crc) { byte_by_byte(true); }
TEST(stream_byte_by_byte_nocrc) { byte_by_byte(false); }

/* What siwarp transmits with markers on: a marker at every 512th octet
 * from the first FPDU, whose FPDUPTR points back at the FPDU's
 * ULPDU_Length (0 when it precedes one); CRCs cover in-FPDU markers. */
TEST(markers_on_the_wire)
{
    struct peer p;
    peer_setup(&p, true, true);
    static uint8_t data[20000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 1);   /* no zero byte a marker could mimic */
    struct siwarp_mr *md;
    ASSERT_OK(siwarp_reg_mr(p.pd, data, sizeof(data), 0, &md));
    size_t lens[] = { 1, 509, 510, 4096, 20000, 0, 3 };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct siwarp_sge s = { data, (uint32_t)lens[i], siwarp_mr_stag(md) };
        struct siwarp_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = SIWARP_WR_WRITE };
        w.rdma.rkey = 0x4242;
        w.rdma.remote_addr = 0x1000;
        ASSERT_OK(siwarp_post_send(p.qp, &w, NULL));
    }
    for (int i = 0; i < 50; i++)
        siwarp_progress(p.ctx);
    static uint8_t in[65536];
    size_t got = 0;
    struct pollfd pf = { p.raw, POLLIN, 0 };
    ssize_t r;
    while (poll(&pf, 1, 100) > 0 && (r = read(p.raw, in + got, sizeof(in) - got)) > 0) {
        got += (size_t)r;
        siwarp_progress(p.ctx);
    }
    ASSERT(got > 25000);
    /* walk the stream */
    size_t off = 0, fpdus = 0, markers = 0, payload = 0;
    while (off < got) {
        uint32_t crc = 0;
        if (off % 512 == 0) {          /* a marker leading an FPDU: in its CRC */
            ASSERT_EQ(swp_get16(in + off), 0);
            ASSERT_EQ(swp_get16(in + off + 2), 0);
            crc = swp_crc32c(0, in + off, 4);
            off += 4;
            markers++;
        }
        size_t start = off;
        /* collect the FPDU's unmarked bytes, checking in-FPDU markers */
        uint8_t f[20000];
        size_t fl = 0, want = 2;
        while (fl < want) {
            ASSERT(off < got);
            if (off % 512 == 0) {
                ASSERT_EQ(swp_get16(in + off + 2), off - start);
                if (fl < want - 4 || want == 2)
                    crc = swp_crc32c(crc, in + off, 4);
                off += 4;
                markers++;
                continue;
            }
            if (want == 2 || fl < want - 4)
                crc = swp_crc32c(crc, in + off, 1);
            f[fl++] = in[off++];
            if (fl == 2) {
                uint32_t ul = swp_get16(f);
                want = 2 + ul + swp_mpa_pad(ul) + 4;
                /* the CRC so far covers the 2 length bytes already */
            }
        }
        uint32_t ul = swp_get16(f);
        ASSERT_EQ(swp_mpa_get_crc(f + want - 4), crc);
        /* the payload is the application's bytes at the tagged offset */
        uint64_t to = swp_get64(f + 2 + 6);
        ASSERT(to >= 0x1000 && to - 0x1000 + (ul - SWP_HDR_TAGGED) <= sizeof(data));
        ASSERT_MEM_EQ(f + 2 + SWP_HDR_TAGGED, data + (to - 0x1000), ul - SWP_HDR_TAGGED);
        payload += ul - SWP_HDR_TAGGED;
        fpdus++;
    }
    ASSERT_EQ(payload, 1 + 509 + 510 + 4096 + 20000 + 0 + 3);
    ASSERT(markers >= got / 512);
    ASSERT(fpdus >= 7);
    ASSERT_OK(siwarp_dereg_mr(md));
    peer_teardown(&p);
}

/* A marked, CRC'd stream that one siwarp QP transmits, handed to a second
 * QP one byte per write: the receive side must strip markers and check
 * CRCs at every split point. */
TEST(relay_byte_by_byte_markers)
{
    struct peer tx, rx;
    peer_setup(&tx, true, true);
    peer_setup(&rx, true, true);
    static uint8_t data[3000], in[8192];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13 + 1);
    struct siwarp_mr *md;
    ASSERT_OK(siwarp_reg_mr(tx.pd, data, sizeof(data), 0, &md));
    struct siwarp_sge r1 = { rx.region, 1000, siwarp_mr_stag(rx.mr) };
    struct siwarp_recv_wr rw = { .wr_id = 1, .sg_list = &r1, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(rx.qp, &rw, NULL));
    struct siwarp_sge s1 = { data, 999, siwarp_mr_stag(md) }, s2 = { data, 3000, siwarp_mr_stag(md) };
    struct siwarp_send_wr w2 = { .wr_id = 2, .sg_list = &s2, .num_sge = 1, .opcode = SIWARP_WR_WRITE };
    struct siwarp_send_wr w1 = { .wr_id = 1, .sg_list = &s1, .num_sge = 1, .opcode = SIWARP_WR_SEND, .next = &w2 };
    w2.rdma.rkey = siwarp_mr_stag(rx.mr);
    w2.rdma.remote_addr = (uintptr_t)rx.region + 4096;
    ASSERT_OK(siwarp_post_send(tx.qp, &w1, NULL));
    siwarp_progress(tx.ctx);
    size_t got = 0;
    struct pollfd pf = { tx.raw, POLLIN, 0 };
    ssize_t r;
    while (poll(&pf, 1, 100) > 0 && (r = read(tx.raw, in + got, sizeof(in) - got)) > 0)
        got += (size_t)r;
    ASSERT(got > 4000);
    for (size_t i = 0; i < got; i++) {
        ASSERT_EQ(write(rx.raw, in + i, 1), 1);
        siwarp_progress(rx.ctx);
    }
    struct siwarp_wc wc;
    for (int i = 0; i < 100 && siwarp_poll_cq(rx.cq, 1, &wc) == 0; i++)
        siwarp_wait(rx.ctx, 2);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 999);
    ASSERT_MEM_EQ(rx.region, data, 999);
    for (int i = 0; i < 100 && rx.region[4096 + 2999] != data[2999]; i++)
        siwarp_wait(rx.ctx, 2);
    ASSERT_MEM_EQ(rx.region + 4096, data, 3000);
    struct siwarp_qp_attr at;
    siwarp_query_qp(rx.qp, &at);
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    canaries_intact(&rx);
    ASSERT_OK(siwarp_dereg_mr(md));
    peer_teardown(&tx);
    peer_teardown(&rx);
}

/* FPDUs of every length 1..300 (so FPDUs start and markers fall at many
 * offsets mod 512), transmitted by one QP and fed to another in pieces of
 * 1..7 bytes: every marker stripped, every CRC right, every byte placed. */
TEST(relay_markers_every_offset)
{
    struct peer tx, rx;
    static uint8_t data[4096], in[200000], want[REGION];
    peer_setup(&tx, true, true);
    peer_setup(&rx, true, true);
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 29 + 3);
    struct siwarp_mr *md;
    ASSERT_OK(siwarp_reg_mr(tx.pd, data, sizeof(data), 0, &md));
    memset(want, 0, sizeof(want));
    size_t got = 0;
    for (uint32_t k = 1; k <= 300; k++) {
        uint32_t at = (k * 13) % (REGION - 300);
        struct siwarp_sge s = { data + k, k, siwarp_mr_stag(md) };
        struct siwarp_send_wr w = { .wr_id = k, .sg_list = &s, .num_sge = 1, .opcode = SIWARP_WR_WRITE };
        w.rdma.rkey = siwarp_mr_stag(rx.mr);
        w.rdma.remote_addr = (uintptr_t)rx.region + at;
        memcpy(want + at, data + k, k);
        ASSERT_OK(siwarp_post_send(tx.qp, &w, NULL));
        siwarp_progress(tx.ctx);
        struct pollfd pf = { tx.raw, POLLIN, 0 };
        ssize_t r;
        while (poll(&pf, 1, 0) > 0 && (r = read(tx.raw, in + got, sizeof(in) - got)) > 0)
            got += (size_t)r;
    }
    ASSERT(got > 300 * 20);
    for (size_t i = 0, step = 1; i < got; i += step, step = step % 7 + 1) {
        size_t n = i + step <= got ? step : got - i;
        ASSERT_EQ(write(rx.raw, in + i, n), (ssize_t)n);
        siwarp_progress(rx.ctx);
    }
    for (int i = 0; i < 50; i++)
        siwarp_progress(rx.ctx);
    struct siwarp_qp_attr at;
    siwarp_query_qp(rx.qp, &at);
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    ASSERT_MEM_EQ(rx.region, want, REGION);
    canaries_intact(&rx);
    ASSERT_OK(siwarp_dereg_mr(md));
    peer_teardown(&tx);
    peer_teardown(&rx);
}

/* Whatever progress is driven by, a receive call must not return with
 * bytes parsed into its staging buffer but not consumed: no epoll event
 * would ever bring it back (a 6-rank MPI job hung on exactly this).  A
 * TCP loopback connection lets megabytes queue up, so one call may spend
 * its whole read budget. */
TEST(rx_never_returns_with_staged_bytes)
{
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_qp_init_attr a = { 0 };
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t sl = sizeof(sa);
    enum { N = 4096, SZ = 1000 };
    static uint8_t rbuf[N][SZ], f[2 + SWP_HDR_UNTAGGED + SZ + 8];
    int lfd, cfd, sfd, one = 1;

    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT_OK(siwarp_alloc_pd(ctx, &pd));
    ASSERT_OK(siwarp_create_cq(ctx, N, &cq));
    a.send_cq = a.recv_cq = cq;
    a.max_send_wr = 16;
    a.max_recv_wr = N;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(pd, &a, &qp));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_OK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)));
    ASSERT_OK(listen(lfd, 1));
    ASSERT_OK(getsockname(lfd, (struct sockaddr *)&sa, &sl));
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_OK(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)));
    sfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    ASSERT(sfd >= 0);
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct swp_nego n;
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = true;
    n.ird = n.ord = 4;
    n.mulpdu = 16384;
    n.max_rx_ulpdu = 65535;
    ASSERT_OK(swp_qp_attach_fd(qp, sfd, &n));
    swp_rx_budget = 3;           /* spend the budget quickly */
    struct siwarp_mr *mr;
    ASSERT_OK(siwarp_reg_mr(pd, rbuf, sizeof(rbuf), SIWARP_ACCESS_LOCAL_WRITE, &mr));
    for (int i = 0; i < N; i++) {
        struct siwarp_sge sg = { rbuf[i], SZ, siwarp_mr_stag(mr) };
        struct siwarp_recv_wr rw = { .wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(qp, &rw, NULL));
    }
    int sent = 0, got = 0;
    size_t foff = 0, flen = 0;
    int fl = fcntl(cfd, F_GETFL);
    fcntl(cfd, F_SETFL, fl | O_NONBLOCK);
    for (int round = 0; got < N && round < 200000; round++) {
        /* queue as much as the connection takes */
        for (;;) {
            if (foff == flen) {
                if (sent == N)
                    break;
                uint32_t h = swp_ddp_build_untagged(f + 2, SWP_OP_SEND, true, 0, (uint32_t)sent + 1, 0, 0);
                memset(f + 2 + h, (uint8_t)sent, SZ);
                uint32_t ul = h + SZ, pad = swp_mpa_pad(ul);
                swp_put16(f, (uint16_t)ul);
                memset(f + 2 + ul, 0, pad);
                swp_mpa_put_crc(f + 2 + ul + pad, swp_crc32c(0, f, 2 + ul + pad));
                flen = 2 + ul + pad + 4;
                foff = 0;
                sent++;
            }
            ssize_t w = write(cfd, f + foff, flen - foff);
            if (w <= 0)
                break;
            foff += (size_t)w;
        }
        siwarp_progress(ctx);
        ASSERT_EQ(qp->rx.buf_head, qp->rx.buf_tail);   /* nothing left staged */
        struct siwarp_wc wc[64];
        int k = siwarp_poll_cq(cq, 64, wc);
        ASSERT(k >= 0);
        for (int i = 0; i < k; i++) {
            ASSERT_EQ(wc[i].status, SIWARP_WC_SUCCESS);
            ASSERT_EQ(wc[i].wr_id, got + i);
            ASSERT_EQ(rbuf[got + i][SZ - 1], (uint8_t)(got + i));
        }
        got += k;
    }
    ASSERT_EQ(got, N);
    close(cfd);
    close(lfd);
    ASSERT_OK(siwarp_dereg_mr(mr));
    ASSERT_OK(siwarp_destroy_qp(qp));
    ASSERT_OK(siwarp_destroy_cq(cq));
    ASSERT_OK(siwarp_dealloc_pd(pd));
    siwarp_ctx_destroy(ctx);
}

/* Read all FPDUs available within ms; return how many, and their opcodes. */
static int raw_read_fpdus(struct peer *p, int ms, unsigned *ops, int max)
{
    static uint8_t in[65536];
    size_t got = 0;
    struct pollfd pf = { p->raw, POLLIN, 0 };
    ssize_t r;
    int n = 0;

    while (poll(&pf, 1, ms) > 0 && (r = read(p->raw, in + got, sizeof(in) - got)) > 0) {
        got += (size_t)r;
        siwarp_progress(p->ctx);
        ms = 20;
    }
    for (size_t off = 0; off + 4 <= got && n < max;) {
        uint32_t ul = swp_get16(in + off);
        ops[n++] = swp_ctrl_opcode((const struct swp_ctrl *)(in + off + 2));
        off += 2 + ul + swp_mpa_pad(ul) + 4;
    }
    return n;
}

/* The application's first message on a P2P initiator: an 8-byte Send;
 * the MR of its buffer, for the case to deregister. */
static struct siwarp_mr *p2p_post_send(struct peer *p)
{
    static uint8_t msg[8] = "payload";
    struct siwarp_mr *m;
    ASSERT_OK(siwarp_reg_mr(p->pd, msg, sizeof(msg), 0, &m));
    struct siwarp_sge sg = { msg, sizeof(msg), siwarp_mr_stag(m) };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = SIWARP_WR_SEND };
    ASSERT_OK(siwarp_post_send(p->qp, &w, NULL));
    return m;
}

/* P2P initiator with a Read RTR (RFC 6581 6): nothing else leaves before
 * the RTR is answered, and an unanswered RTR is followed by another
 * zero-length Read (stock siw 6.1 leaves the first FPDU after its Reply
 * unread until more bytes arrive). */
TEST(p2p_read_rtr_hold_and_retry)
{
    struct peer p;
    unsigned ops[16];
    peer_setup_p2p(&p, true, false, SIWARP_RTR_READ);
    struct siwarp_mr *m = p2p_post_send(&p);
    /* first the RTR alone */
    ASSERT_EQ(raw_read_fpdus(&p, 50, ops, 16), 1);
    ASSERT_EQ(ops[0], SWP_OP_READ_REQ);
    /* unanswered: within ~100 ms a zero-length Write nudges the peer (it
     * needs no ORD slot: this QP's ORD is taken by the RTR), still no Send */
    int n = 0;
    for (int i = 0; i < 30 && n == 0; i++) {
        siwarp_wait(p.ctx, 10);
        n = raw_read_fpdus(&p, 1, ops, 16);
    }
    ASSERT_EQ(n, 1);
    ASSERT_EQ(ops[0], SWP_OP_WRITE);
    /* answer the RTR; then the Send goes out */
    uint8_t u[SWP_HDR_TAGGED];
    raw_fpdu(&p, u, tagged(u, SWP_OP_READ_RESP, true, 0, 0), false);
    n = 0;
    for (int i = 0; i < 100 && n == 0; i++) {
        siwarp_wait(p.ctx, 5);
        n = raw_read_fpdus(&p, 1, ops, 16);
    }
    ASSERT_EQ(n, 1);
    ASSERT_EQ(ops[0], SWP_OP_SEND);
    struct siwarp_qp_attr at;
    siwarp_query_qp(p.qp, &at);
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    ASSERT_OK(siwarp_dereg_mr(m));
    peer_teardown(&p);
}

/* Toward a siwarp responder the initiator does not wait for the Read RTR's
 * answer: siwarp reads every FPDU as it arrives, and only the responder
 * must wait for the RTR (RFC 6581 6).  The Send follows the RTR at once,
 * and no nudge follows. */
TEST(p2p_read_rtr_no_hold_toward_siwarp)
{
    struct peer p;
    unsigned ops[16];
    peer_setup_nego(&p, true, false, SIWARP_RTR_READ, true);
    struct siwarp_mr *m = p2p_post_send(&p);
    ASSERT_EQ(raw_read_fpdus(&p, 50, ops, 16), 2);
    ASSERT_EQ(ops[0], SWP_OP_READ_REQ);    /* the RTR */
    ASSERT_EQ(ops[1], SWP_OP_SEND);        /* not held for its answer */
    for (int i = 0; i < 15; i++)
        siwarp_wait(p.ctx, 10);
    ASSERT_EQ(raw_read_fpdus(&p, 1, ops, 16), 0);    /* no nudge toward siwarp */
    /* the late answer is taken as the RTR's: the QP stays up */
    uint8_t u[SWP_HDR_TAGGED];
    raw_fpdu(&p, u, tagged(u, SWP_OP_READ_RESP, true, 0, 0), false);
    for (int i = 0; i < 5; i++)
        siwarp_wait(p.ctx, 5);
    struct siwarp_qp_attr at;
    siwarp_query_qp(p.qp, &at);
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    ASSERT_EQ(swp_ring_count(&p.qp->orqr), 0);
    ASSERT_OK(siwarp_dereg_mr(m));
    peer_teardown(&p);
}

/* P2P with the Write RTR: no answer exists, so until the peer has sent a
 * byte a zero-length Write follows every 100 ms; application FPDUs are not
 * held back. */
TEST(p2p_write_rtr_nudge_until_peer_speaks)
{
    struct peer p;
    unsigned ops[16];
    peer_setup_p2p(&p, true, false, SIWARP_RTR_WRITE);
    struct siwarp_mr *m = p2p_post_send(&p);
    ASSERT_EQ(raw_read_fpdus(&p, 50, ops, 16), 2);
    ASSERT_EQ(ops[0], SWP_OP_WRITE);       /* the RTR */
    ASSERT_EQ(ops[1], SWP_OP_SEND);
    int n = 0;
    for (int i = 0; i < 30 && n == 0; i++) {
        siwarp_wait(p.ctx, 10);
        n = raw_read_fpdus(&p, 1, ops, 16);
    }
    ASSERT_EQ(n, 1);
    ASSERT_EQ(ops[0], SWP_OP_WRITE);       /* a nudge */
    /* the peer speaks (a zero-length Write): the nudges stop */
    uint8_t u[SWP_HDR_TAGGED];
    raw_fpdu(&p, u, tagged(u, SWP_OP_WRITE, true, 0, 0), false);
    for (int i = 0; i < 5; i++)
        siwarp_wait(p.ctx, 10);
    raw_read_fpdus(&p, 1, ops, 16);        /* one may have crossed */
    for (int i = 0; i < 30; i++)
        siwarp_wait(p.ctx, 10);
    ASSERT_EQ(raw_read_fpdus(&p, 1, ops, 16), 0);
    struct siwarp_qp_attr at;
    siwarp_query_qp(p.qp, &at);
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    ASSERT_OK(siwarp_dereg_mr(m));
    peer_teardown(&p);
}

SWP_TEST_MAIN()
