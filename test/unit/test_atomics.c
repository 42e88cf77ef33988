/*
 * test_atomics.c - RFC 7306 between two siwarp QPs over loopback TCP:
 * every atomic (FetchAdd, CmpSwap, and their masked forms) at edge values,
 * many more in flight than the ORD, two connections and the responder's
 * own CPU hammering one counter, Immediate Data in order with Sends, what
 * a post says when RFC 7306 was not negotiated or the WR is malformed, and
 * what the requester sees when the responder refuses an atomic.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC_ATOMIC (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_ATOMIC)

struct amo_env {
    struct swp_test_pair p;
    uint64_t *target;               /* at the responder, qp[1] */
    uint64_t *result;               /* the requester's SGE memory, 128 slots */
    struct siwarp_mr *tmr, *rmr;
    bool own_target;                /* env_setup allocated it */
};

static void env_setup_on(struct amo_env *e, uint64_t *target, bool rfc7306, uint32_t ord)
{
    struct swp_test_pair_opts o = { .cqe = 1024, .depth = 256, .ird_ord = ord,
                                    .mulpdu = 16384, .crc = true, .rfc7306 = rfc7306,
                                    .tcp = true };

    memset(e, 0, sizeof(*e));
    swp_test_pair_setup(&e->p, &o);
    e->target = target;
    e->result = aligned_alloc(64, 128 * sizeof(uint64_t));
    ASSERT(e->result);
    memset(e->result, 0xee, 128 * sizeof(uint64_t));
    ASSERT_OK(siwarp_reg_mr(e->p.pd, target, 64, ACC_ATOMIC, &e->tmr));
    ASSERT_OK(siwarp_reg_mr(e->p.pd, e->result, 128 * sizeof(uint64_t),
                            SIWARP_ACCESS_LOCAL_WRITE, &e->rmr));
}

static void env_setup(struct amo_env *e, bool rfc7306)
{
    uint64_t *t = aligned_alloc(64, 64);

    ASSERT(t);
    memset(t, 0, 64);
    env_setup_on(e, t, rfc7306, 4);
    e->own_target = true;
}

/* release what env_setup made (a case deregisters the MRs it added) */
static void env_teardown(struct amo_env *e)
{
    ASSERT_OK(siwarp_dereg_mr(e->tmr));
    ASSERT_OK(siwarp_dereg_mr(e->rmr));
    swp_test_pair_teardown(&e->p);
    free(e->result);
    if (e->own_target)
        free(e->target);
}

static int post_amo(struct amo_env *e, enum siwarp_wr_opcode op, uint64_t raddr, uint32_t rkey,
                    uint64_t cmp_add, uint64_t swap, uint64_t cmask, uint64_t smask, unsigned slot)
{
    struct siwarp_sge sge = { &e->result[slot], 8, siwarp_mr_stag(e->rmr) };
    struct siwarp_send_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = slot;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = SIWARP_SEND_SIGNALED;
    wr.atomic.remote_addr = raddr;
    wr.atomic.rkey = rkey;
    wr.atomic.compare_add = cmp_add;
    wr.atomic.swap = swap;
    wr.atomic.compare_add_mask = cmask;
    wr.atomic.swap_mask = smask;
    return siwarp_post_send(e->p.qp[0], &wr, NULL);
}

static void wait_wc(struct siwarp_cq *cq, struct siwarp_wc *wc)
{
    for (int i = 0; i < 20000; i++) {
        int n = siwarp_poll_cq(cq, 1, wc);
        ASSERT(n >= 0);
        if (n == 1)
            return;
        siwarp_wait(cq->ctx, 1);
    }
    FAIL("no completion");
}

/* One atomic on the target's first word, completed; the value fetched. */
static uint64_t amo(struct amo_env *e, enum siwarp_wr_opcode op, uint64_t cmp_add, uint64_t swap,
                    uint64_t cmask, uint64_t smask)
{
    struct siwarp_wc wc;

    ASSERT_OK(post_amo(e, op, (uintptr_t)e->target, siwarp_mr_stag(e->tmr), cmp_add, swap,
                       cmask, smask, 0));
    wait_wc(e->p.cq[0], &wc);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 8);
    ASSERT_EQ(wc.opcode, op == SIWARP_WR_ATOMIC_FETCH_ADD || op == SIWARP_WR_ATOMIC_MASKED_FETCH_ADD
                             ? SIWARP_WC_FETCH_ADD : SIWARP_WC_COMP_SWAP);
    ASSERT_EQ(e->target[1], 0);                  /* the word behind is never touched */
    return e->result[0];
}

