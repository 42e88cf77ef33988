/*
 * test_progress_thread.c - siwarp_ctx_start_progress_thread: a responder
 * whose application never calls the library still answers RDMA Reads,
 * places Writes and executes RFC 7306 atomics; an application that polls
 * keeps the thread out of its way; completions the thread queued make an
 * exported context fd readable; the thread runs on the CPUs it is given.
 * Two contexts (requester, responder), one
 */
#define _GNU_SOURCE     /* cpu_set_t */
#include <poll.h>
#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | \
                 SIWARP_ACCESS_REMOTE_READ | SIWARP_ACCESS_REMOTE_ATOMIC)

struct side {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    uint64_t *buf;                  /* 64 words */
    struct siwarp_mr *mr;
};

struct env {
    struct side s[2];               /* s[0] requester, s[1] responder */
};

static void env_setup(struct env *e)
{
    const struct swp_test_pair_opts o = { .ird_ord = 8, .mulpdu = 16384, .crc = true,
                                          .rfc7306 = true };
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int fd[2];

    memset(e, 0, sizeof(*e));
    swp_test_tcp_pair(fd);
    for (int i = 0; i < 2; i++) {
        struct side *s = &e->s[i];

        ASSERT_OK(siwarp_ctx_create(&s->ctx));
        ASSERT_OK(siwarp_alloc_pd(s->ctx, &s->pd));
        ASSERT_OK(siwarp_create_cq(s->ctx, 64, &s->cq));
        a.send_cq = a.recv_cq = s->cq;
        a.max_send_wr = a.max_recv_wr = 32;
        a.max_sge = 1;
        ASSERT_OK(siwarp_create_qp(s->pd, &a, &s->qp));
        s->buf = aligned_alloc(64, 64 * sizeof(uint64_t));
        ASSERT(s->buf);
        for (int w = 0; w < 64; w++)
            s->buf[w] = (uint64_t)(i + 1) << 32 | (uint64_t)w;
        ASSERT_OK(siwarp_reg_mr(s->pd, s->buf, 64 * sizeof(uint64_t), ACC_ALL, &s->mr));
        swp_test_nego(&n, &o, i == 0);
        ASSERT_OK(swp_qp_attach_fd(s->qp, fd[i], &n));
    }
}

static void env_teardown(struct env *e)
{
    for (int i = 0; i < 2; i++) {
        struct side *s = &e->s[i];

        ASSERT_OK(siwarp_dereg_mr(s->mr));
        ASSERT_OK(siwarp_destroy_qp(s->qp));
        ASSERT_OK(siwarp_destroy_cq(s->cq));
        ASSERT_OK(siwarp_dealloc_pd(s->pd));
        siwarp_ctx_destroy(s->ctx);
        free(s->buf);
    }
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Poll the requester's CQ (and nothing of the responder) up to ms: 1 and
 * the completion, or 0 if none came. */
static int req_wait(struct env *e, int ms, struct siwarp_wc *wc)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    int n;

    do {
        n = siwarp_poll_cq(e->s[0].cq, 1, wc);
        ASSERT(n >= 0);
        if (n == 1)
            return 1;
    } while (now_ms() < end);
    return 0;
}

/* an 8-octet RDMA Read (requester's word w <- responder's word rw,
 * signaled) or Write (the other way, unsignaled) */
static void post_rdma(struct env *e, enum siwarp_wr_opcode op, int w, int rw)
{
    struct siwarp_sge sge = { &e->s[0].buf[w], 8, siwarp_mr_stag(e->s[0].mr) };
    struct siwarp_send_wr wr = { .wr_id = (uint64_t)op, .sg_list = &sge, .num_sge = 1,
                                 .opcode = op };

    if (op == SIWARP_WR_READ)
        wr.send_flags = SIWARP_SEND_SIGNALED;
    wr.rdma.remote_addr = (uintptr_t)&e->s[1].buf[rw];
    wr.rdma.rkey = siwarp_mr_stag(e->s[1].mr);
    ASSERT_OK(siwarp_post_send(e->s[0].qp, &wr, NULL));
}

static void post_fetch_add(struct env *e, int w, int rw, uint64_t add)
{
    struct siwarp_sge sge = { &e->s[0].buf[w], 8, siwarp_mr_stag(e->s[0].mr) };
    struct siwarp_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_ATOMIC_FETCH_ADD,
                                 .send_flags = SIWARP_SEND_SIGNALED };

    wr.atomic.remote_addr = (uintptr_t)&e->s[1].buf[rw];
    wr.atomic.rkey = siwarp_mr_stag(e->s[1].mr);
    wr.atomic.compare_add = add;
    ASSERT_OK(siwarp_post_send(e->s[0].qp, &wr, NULL));
}

/* The control first: with nobody progressing the responder a Read never
 * completes (so the test below can fail); then the thread answers it, and
 * a Write and a FetchAdd behind it, while the responder's own thread only
 * sleeps. */
