/*
 * test_hw_post.c - the verbs backend reads a provider's post result the
 * way the provider meant it (hw_int.h swp_hw_post_result).
 *
 * A fake device stands in for rdma-core's provider: ibv_post_send and
 * ibv_post_recv are inline in verbs.h and call the context's ops, so a QP
 * whose context carries these ops gets the answers below.  They are the
 * conventions met in practice: the verbs API's (0, or an errno value with
 * *bad_wr at the WR not posted) and libsiw's (a negative errno when its
 * queue is full; -1 with errno set when its doorbell system call failed,
 * after it had written the WR into its user-mapped queue, *bad_wr NULL).
 * The last one is posted: the kernel completes it, flushed, once the QP
 * is in ERROR.  Read as anything else, uct_siwarp freed the flush that WR
 * named and met its completion afterwards (the interop run's
 * "comp->count > 0" abort in uct_check's bad-STag case, where the peer's
 * Terminate takes the QP out of RTS between the post and its doorbell);
 * and a full queue read as success left a WR that never completes.
 * And the one pattern of a completion reported twice that kernel siw
 * shows (a flushed Read, hw_int.h swp_hw_wc_twice): dropped, and nothing
 * else is.
 */
#include <errno.h>
#include <string.h>

#include "config.h"     /* HAVE_VERBS */
#include "harness.h"

#ifdef HAVE_VERBS
#include "hw_rig.h"

/* what the fake provider does with the next post */
static struct {
    int rc;            /* returned */
    int err;           /* errno set */
    int bad_null;      /* leave *bad_wr NULL (all queued) instead of at the WR */
    int calls;
    uint64_t wr_id;    /* of the last WR seen */
} prov;

/* the scripted answer; *queued: leave bad_wr NULL (all of the WRs went
 * into the queue) */
static int fake_answer(uint64_t wr_id, bool *queued)
{
    prov.calls++;
    prov.wr_id = wr_id;
    *queued = prov.rc == 0 || prov.bad_null;
    errno = prov.err;
    return prov.rc;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    bool queued;
    int rc = fake_answer(wr->wr_id, &queued);

    (void)qp;
    *bad = queued ? NULL : wr;
    return rc;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    bool queued;
    int rc = fake_answer(wr->wr_id, &queued);

    (void)qp;
    *bad = queued ? NULL : wr;
    return rc;
}

/* A QP in RTS on the fake device (hw_rig.h), whose posts this file's
 * provider answers. */
static void rig_init(struct rig *r)
{
    hw_rig_init(r);
    memset(&prov, 0, sizeof(prov));
    r->ibctx.ops.post_send = fake_post_send;
    r->ibctx.ops.post_recv = fake_post_recv;
}

static uint64_t word;

/* post one signaled Read; the backend's return */
static int post_read(struct rig *r, struct siwarp_send_wr **bad)
{
    struct siwarp_sge sge = { .addr = &word, .length = 8, .lkey = 7 };
    struct siwarp_send_wr wr = { .wr_id = 0x5eed, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_READ,
                                 .send_flags = SIWARP_SEND_SIGNALED };

    wr.rdma.remote_addr = 0x1000;
    wr.rdma.rkey = 9;
    *bad = NULL;
    return swp_hw_post_send(&r->qp, &wr, bad);
}

static int post_recv(struct rig *r)
{
    struct siwarp_sge sge = { .addr = &word, .length = 8, .lkey = 7 };
    struct siwarp_recv_wr wr = { .wr_id = 0xbeef, .sg_list = &sge, .num_sge = 1 };
    struct siwarp_recv_wr *bad = NULL;

    return swp_hw_post_recv(&r->qp, &wr, &bad);
}

TEST(posted_is_0)
{
    struct rig r;
    struct siwarp_send_wr *bad;

    rig_init(&r);
    ASSERT_EQ(post_read(&r, &bad), 0);
    ASSERT_EQ(prov.calls, 1);
    ASSERT_EQ(prov.wr_id, 0x5eed);
}

/* the provider answers the next post with rc and errno err, the WR left
 * in bad_wr unless queued; the backend's return */
static int answered(struct rig *r, int rc, int err, int queued, struct siwarp_send_wr **bad)
{
    prov.rc = rc;
    prov.err = err;
    prov.bad_null = queued;
    return post_read(r, bad);
}

