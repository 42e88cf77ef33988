/*
 * test_rings.c - a send queue or completion queue that runs empty starts
 * over at slot 0 (qp.c swp_sq_retire, cq.c swp_cq_drain), so that a busy
 * connection keeps using the ring's first, warm pages; and nothing is lost
 * or reordered by it: completions come in posting order, a Read still
 * outstanding keeps its slot, partly written work keeps the ring as it is.
 * Two QPs over a socketpair, no MPA setup (as test_datapath.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)

static void pair_setup(struct swp_test_pair *p, int sndbuf)
{
    const struct swp_test_pair_opts o = { .cqe = 64, .depth = 64, .ird_ord = 16,
                                          .mulpdu = 65000, .sndbuf = sndbuf, .crc = true };
    swp_test_pair_setup(p, &o);
}

static struct siwarp_mr *reg(struct swp_test_pair *p, void *b, size_t n)
{
    struct siwarp_mr *mr;
    ASSERT_OK(siwarp_reg_mr(p->pd, b, n, ACC_ALL, &mr));
    return mr;
}

/* Take want completions from side's CQ, at most chunk per poll, checking
 * that their wr_ids run from *next on; fail after ~10 s. */
static void take_in_order(struct swp_test_pair *p, int side, int want, int chunk, uint64_t *next)
{
    struct siwarp_wc wc[8];

    for (int i = 0; want > 0; i++) {
        int n = siwarp_poll_cq(p->cq[side], chunk, wc);
        ASSERT(n >= 0);
        for (int k = 0; k < n; k++) {
            ASSERT_EQ(wc[k].status, SIWARP_WC_SUCCESS);
            ASSERT_EQ(wc[k].wr_id, *next);
            (*next)++;
        }
        want -= n;
        ASSERT(want >= 0);
        ASSERT(i < 2000000);
        if (n == 0 && i > 1000)
            siwarp_wait(p->ctx, 5);
    }
}

/* Rounds of 1..5 Sends, completions taken two at a time: both CQs and the
 * send queue are back at slot 0 after every round, and every completion
 * came in order. */
TEST(drained_cq_and_empty_sq_restart_at_slot_zero)
{
    struct swp_test_pair p;
    uint64_t next_send = 0, next_recv = 1000;
    uint8_t s[16], r[64][16];

    pair_setup(&p, 0);
    struct siwarp_mr *ms = reg(&p, s, sizeof(s)), *mr = reg(&p, r, sizeof(r));
    for (int round = 0; round < 300; round++) {
        int k = 1 + round % 5;
        for (int i = 0; i < k; i++) {
            struct siwarp_sge rs = { r[i], sizeof(r[i]), siwarp_mr_stag(mr) };
            struct siwarp_recv_wr rw = { .wr_id = next_recv + (uint64_t)i, .sg_list = &rs,
                                         .num_sge = 1 };
            ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
        }
        for (int i = 0; i < k; i++) {
            struct siwarp_sge ss = { s, sizeof(s), siwarp_mr_stag(ms) };
            struct siwarp_send_wr sw = { .wr_id = next_send + (uint64_t)i, .sg_list = &ss,
                                         .num_sge = 1, .opcode = SIWARP_WR_SEND,
                                         .send_flags = SIWARP_SEND_SIGNALED };
            memset(s, round + i, sizeof(s));
            ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
        }
        take_in_order(&p, 0, k, 2, &next_send);
        take_in_order(&p, 1, k, 2, &next_recv);
        for (int i = 0; i < k; i++)
            ASSERT_EQ(r[i][15], (uint8_t)(round + i));
        ASSERT_EQ(p.cq[0]->head, 0);
        ASSERT_EQ(p.cq[1]->head, 0);
        ASSERT_EQ(p.qp[0]->sqr.head, 0);
        ASSERT_EQ(p.qp[0]->sqr.tail, 0);
        ASSERT_EQ(p.qp[0]->sq_cur, 0);
    }
    ASSERT_OK(siwarp_dereg_mr(ms));
    ASSERT_OK(siwarp_dereg_mr(mr));
    swp_test_pair_teardown(&p);
}

/* A Read posted before a Send: the Send is on the wire (and done) while
 * the Read waits for its response, so the queue is not empty and keeps its
 * numbering -- the ORQ names the Read by its slot.  Only once the response
 * is in does the queue start over.  The data read changes every round. */