TEST(fetch_add_edges)
{
    struct amo_env e;
    env_setup(&e, true);
    e.target[0] = UINT64_MAX - 1;
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, 1, 0, 0, 0), (long long)(UINT64_MAX - 1));
    ASSERT_EQ(e.target[0], (long long)UINT64_MAX);
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, 1, 0, 0, 0), (long long)UINT64_MAX);
    ASSERT_EQ(e.target[0], 0);                   /* wraps at 2^64 */
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, 0, 0, 0, 0), 0);
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, 1ull << 63, 0, 0, 0), 0);
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, 1ull << 63, 0, 0, 0), (long long)(1ull << 63));
    ASSERT_EQ(e.target[0], 0);
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, (uint64_t)-5, 0, 0, 0), 0);
    ASSERT_EQ(e.target[0], (long long)(uint64_t)-5);
    env_teardown(&e);
}

TEST(cmp_swap_edges)
{
    struct amo_env e;
    env_setup(&e, true);
    e.target[0] = 0;
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_CMP_SWP, 0, UINT64_MAX, 0, 0), 0);
    ASSERT_EQ(e.target[0], (long long)UINT64_MAX);
    /* a mismatch fetches the value and leaves it */
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_CMP_SWP, UINT64_MAX - 1, 7, 0, 0), (long long)UINT64_MAX);
    ASSERT_EQ(e.target[0], (long long)UINT64_MAX);
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_CMP_SWP, UINT64_MAX, 0x8000000000000001ull, 0, 0),
              (long long)UINT64_MAX);
    ASSERT_EQ(e.target[0], (long long)0x8000000000000001ull);
    env_teardown(&e);
}

TEST(masked_fetch_add)
{
    struct amo_env e;
    env_setup(&e, true);
    /* four 16-bit fields; each wraps on its own */
    e.target[0] = 0xffff0001fffe7fffull;
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_MASKED_FETCH_ADD, 0x0001000100020001ull, 0,
                  0x8000800080008000ull, 0), (long long)0xffff0001fffe7fffull);
    ASSERT_EQ(e.target[0], 0x0000000200008000ull);
    /* mask 0: one 64-bit field, the carry crosses every byte */
    e.target[0] = 0x00000000ffffffffull;
    amo(&e, SIWARP_WR_ATOMIC_MASKED_FETCH_ADD, 1, 0, 0, 0);
    ASSERT_EQ(e.target[0], 0x0000000100000000ull);
    /* a field of one bit at the top and one of 63 below it, whose carry
     * does not reach the top (a plain add would give 0) */
    e.target[0] = 0x7fffffffffffffffull;
    amo(&e, SIWARP_WR_ATOMIC_MASKED_FETCH_ADD, 0x8000000000000001ull, 0, 0xc000000000000000ull, 0);
    ASSERT_EQ(e.target[0], 0x8000000000000000ull);
    env_teardown(&e);
}

TEST(masked_cmp_swap)
{
    struct amo_env e;
    env_setup(&e, true);
    e.target[0] = 0x11223344aabbccddull;
    /* compare the low 32 bits only (the high ones differ), swap the high */
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_MASKED_CMP_SWP, 0x99999999aabbccddull, 0x5566778800000000ull,
                  0x00000000ffffffffull, 0xffffffff00000000ull), (long long)0x11223344aabbccddull);
    ASSERT_EQ(e.target[0], 0x55667788aabbccddull);
    /* the compared bits differ: nothing swapped */
    ASSERT_EQ(amo(&e, SIWARP_WR_ATOMIC_MASKED_CMP_SWP, 0x00000000aabbccdcull, 0,
                  0x00000000ffffffffull, UINT64_MAX), (long long)0x55667788aabbccddull);
    ASSERT_EQ(e.target[0], 0x55667788aabbccddull);
    /* empty compare mask always matches; swap one byte */
    amo(&e, SIWARP_WR_ATOMIC_MASKED_CMP_SWP, 0, 0x00000000000000eeull, 0, 0xff);
    ASSERT_EQ(e.target[0], 0x55667788aabbcceeull);
    env_teardown(&e);
}

/* ---- siwarp_atomic_prep: applications' atomics as RFC 7306 operations -- */