TEST(a_responder_that_never_calls_the_library_is_served)
{
    struct siwarp_progress_thread_stats st;
    struct siwarp_wc wc;
    struct env e;

    env_setup(&e);
    post_rdma(&e, SIWARP_WR_READ, 0, 5);
    ASSERT_EQ(req_wait(&e, 300, &wc), 0);

    ASSERT_OK(siwarp_ctx_start_progress_thread(e.s[1].ctx, 100));
    ASSERT_EQ(req_wait(&e, 5000, &wc), 1);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, SIWARP_WC_READ);
    ASSERT_EQ(e.s[0].buf[0], 2ull << 32 | 5);

    e.s[0].buf[1] = 0x1122334455667788ull;
    post_rdma(&e, SIWARP_WR_WRITE, 1, 7);
    post_rdma(&e, SIWARP_WR_READ, 2, 7);            /* behind the Write: it is placed first */
    ASSERT_EQ(req_wait(&e, 5000, &wc), 1);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(e.s[1].buf[7], 0x1122334455667788ull);
    ASSERT_EQ(e.s[0].buf[2], 0x1122334455667788ull);

    post_fetch_add(&e, 3, 8, 1000);
    ASSERT_EQ(req_wait(&e, 5000, &wc), 1);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(e.s[0].buf[3], 2ull << 32 | 8);
    ASSERT_EQ(e.s[1].buf[8], (2ull << 32 | 8) + 1000);

    ASSERT_OK(siwarp_ctx_progress_thread_stats(e.s[1].ctx, &st));
    ASSERT(st.passes > 0 && st.served > 0);
    ASSERT_OK(siwarp_ctx_stop_progress_thread(e.s[1].ctx));
    ASSERT_EQ(siwarp_ctx_stop_progress_thread(e.s[1].ctx), -EINVAL);
    env_teardown(&e);
}

/* While the responder's application polls its context itself, the thread
 * only looks at the clock: it makes (almost) no pass of its own.  away_us
 * is 50 ms so that a loop slowed by sanitizers or a loaded host still
 * counts as polling; a thread without the rule would wake on every Read
 * Request and make a pass per Read. */
TEST(an_application_that_polls_keeps_the_thread_asleep)
{
    struct siwarp_progress_thread_stats st;
    struct siwarp_wc wc;
    struct env e;
    uint64_t end;
    int reads = 0;

    env_setup(&e);
    ASSERT_OK(siwarp_ctx_start_progress_thread(e.s[1].ctx, 50000));
    end = now_ms() + 300;
    while (now_ms() < end) {
        int n = 0;

        post_rdma(&e, SIWARP_WR_READ, 0, reads % 64);
        while (n == 0) {
            ASSERT(siwarp_progress(e.s[1].ctx) >= 0);
            ASSERT((n = siwarp_poll_cq(e.s[0].cq, 1, &wc)) >= 0);
        }
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        reads++;
    }
    ASSERT_OK(siwarp_ctx_progress_thread_stats(e.s[1].ctx, &st));
    ASSERT(reads > 100);
    /* 300 ms, a look at the clock whenever 50 ms have passed since the
     * last call it saw: some 6 looks, no pass at all */
    ASSERT(st.yields >= 3);
    ASSERT(st.passes <= 2);
    env_teardown(&e);               /* stops the thread */
}

/* A process with two contexts that have threads (UCX: pml ucx's and osc
 * ucx's) polls only one of them while it waits (a pml barrier): its idle
 * calls serve the other, whose thread the activity clock keeps asleep.
 * away_us is 50 ms, so the responder's own thread could answer at most
 * some 6 Reads in the 300 ms: without the service there are not 100. */
TEST(idle_polling_of_one_context_serves_another_with_a_thread)
{
    struct siwarp_progress_thread_stats st;
    struct siwarp_ctx *other;
    struct siwarp_wc wc;
    struct env e;
    uint64_t end;
    int reads = 0;

    env_setup(&e);
    ASSERT_OK(siwarp_ctx_create(&other));
    ASSERT_OK(siwarp_ctx_start_progress_thread(other, 50000));
    ASSERT_OK(siwarp_ctx_start_progress_thread(e.s[1].ctx, 50000));
    end = now_ms() + 300;
    while (now_ms() < end) {
        int n = 0;

        post_rdma(&e, SIWARP_WR_READ, 0, reads % 64);
        while (n == 0 && now_ms() < end + 1000) {
            ASSERT(siwarp_progress(other) >= 0);        /* nothing of its own */
            ASSERT((n = siwarp_poll_cq(e.s[0].cq, 1, &wc)) >= 0);
        }
        ASSERT_EQ(n, 1);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        reads++;
    }
    ASSERT_OK(siwarp_ctx_progress_thread_stats(e.s[1].ctx, &st));
    ASSERT(reads > 100);
    ASSERT(st.served_by_others > 0);
    ASSERT(st.passes <= 2);
    ASSERT_OK(siwarp_ctx_stop_progress_thread(other));
    siwarp_ctx_destroy(other);
    env_teardown(&e);
}