TEST(outstanding_read_keeps_its_slot)
{
    struct swp_test_pair p;
    uint64_t next_send = 0, next_recv = 1000;
    uint8_t src[4096], dst[4096], s[8], r[8];

    pair_setup(&p, 0);
    struct siwarp_mr *msrc = reg(&p, src, sizeof(src)), *mdst = reg(&p, dst, sizeof(dst));
    struct siwarp_mr *ms = reg(&p, s, sizeof(s)), *mr = reg(&p, r, sizeof(r));
    for (int round = 0; round < 200; round++) {
        memset(src, 'a' + round % 26, sizeof(src));
        src[round] = 0x5a;
        memset(dst, 0, sizeof(dst));
        struct siwarp_sge rs = { r, sizeof(r), siwarp_mr_stag(mr) };
        struct siwarp_recv_wr rw = { .wr_id = next_recv, .sg_list = &rs, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
        struct siwarp_sge ds = { dst, sizeof(dst), siwarp_mr_stag(mdst) };
        struct siwarp_sge ss = { s, sizeof(s), siwarp_mr_stag(ms) };
        struct siwarp_send_wr send = { .wr_id = next_send + 1, .sg_list = &ss, .num_sge = 1,
                                       .opcode = SIWARP_WR_SEND,
                                       .send_flags = SIWARP_SEND_SIGNALED };
        struct siwarp_send_wr read = { .wr_id = next_send, .next = &send, .sg_list = &ds,
                                       .num_sge = 1, .opcode = SIWARP_WR_READ,
                                       .send_flags = SIWARP_SEND_SIGNALED,
                                       .rdma = { (uint64_t)(uintptr_t)src,
                                                 siwarp_mr_stag(msrc) } };
        ASSERT_OK(siwarp_post_send(p.qp[0], &read, NULL));
        /* both went out in the post; nothing answered the Read yet */
        ASSERT_EQ(p.qp[0]->sq_cur, p.qp[0]->sqr.tail);
        ASSERT_EQ(swp_ring_count(&p.qp[0]->sqr), 2);
        ASSERT_EQ(swp_ring_count(&p.qp[0]->orqr), 1);
        take_in_order(&p, 0, 2, 1, &next_send);
        take_in_order(&p, 1, 1, 1, &next_recv);
        ASSERT_MEM_EQ(dst, src, sizeof(src));
        ASSERT_EQ(p.qp[0]->sqr.tail, 0);
        ASSERT_EQ(p.cq[0]->head, 0);
    }
    ASSERT_OK(siwarp_dereg_mr(msrc));
    ASSERT_OK(siwarp_dereg_mr(mdst));
    ASSERT_OK(siwarp_dereg_mr(ms));
    ASSERT_OK(siwarp_dereg_mr(mr));
    swp_test_pair_teardown(&p);
}

/* 64 KiB Sends through a small socket buffer: a Send leaves in pieces
 * over several progress calls, its slot in use the whole time, and the
 * stream arrives whole and in order. */
TEST(partly_written_sends_survive_the_restart)
{
    struct swp_test_pair p;
    const size_t len = 65536;
    uint64_t next_send = 0, next_recv = 1000;
    uint8_t *s = malloc(4 * len), *r = calloc(4, len);

    ASSERT(s && r);
    pair_setup(&p, 16384);
    struct siwarp_mr *ms = reg(&p, s, 4 * len), *mr = reg(&p, r, 4 * len);
    for (int round = 0; round < 40; round++) {
        int k = 1 + round % 4;
        for (int i = 0; i < k; i++) {
            struct siwarp_sge rs = { r + i * len, (uint32_t)len, siwarp_mr_stag(mr) };
            struct siwarp_recv_wr rw = { .wr_id = next_recv + (uint64_t)i, .sg_list = &rs,
                                         .num_sge = 1 };
            ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
        }
        for (size_t b = 0; b < k * len; b++)
            s[b] = (uint8_t)(b * 7 + (size_t)round);
        for (int i = 0; i < k; i++) {
            struct siwarp_sge ss = { s + i * len, (uint32_t)len, siwarp_mr_stag(ms) };
            struct siwarp_send_wr sw = { .wr_id = next_send + (uint64_t)i, .sg_list = &ss,
                                         .num_sge = 1, .opcode = SIWARP_WR_SEND,
                                         .send_flags = SIWARP_SEND_SIGNALED };
            ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
        }
        ASSERT(p.qp[0]->tx.pending > 0);        /* the buffer cannot take it all */
        take_in_order(&p, 1, k, 3, &next_recv);
        take_in_order(&p, 0, k, 3, &next_send);
        ASSERT_MEM_EQ(r, s, k * len);
        ASSERT_EQ(p.qp[0]->sqr.tail, 0);
    }
    ASSERT_OK(siwarp_dereg_mr(ms));
    ASSERT_OK(siwarp_dereg_mr(mr));
    swp_test_pair_teardown(&p);
    free(s);
    free(r);
}

SWP_TEST_MAIN()