/* What op does to the operand of width w (4 or 8 bytes) found there: the
 * model the executed Atomic Request is held to. */
static uint64_t prep_model(enum siwarp_atomic_op op, uint64_t old, uint64_t x, uint64_t c,
                           unsigned w)
{
    uint64_t m = (w == 8) ? UINT64_MAX : UINT32_MAX, r;

    switch (op) {
    case SIWARP_AOP_ADD:   r = old + x; break;
    case SIWARP_AOP_CSWAP: r = (old == (c & m)) ? x : old; break;
    case SIWARP_AOP_SWAP:  r = x; break;
    case SIWARP_AOP_AND:   r = old & x; break;
    default:               r = old | x; break;
    }
    return r & m;
}

/* Every op, both widths, each 4-byte half of the word, at values whose
 * carries and bits reach the edge of the operand: the word after the
 * executed Atomic Request is the model's (the other half untouched), and
 * the fetched word gives the old operand at *shift. */
TEST(prep_maps_every_op_on_both_halves)
{
    static const uint64_t olds[] = { 0, 1, 0xffffffffull, 0x80000000ull, 0xfffffffffffffffeull,
                                     0x0123456789abcdefull };
    static const uint64_t xs[] = { 1, 0xffffffffull, 0x0f0f0f0f0f0f0f0full, 0x8000000000000001ull };
    struct amo_env e;
    unsigned cases = 0;

    env_setup(&e, true);
    for (int op = SIWARP_AOP_ADD; op <= SIWARP_AOP_OR; op++) {
        for (unsigned w = 4; w <= 8; w += 4) {
            for (unsigned off = 0; off < 8; off += w) {
                for (size_t i = 0; i < sizeof(olds) / sizeof(olds[0]); i++) {
                    for (size_t j = 0; j < sizeof(xs) / sizeof(xs[0]); j++) {
                        uint64_t m = (w == 8) ? UINT64_MAX : UINT32_MAX;
                        uint64_t old = olds[i] & m, x = xs[j] & m;
                        /* CSWAP both ways: compare equal, then not */
                        uint64_t cmp = (j & 1) ? old : old ^ 1;
                        uint8_t before[8], after[8];
                        uint64_t want = 0, got = 0, fetched;
                        struct siwarp_send_wr wr;
                        struct siwarp_sge sge = { &e.result[0], 8, siwarp_mr_stag(e.rmr) };
                        struct siwarp_wc wc;
                        unsigned shift = 99;

                        /* the other half holds a pattern it must keep */
                        memset(before, 0xa5, sizeof(before));
                        memcpy(before + off, &old, w);
                        memcpy(&e.target[0], before, 8);
                        memset(&wr, 0, sizeof(wr));
                        ASSERT_OK(siwarp_atomic_prep(&wr, (enum siwarp_atomic_op)op, w,
                                                     (uintptr_t)e.target + off, x, cmp, &shift));
                        ASSERT_EQ(wr.atomic.remote_addr, (uintptr_t)e.target);
                        wr.sg_list = &sge;
                        wr.num_sge = 1;
                        wr.send_flags = SIWARP_SEND_SIGNALED;
                        wr.atomic.rkey = siwarp_mr_stag(e.tmr);
                        ASSERT_OK(siwarp_post_send(e.p.qp[0], &wr, NULL));
                        wait_wc(e.p.cq[0], &wc);
                        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);

                        memcpy(after, &e.target[0], 8);
                        memcpy(&got, after + off, w);
                        want = prep_model((enum siwarp_atomic_op)op, old, x, cmp, w);
                        if (got != want)
                            FAIL("op %d width %u offset %u: old %#llx x %#llx cmp %#llx -> "
                                 "%#llx, want %#llx", op, w, off, (unsigned long long)old,
                                 (unsigned long long)x, (unsigned long long)cmp,
                                 (unsigned long long)got, (unsigned long long)want);
                        for (unsigned b = 0; b < 8; b++)
                            if (b < off || b >= off + w)
                                ASSERT_EQ(after[b], 0xa5);
                        fetched = (e.result[0] >> shift) & m;
                        ASSERT_EQ(fetched, (long long)old);
                        cases++;
                    }
                }
            }
        }
    }
    ASSERT_EQ(cases, 5 * (2 + 1) * 6 * 4);
    env_teardown(&e);
}