/* libsiw: the doorbell failed (QP closing or terminating) after the WR
 * went into the queue; bad_wr NULL.  Posted: 0, so the caller keeps what
 * the WR names until its (flushed) completion.  It used to come back as 1,
 * which siwarp_post_send callers take for "completed at post". */
TEST(doorbell_failure_after_queueing_is_posted)
{
    struct rig r;
    struct siwarp_send_wr *bad;

    rig_init(&r);
    ASSERT_EQ(answered(&r, -1, ENOTCONN, 1, &bad), 0);
    ASSERT_EQ(prov.calls, 1);
}

/* The WR not posted, in each convention: libsiw's full queue (-ENOMEM,
 * the caller's cue to retry: uct_siwarp's UCS_ERR_NO_RESOURCE; it used to
 * come back as +12, read as posted: a WR that would never complete), the
 * verbs API's positive errno, and -1 with the cause in errno (or none). */
TEST(a_wr_not_posted_is_an_error_in_every_convention)
{
    struct rig r;
    struct siwarp_send_wr *bad;

    rig_init(&r);
    ASSERT_EQ(answered(&r, -ENOMEM, 0, 0, &bad), -ENOMEM);
    ASSERT(bad != NULL);
    ASSERT_EQ(answered(&r, EINVAL, 0, 0, &bad), -EINVAL);
    ASSERT_EQ(answered(&r, -1, ENOTCONN, 0, &bad), -ENOTCONN);
    ASSERT_EQ(answered(&r, -1, 0, 0, &bad), -EIO);
    ASSERT_EQ(prov.calls, 4);
}

/* receives: libsiw's full receive queue is an error, not a posted buffer
 * (which the peer's credits would count on) */
TEST(receive_queue_full_is_an_error)
{
    struct rig r;

    rig_init(&r);
    ASSERT_EQ(post_recv(&r), 0);
    ASSERT_EQ(prov.wr_id, 0xbeef);
    prov.rc = -ENOMEM;
    ASSERT_EQ(post_recv(&r), -ENOMEM);
    prov.rc = ENOMEM;
    ASSERT_EQ(post_recv(&r), -ENOMEM);
}

/* ---- completions the device reports twice (hw_int.h swp_hw_wc_twice) ---- */

static bool seen(struct swp_hw_qp *q, uint64_t id, enum siwarp_wc_opcode op,
                 enum siwarp_wc_status st)
{
    struct siwarp_wc w = { .wr_id = id, .opcode = op, .status = st };

    return !swp_hw_wc_twice(q, &w);     /* true: passed on */
}

#define FL SIWARP_WC_WR_FLUSH_ERR
#define OK SIWARP_WC_SUCCESS

/* siw 6.1's flush of a Read activated but not yet sent: the ORQ copy,
 * then the queued WQE; the second is dropped, what follows is not */
TEST(siw_double_flush_of_a_read_is_dropped)
{
    struct swp_hw_qp q;

    memset(&q, 0, sizeof(q));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(!seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(seen(&q, 0xb, SIWARP_WC_WRITE, FL));
    ASSERT(seen(&q, 0xc, SIWARP_WC_READ, FL));
    ASSERT(seen(&q, 0xd, SIWARP_WC_READ, FL));
}

/* a receive flushed between the two does not hide the second */
TEST(receives_between_do_not_break_the_pair)
{
    struct swp_hw_qp q;

    memset(&q, 0, sizeof(q));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(seen(&q, 0x7, SIWARP_WC_RECV, FL));
    ASSERT(!seen(&q, 0xa, SIWARP_WC_READ, FL));
}

/* what is not that pattern passes: successful Reads that share a wr_id,
 * a flushed Read after a successful one of the same wr_id, the same
 * wr_id with another completion between, a third flushed copy (the pair
 * is used up) */
TEST(only_the_consecutive_flushed_pair_is_dropped)
{
    struct swp_hw_qp q;

    memset(&q, 0, sizeof(q));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, OK));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, OK));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(seen(&q, 0xb, SIWARP_WC_SEND, FL));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(!seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(seen(&q, 0xa, SIWARP_WC_READ, FL));
    ASSERT(seen(&q, 0xe, SIWARP_WC_WRITE, FL));
    ASSERT(seen(&q, 0xe, SIWARP_WC_WRITE, FL));   /* only Reads are doubled */
}

#else

TEST(verbs_backend_post_results)
{
    SKIP("configure found no rdma-core headers: the verbs backend is not built");
}

#endif

SWP_TEST_MAIN()
