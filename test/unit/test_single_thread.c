/*
 * test_single_thread.c - siwarp_ctx_set_single_thread: a context whose
 * caller calls in one thread at a time takes no lock, and by default every
 * call takes it.  Whether a call takes the lock is seen from outside: the
 * test holds the context's mutex and watches whether a call made by
 * another thread gets through.  Two QPs over a socketpair (qp_pair.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)

static void pair_setup(struct swp_test_pair *p)
{
    const struct swp_test_pair_opts o = { .cqe = 64, .depth = 64, .ird_ord = 16,
                                          .mulpdu = 65000, .crc = true };
    swp_test_pair_setup(p, &o);
}

static void sleep_ms(long ms)
{
    struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&d, NULL);
}

/* A Send of n bytes of value v from qp[0] into a receive on qp[1], and an
 * RDMA Write and Read of the same buffer, all polled to completion. */
static void exchange(struct swp_test_pair *p, uint32_t n, int v)
{
    static uint8_t s[8192], r[8192], rd[8192];
    struct siwarp_mr *ms, *mr, *mrd;
    struct siwarp_wc wc;
    int got = 0;

    ASSERT(n <= sizeof(s));
    memset(s, v, n);
    memset(r, 0, n);
    memset(rd, 0, n);
    ASSERT_OK(siwarp_reg_mr(p->pd, s, sizeof(s), ACC_ALL, &ms));
    ASSERT_OK(siwarp_reg_mr(p->pd, r, sizeof(r), ACC_ALL, &mr));
    ASSERT_OK(siwarp_reg_mr(p->pd, rd, sizeof(rd), ACC_ALL, &mrd));

    struct siwarp_sge rs = { r, n, siwarp_mr_stag(mr) };
    struct siwarp_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
    struct siwarp_sge ss = { s, n, siwarp_mr_stag(ms) };
    struct siwarp_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
    ASSERT_OK(siwarp_post_recv(p->qp[1], &rw, NULL));
    ASSERT_OK(siwarp_post_send(p->qp[0], &sw, NULL));
    /* the Read brings r (written by the Send) back into rd */
    struct siwarp_sge ds = { rd, n, siwarp_mr_stag(mrd) };
    struct siwarp_send_wr rdw = { .wr_id = 3, .sg_list = &ds, .num_sge = 1,
                                  .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };
    rdw.rdma.remote_addr = (uintptr_t)r;
    rdw.rdma.rkey = siwarp_mr_stag(mr);
    for (int i = 0; i < 100000 && got < 2; i++) {
        if (siwarp_poll_cq(p->cq[1], 1, &wc) == 1) {
            ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
            ASSERT_EQ(wc.byte_len, n);
            got++;
            ASSERT_OK(siwarp_post_send(p->qp[0], &rdw, NULL));
        }
        if (siwarp_poll_cq(p->cq[0], 1, &wc) == 1) {
            ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
            if (wc.wr_id == 3)
                got++;
        }
    }
    ASSERT_EQ(got, 2);
    ASSERT_MEM_EQ(r, s, n);
    ASSERT_MEM_EQ(rd, s, n);
    ASSERT_OK(siwarp_dereg_mr(ms));
    ASSERT_OK(siwarp_dereg_mr(mr));
    ASSERT_OK(siwarp_dereg_mr(mrd));
}

TEST(single_thread_context_moves_sends_writes_and_reads)
{
    struct swp_test_pair p;

    pair_setup(&p);
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, true));
    for (int i = 0; i < 20; i++)
        exchange(&p, 8u << (i % 11), i + 1);
    /* and back to the locking default on the same context */
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, false));
    exchange(&p, 4096, 99);
    swp_test_pair_teardown(&p);
}

/* A call that another thread makes while the test holds the context's
 * mutex: done within 300 ms, or blocked on the mutex. */
struct caller {
    struct swp_test_pair *p;
    atomic_int done;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    struct siwarp_wc wc;

    (void)siwarp_poll_cq(c->p->cq[1], 1, &wc);
    atomic_store(&c->done, 1);
    return NULL;
}

static bool call_gets_through_held_lock(struct swp_test_pair *p)
{
    struct caller c = { p, 0 };
    pthread_t t;
    bool through;

    pthread_mutex_lock(&p->ctx->lock);
    ASSERT_OK(pthread_create(&t, NULL, caller_main, &c));
    for (int i = 0; i < 30 && !atomic_load(&c.done); i++)
        sleep_ms(10);
    through = atomic_load(&c.done);
    pthread_mutex_unlock(&p->ctx->lock);
    pthread_join(t, NULL);
    ASSERT(atomic_load(&c.done));
    return through;
}

TEST(single_thread_takes_no_lock_and_the_default_does)
{
    struct swp_test_pair p;

    pair_setup(&p);
    ASSERT(!call_gets_through_held_lock(&p));           /* default: locks */
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, true));
    ASSERT(call_gets_through_held_lock(&p));            /* no lock taken */
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, false));
    ASSERT(!call_gets_through_held_lock(&p));
    swp_test_pair_teardown(&p);
}

/* A thread asleep in the context would wake up to a context nobody locks:
 * the switch is refused while it sleeps, and taken once it is gone. */
TEST(single_thread_refused_while_a_thread_sleeps)
{
    struct swp_test_pair p;
    struct swp_test_sleeper s;

    ASSERT_EQ(siwarp_ctx_set_single_thread(NULL, true), -EINVAL);
    pair_setup(&p);
    swp_test_sleeper_start(&s, &p, 500);    /* nothing will wake it */
    ASSERT_EQ(siwarp_ctx_set_single_thread(p.ctx, true), -EBUSY);
    ASSERT(!p.ctx->single_thread);
    ASSERT_EQ(swp_test_sleeper_join(&s), -ETIMEDOUT);   /* it slept the 500 ms out */
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, true));
    ASSERT(p.ctx->single_thread);
    swp_test_pair_teardown(&p);
}

SWP_TEST_MAIN()