TEST(prep_refuses_what_rfc7306_cannot_express)
{
    struct siwarp_send_wr wr, zero;

    memset(&wr, 0, sizeof(wr));
    memset(&zero, 0, sizeof(zero));
    /* RFC 7306 5.2.1: an 8-aligned word; a 4-byte operand 4-aligned */
    for (unsigned off = 1; off < 8; off++)
        ASSERT_EQ(siwarp_atomic_prep(&wr, SIWARP_AOP_ADD, 8, 0x1000 + off, 1, 0, NULL), -EINVAL);
    for (unsigned off = 1; off < 4; off++)
        ASSERT_EQ(siwarp_atomic_prep(&wr, SIWARP_AOP_OR, 4, 0x1000 + off, 1, 0, NULL), -EINVAL);
    ASSERT_EQ(siwarp_atomic_prep(&wr, SIWARP_AOP_ADD, 2, 0x1000, 1, 0, NULL), -EINVAL);
    ASSERT_EQ(siwarp_atomic_prep(&wr, SIWARP_AOP_ADD, 16, 0x1000, 1, 0, NULL), -EINVAL);
    ASSERT_EQ(siwarp_atomic_prep(&wr, (enum siwarp_atomic_op)(SIWARP_AOP_OR + 1), 8, 0x1000, 1, 0,
                                 NULL), -EOPNOTSUPP);
    ASSERT_EQ(siwarp_atomic_prep(&wr, (enum siwarp_atomic_op)-1, 8, 0x1000, 1, 0, NULL),
              -EOPNOTSUPP);
    ASSERT_MEM_EQ(&wr, &zero, sizeof(wr));
}

/* 100 atomics posted at once against an ORD of 4: the rest wait in the SQ
 * (the peer would refuse a fifth), all complete, in order, each fetching
 * the count before it. */
TEST(many_in_flight_beyond_ord)
{
    struct amo_env e;
    struct siwarp_wc wc;
    env_setup(&e, true);
    for (unsigned i = 0; i < 100; i++)
        ASSERT_OK(post_amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, (uintptr_t)e.target,
                           siwarp_mr_stag(e.tmr), 1, 0, 0, 0, i));
    ASSERT(swp_ring_count(&e.p.qp[0]->orqr) <= 4);
    for (unsigned i = 0; i < 100; i++) {
        wait_wc(e.p.cq[0], &wc);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, i);
        ASSERT(swp_ring_count(&e.p.qp[0]->orqr) <= 4);
        ASSERT(swp_irq_outstanding(e.p.qp[1]) <= 4);
    }
    for (unsigned i = 0; i < 100; i++)
        ASSERT_EQ(e.result[i], i);
    ASSERT_EQ(e.target[0], 100);
    env_teardown(&e);
}

/* Reads and atomics share the ORD and are answered in order. */
TEST(atomics_between_reads)
{
    struct amo_env e;
    struct siwarp_wc wc;
    uint64_t src = 0x0123456789abcdefull, sink[4] = { 0 };
    struct siwarp_mr *smr, *kmr;
    env_setup(&e, true);
    ASSERT_OK(siwarp_reg_mr(e.p.pd, &src, 8, SIWARP_ACCESS_REMOTE_READ, &smr));
    ASSERT_OK(siwarp_reg_mr(e.p.pd, sink, sizeof(sink), SIWARP_ACCESS_LOCAL_WRITE, &kmr));
    for (unsigned i = 0; i < 4; i++) {
        struct siwarp_sge s = { &sink[i], 8, siwarp_mr_stag(kmr) };
        struct siwarp_send_wr rd = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1,
                                     .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };
        rd.rdma.remote_addr = (uintptr_t)&src;
        rd.rdma.rkey = siwarp_mr_stag(smr);
        ASSERT_OK(siwarp_post_send(e.p.qp[0], &rd, NULL));
        ASSERT_OK(post_amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, (uintptr_t)e.target,
                           siwarp_mr_stag(e.tmr), 10, 0, 0, 0, i));
    }
    for (unsigned i = 0; i < 8; i++) {
        wait_wc(e.p.cq[0], &wc);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, i % 2 ? i / 2 : 100 + i / 2);
        ASSERT_EQ(wc.opcode, i % 2 ? SIWARP_WC_FETCH_ADD : SIWARP_WC_READ);
    }
    for (unsigned i = 0; i < 4; i++) {
        ASSERT_EQ(sink[i], (long long)src);
        ASSERT_EQ(e.result[i], 10 * i);
    }
    ASSERT_OK(siwarp_dereg_mr(smr));
    ASSERT_OK(siwarp_dereg_mr(kmr));
    env_teardown(&e);
}