/* The responder's application sleeps on the exported fd (as UCX's
 * ucp_worker_wait does): a Send the thread took off the socket must still
 * wake it, and the CQ must hold the message. */
TEST(the_exported_fd_wakes_for_what_the_thread_received)
{
    struct siwarp_sge rs, ss;
    struct siwarp_recv_wr rw = { .wr_id = 9, .num_sge = 1 };
    struct siwarp_send_wr sw = { .wr_id = 4, .num_sge = 1, .opcode = SIWARP_WR_SEND };
    struct siwarp_wc wc;
    struct pollfd pfd;
    struct env e;
    int n = 0;

    env_setup(&e);
    pfd.fd = siwarp_ctx_fd(e.s[1].ctx);
    pfd.events = POLLIN;
    ASSERT(pfd.fd >= 0);
    rs = (struct siwarp_sge){ &e.s[1].buf[10], 8, siwarp_mr_stag(e.s[1].mr) };
    rw.sg_list = &rs;
    ASSERT_OK(siwarp_post_recv(e.s[1].qp, &rw, NULL));
    ASSERT_OK(siwarp_ctx_start_progress_thread(e.s[1].ctx, 100));
    usleep(20000);                  /* the application is away: the thread serves */

    e.s[0].buf[4] = 0xabcdefull;
    ss = (struct siwarp_sge){ &e.s[0].buf[4], 8, siwarp_mr_stag(e.s[0].mr) };
    sw.sg_list = &ss;
    ASSERT_OK(siwarp_post_send(e.s[0].qp, &sw, NULL));
    /* the message is placed by the thread, without the application */
    for (int i = 0; i < 500 && e.s[1].buf[10] != 0xabcdefull; i++)
        usleep(1000);
    ASSERT_EQ(e.s[1].buf[10], 0xabcdefull);
    pfd.revents = 0;
    ASSERT_EQ(poll(&pfd, 1, 2000), 1);
    ASSERT_EQ(siwarp_poll_cq(e.s[1].cq, 1, &wc), 1);
    ASSERT_EQ(wc.wr_id, 9);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    /* the application's own progress drains the kick: the fd goes quiet */
    for (int i = 0; i < 200; i++) {
        ASSERT(siwarp_progress(e.s[1].ctx) >= 0);
        pfd.revents = 0;
        if ((n = poll(&pfd, 1, 0)) == 0)
            break;
    }
    ASSERT_EQ(n, 0);
    env_teardown(&e);
}

TEST(what_a_thread_refuses)
{
    struct siwarp_ctx *ctx;

    ASSERT_EQ(siwarp_ctx_start_progress_thread(NULL, 0), -EINVAL);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT_EQ(siwarp_ctx_stop_progress_thread(ctx), -EINVAL);
    ASSERT_OK(siwarp_ctx_set_single_thread(ctx, true));
    ASSERT_EQ(siwarp_ctx_start_progress_thread(ctx, 0), -EINVAL);
    ASSERT_OK(siwarp_ctx_set_single_thread(ctx, false));
    ASSERT_OK(siwarp_ctx_start_progress_thread(ctx, 0));
    ASSERT_EQ(siwarp_ctx_start_progress_thread(ctx, 0), -EALREADY);
    ASSERT_EQ(siwarp_ctx_set_single_thread(ctx, true), -EBUSY);
    siwarp_ctx_destroy(ctx);        /* stops and joins it */
}

TEST(the_thread_runs_where_it_is_placed)
{
    struct siwarp_ctx *ctx;
    cpu_set_t want, got, mine;
    int last = -1;

    ASSERT_OK(sched_getaffinity(0, sizeof(mine), &mine));
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (CPU_ISSET(i, &mine)) {
            last = i;
        }
    }
    ASSERT(last >= 0);
    CPU_ZERO(&want);
    CPU_SET(last, &want);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT_EQ(siwarp_ctx_set_progress_thread_cpus(ctx, &want, sizeof(want)), -EINVAL);
    ASSERT_OK(siwarp_ctx_start_progress_thread(ctx, 0));
    ASSERT_EQ(siwarp_ctx_set_progress_thread_cpus(ctx, NULL, sizeof(want)), -EINVAL);
    ASSERT_OK(siwarp_ctx_set_progress_thread_cpus(ctx, &want, sizeof(want)));
    /* the process's one other thread is the progress thread */
    int seen = 0;
    DIR *d = opendir("/proc/self/task");
    ASSERT(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == (pid_t)syscall(SYS_gettid)) {
            continue;
        }
        ASSERT_OK(sched_getaffinity(tid, sizeof(got), &got));
        ASSERT(CPU_EQUAL(&got, &want));
        seen++;
    }
    closedir(d);
    ASSERT_EQ(seen, 1);
    siwarp_ctx_destroy(ctx);
}

SWP_TEST_MAIN()