/* The responder's IRQ ring has 128 slots, filled as requests come and not
 * cleared: 130 atomics, then Reads that land in slots atomics used.  Each
 * Read must be answered as a Read (an Atomic Response in its place would
 * be a Terminate at the requester). */
TEST(reads_after_atomics_reuse_irq_slots)
{
    struct amo_env e;
    struct siwarp_wc wc;
    uint64_t src = 0x5555aaaa5555aaaaull, sink = 0;
    struct siwarp_mr *smr, *kmr;
    env_setup(&e, true);
    ASSERT_OK(siwarp_reg_mr(e.p.pd, &src, 8, SIWARP_ACCESS_REMOTE_READ, &smr));
    ASSERT_OK(siwarp_reg_mr(e.p.pd, &sink, 8, SIWARP_ACCESS_LOCAL_WRITE, &kmr));
    for (unsigned i = 0; i < 130; i++) {
        ASSERT_OK(post_amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, (uintptr_t)e.target,
                           siwarp_mr_stag(e.tmr), 1, 0, 0, 0, i % 128));
        wait_wc(e.p.cq[0], &wc);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    }
    for (unsigned i = 0; i < 4; i++) {
        struct siwarp_sge s = { &sink, 8, siwarp_mr_stag(kmr) };
        struct siwarp_send_wr rd = { .wr_id = 500 + i, .sg_list = &s, .num_sge = 1,
                                     .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };
        rd.rdma.remote_addr = (uintptr_t)&src;
        rd.rdma.rkey = siwarp_mr_stag(smr);
        sink = 0;
        ASSERT_OK(siwarp_post_send(e.p.qp[0], &rd, NULL));
        wait_wc(e.p.cq[0], &wc);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, SIWARP_WC_READ);
        ASSERT_EQ(sink, (long long)src);
    }
    ASSERT_EQ(e.target[0], 130);
    ASSERT_OK(siwarp_dereg_mr(smr));
    ASSERT_OK(siwarp_dereg_mr(kmr));
    env_teardown(&e);
}

/* ---- contention ------------------------------------------------------------------- */

#define HAMMER 3000

struct hammer {
    struct amo_env e;
    uint64_t got[HAMMER];
    pthread_t t;
};

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    struct siwarp_wc wc[16];
    unsigned posted = 0, done = 0;

    while (done < HAMMER) {
        while (posted < HAMMER && posted - done < 64) {
            ASSERT_OK(post_amo(&h->e, SIWARP_WR_ATOMIC_FETCH_ADD, (uintptr_t)h->e.target,
                               siwarp_mr_stag(h->e.tmr), 1, 0, 0, 0, posted % 128));
            posted++;
        }
        int n = siwarp_poll_cq(h->e.p.cq[0], 16, wc);
        ASSERT(n >= 0);
        for (int i = 0; i < n; i++) {
            ASSERT_EQ(wc[i].status, SIWARP_WC_SUCCESS);
            h->got[done++] = h->e.result[wc[i].wr_id];
        }
    }
    return NULL;
}

/* Two connections, each with its own context and progress thread, add 1
 * to one counter while the responder's process adds 1 with plain CPU
 * atomics: nothing is lost, and every value was fetched exactly once. */
TEST(contention_two_qps_and_local_cpu)
{
    uint64_t *counter = aligned_alloc(64, 64);
    struct hammer *h = calloc(2, sizeof(*h));
    uint8_t *seen = calloc(3 * HAMMER, 1);
    uint64_t local[HAMMER];

    ASSERT(counter && h && seen);
    memset(counter, 0, 64);
    for (int i = 0; i < 2; i++)
        env_setup_on(&h[i].e, counter, true, 16);
    for (int i = 0; i < 2; i++)
        ASSERT_OK(pthread_create(&h[i].t, NULL, hammer_main, &h[i]));
    for (unsigned i = 0; i < HAMMER; i++)
        local[i] = __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 2; i++)
        pthread_join(h[i].t, NULL);
    ASSERT_EQ(*counter, 3 * HAMMER);
    for (int k = 0; k < 3; k++) {
        for (unsigned i = 0; i < HAMMER; i++) {
            uint64_t v = k < 2 ? h[k].got[i] : local[i];
            ASSERT(v < 3 * HAMMER);
            ASSERT_EQ(seen[v], 0);
            seen[v] = 1;
        }
    }
    ASSERT_EQ(counter[1], 0);
    for (int i = 0; i < 2; i++)
        env_teardown(&h[i].e);
    free(counter);
    free(h);
    free(seen);
}

/* ---- Immediate Data ------------------------------------------------------------------ */

static void post_send_op(struct swp_test_pair *p, enum siwarp_wr_opcode op, void *buf,
                         uint32_t len, uint32_t lkey, uint64_t imm, uint64_t id)
{
    struct siwarp_sge s = { buf, len, lkey };
    struct siwarp_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = len ? 1 : 0,
                                 .opcode = op, .send_flags = SIWARP_SEND_SIGNALED };
    wr.imm_data = imm;
    ASSERT_OK(siwarp_post_send(p->qp[0], &wr, NULL));
}

/* Immediate Data consumes a posted receive in order with the Sends around
 * it (one MSN sequence on queue 0) and carries its 8 octets to the CQ. */
TEST(immediate_data_delivery)
{
    struct amo_env e;
    struct siwarp_wc wc;
    char in[4][16], out[2] = { 'a', 'b' };
    struct siwarp_mr *imr, *omr;
    env_setup(&e, true);
    ASSERT_OK(siwarp_reg_mr(e.p.pd, in, sizeof(in), SIWARP_ACCESS_LOCAL_WRITE, &imr));
    ASSERT_OK(siwarp_reg_mr(e.p.pd, out, 2, 0, &omr));
    for (unsigned i = 0; i < 4; i++) {
        struct siwarp_sge s = { in[i], 16, siwarp_mr_stag(imr) };
        struct siwarp_recv_wr rw = { .wr_id = 10 + i, .sg_list = &s, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(e.p.qp[1], &rw, NULL));
    }
    post_send_op(&e.p, SIWARP_WR_SEND, &out[0], 1, siwarp_mr_stag(omr), 0, 1);
    post_send_op(&e.p, SIWARP_WR_IMM_DATA, NULL, 0, 0, 0x0123456789abcdefull, 2);
    post_send_op(&e.p, SIWARP_WR_IMM_DATA_SE, NULL, 0, 0, UINT64_MAX, 3);
    post_send_op(&e.p, SIWARP_WR_SEND, &out[1], 1, siwarp_mr_stag(omr), 0, 4);
    static const struct { uint32_t len, flags; uint64_t imm; } want[4] = {
        { 1, 0, 0 }, { 0, SIWARP_WC_WITH_IMM, 0x0123456789abcdefull },
        { 0, SIWARP_WC_WITH_IMM | SIWARP_WC_SOLICITED, UINT64_MAX }, { 1, 0, 0 },
    };
    for (unsigned i = 0; i < 4; i++) {
        wait_wc(e.p.cq[1], &wc);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, SIWARP_WC_RECV);
        ASSERT_EQ(wc.wr_id, 10 + i);
        ASSERT_EQ(wc.byte_len, want[i].len);
        ASSERT_EQ(wc.wc_flags, want[i].flags);
        ASSERT_EQ(wc.imm_data, (long long)want[i].imm);
    }
    ASSERT_EQ(in[0][0], 'a');
    ASSERT_EQ(in[3][0], 'b');
    for (unsigned i = 0; i < 4; i++) {
        wait_wc(e.p.cq[0], &wc);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, SIWARP_WC_SEND);
        ASSERT_EQ(wc.wr_id, i + 1);
    }
    ASSERT_OK(siwarp_dereg_mr(imr));
    ASSERT_OK(siwarp_dereg_mr(omr));
    env_teardown(&e);
}

/* ---- posting ------------------------------------------------------------------------- */

TEST(post_refused_when_not_negotiated)
{
    struct amo_env e;
    struct siwarp_qp_attr at;
    env_setup(&e, false);
    ASSERT_OK(siwarp_query_qp(e.p.qp[0], &at));
    ASSERT(!at.rfc7306);
    for (int op = SIWARP_WR_ATOMIC_FETCH_ADD; op <= SIWARP_WR_ATOMIC_MASKED_CMP_SWP; op++)
        ASSERT_EQ(post_amo(&e, (enum siwarp_wr_opcode)op, (uintptr_t)e.target,
                           siwarp_mr_stag(e.tmr), 1, 0, 0, 0, 0), -EOPNOTSUPP);
    struct siwarp_send_wr wr = { .opcode = SIWARP_WR_IMM_DATA };
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EOPNOTSUPP);
    wr.opcode = SIWARP_WR_IMM_DATA_SE;
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EOPNOTSUPP);
    wr.opcode = SIWARP_WR_IMM_DATA_SE + 1;
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EINVAL);
    ASSERT_EQ(e.target[0], 0);
    /* a QP not yet connected has negotiated nothing */
    struct siwarp_qp *q;
    struct siwarp_qp_init_attr a = { .send_cq = e.p.cq[0], .recv_cq = e.p.cq[0],
                                     .max_send_wr = 4, .max_recv_wr = 4, .max_sge = 1 };
    ASSERT_OK(siwarp_create_qp(e.p.pd, &a, &q));
    wr.opcode = SIWARP_WR_IMM_DATA;
    ASSERT_EQ(siwarp_post_send(q, &wr, NULL), -EOPNOTSUPP);
    ASSERT_OK(siwarp_destroy_qp(q));
    env_teardown(&e);
}

TEST(post_checks_atomic_wr)
{
    struct amo_env e;
    struct siwarp_mr *ro;
    uint32_t rk;
    env_setup(&e, true);
    rk = siwarp_mr_stag(e.tmr);
    /* RFC 7306: an 8-aligned target */
    for (unsigned off = 1; off < 8; off++)
        ASSERT_EQ(post_amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, (uintptr_t)e.target + off, rk, 1, 0, 0,
                           0, 0), -EINVAL);
    /* one SGE of at least 8 octets, writable */
    struct siwarp_sge s = { e.result, 4, siwarp_mr_stag(e.rmr) };
    struct siwarp_send_wr wr = { .opcode = SIWARP_WR_ATOMIC_CMP_SWP, .sg_list = &s, .num_sge = 1 };
    wr.atomic.remote_addr = (uintptr_t)e.target;
    wr.atomic.rkey = rk;
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EINVAL);
    wr.num_sge = 0;
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EINVAL);
    s.length = 8;
    wr.num_sge = 1;
    wr.send_flags = SIWARP_SEND_INLINE;
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EINVAL);
    wr.send_flags = 0;
    ASSERT_OK(siwarp_reg_mr(e.p.pd, e.result, 64, 0, &ro));
    s.lkey = siwarp_mr_stag(ro);
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &wr, NULL), -EACCES);
    /* Immediate Data has no payload */
    struct siwarp_send_wr im = { .opcode = SIWARP_WR_IMM_DATA, .sg_list = &s, .num_sge = 1 };
    ASSERT_EQ(siwarp_post_send(e.p.qp[0], &im, NULL), -EINVAL);
    /* as verbs: remote atomic needs local write */
    ASSERT_EQ(siwarp_reg_mr(e.p.pd, e.result, 64, SIWARP_ACCESS_REMOTE_ATOMIC, &ro), -EINVAL);
    ASSERT_EQ(e.target[0], 0);
    ASSERT_OK(siwarp_dereg_mr(ro));
    env_teardown(&e);
}

/* The responder refuses (an STag without the atomic right): the requester's
 * WR completes with the Terminate's code, and the target is untouched. */
TEST(requester_sees_terminate)
{
    struct amo_env e;
    struct siwarp_mr *rw;
    struct siwarp_wc wc;
    env_setup(&e, true);
    e.target[0] = 42;
    ASSERT_OK(siwarp_reg_mr(e.p.pd, e.target, 64, SIWARP_ACCESS_LOCAL_WRITE |
                            SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ, &rw));
    ASSERT_OK(post_amo(&e, SIWARP_WR_ATOMIC_FETCH_ADD, (uintptr_t)e.target, siwarp_mr_stag(rw),
                       1, 0, 0, 0, 5));
    wait_wc(e.p.cq[0], &wc);
    ASSERT_EQ(wc.wr_id, 5);
    ASSERT_EQ(wc.status, SIWARP_WC_REM_ACCESS_ERR);
    ASSERT_EQ(wc.vendor_err, SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT,
                                      SWP_RDMAP_EC_ACCESS));
    ASSERT_EQ(e.target[0], 42);
    ASSERT_EQ(e.result[5], 0xeeeeeeeeeeeeeeeeull);   /* nothing fetched */
    ASSERT_OK(siwarp_dereg_mr(rw));
    env_teardown(&e);
}

SWP_TEST_MAIN()
