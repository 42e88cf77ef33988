/*
 * uct_check_strangers.c - processes that were not given B's iface address,
 * or replay what they recorded of a connection to it, get nothing in
 * (uct_siwarp_auth.c, and the challenge round of a verbs acceptor,
 * uct_siwarp_challenge.c).
 */
#include "uct_check.h"

#include <siwarp/siwarp.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <nettle/hmac.h>

/* What uct_siwarp puts in its addresses and MPA private data, as this test
 * reads and forges them (uct_siwarp.h has the module's own definitions). */
typedef struct {
    uint16_t port;                 /* network order */
    uint16_t rx_depth;
    uint8_t  flags;                /* 1: the software stack */
    uint8_t  secret[16];
} __attribute__((packed)) s_iface_addr_t;

typedef struct {
    uint32_t magic;
    uint32_t credit_stag;
    uint64_t credit_addr;
    uint64_t flush_addr;
    uint32_t flush_stag;
    uint32_t src_ipv4;
    uint16_t src_port;
    uint16_t rx_depth;
    uint32_t flags;                /* 1: a challenge (Reject), 2: an answer (Request) */
    uint8_t  nonce[16];
    uint8_t  src_mac[32];
    uint8_t  mac[32];
} s_conn_pd_t;

#define S_PD_MAGIC  0x34435455u
#define S_FIN_MAGIC 0x4e494655u

typedef struct {
    struct siwarp_ctx *ctx;
    struct siwarp_pd  *pd;
    struct siwarp_cq  *cq;
} stranger_t;

/* A QP of the stranger's context connecting to B with pd (NULL: none);
 * both sides progressed until it is not CONNECTING.  Its final state. */
static enum siwarp_qp_state stranger_connect(stranger_t *st, const side_t *b,
                                             const s_conn_pd_t *pd, struct siwarp_qp **qpp)
{
    struct siwarp_qp_init_attr qa = { .send_cq = st->cq, .recv_cq = st->cq, .max_send_wr = 8,
                                      .max_recv_wr = 8, .max_sge = 1, .max_inline = 64 };
    const s_iface_addr_t *ia = b->iface_addr;
    struct siwarp_conn_param p;
    struct siwarp_qp_attr attr;
    struct sockaddr_in sin;
    double t0 = now();

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    memcpy(&sin.sin_addr.s_addr, b->dev_addr, 4);
    sin.sin_port = ia->port;
    siwarp_conn_param_default(&p);
    if (pd != NULL) {
        p.private_data     = pd;
        p.private_data_len = sizeof(*pd);
    }
    if (siwarp_create_qp(st->pd, &qa, qpp) < 0 ||
        siwarp_connect(*qpp, (struct sockaddr*)&sin, sizeof(sin), &p) < 0) {
        return SIWARP_QPS_ERROR;
    }
    do {
        uct_worker_progress(worker);
        siwarp_wait(st->ctx, 1);
        siwarp_query_qp(*qpp, &attr);
    } while ((attr.state == SIWARP_QPS_CONNECTING || attr.state == SIWARP_QPS_IDLE) &&
             now() - t0 < WAIT_SEC);
    return attr.state;
}

/* Progress both until the stranger's QP leaves RTS (B failed it); 1 if so. */
static int stranger_cut_off(stranger_t *st, struct siwarp_qp *qp)
{
    struct siwarp_qp_attr attr;
    double t0 = now();

    do {
        uct_worker_progress(worker);
        siwarp_wait(st->ctx, 1);
        siwarp_query_qp(qp, &attr);
    } while (attr.state == SIWARP_QPS_RTS && now() - t0 < WAIT_SEC);
    return attr.state != SIWARP_QPS_RTS;
}

/* HMAC(B's key, label || pd up to its mac || extra) */
static void pd_mac(const side_t *b, const char *label, const s_conn_pd_t *pd,
                   const uint8_t *extra, size_t extra_len, uint8_t mac[32])
{
    const s_iface_addr_t *ia = b->iface_addr;
    struct hmac_sha256_ctx h;

    hmac_sha256_set_key(&h, sizeof(ia->secret), ia->secret);
    hmac_sha256_update(&h, 4, (const uint8_t*)label);
    hmac_sha256_update(&h, offsetof(s_conn_pd_t, mac), (const uint8_t*)pd);
    if (extra_len != 0) {
        hmac_sha256_update(&h, extra_len, extra);
    }
    hmac_sha256_digest(&h, 32, mac);
}

/* The MPA Request a process that knows B's key sends: what a recorded
 * request replays (its nonce is the recording's, not ours to choose). */
static void forge_request(const side_t *b, s_conn_pd_t *pd, int good_mac)
{
    memset(pd, 0, sizeof(*pd));
    pd->magic       = S_PD_MAGIC;
    pd->credit_stag = 0x1234;
    pd->credit_addr = 0x1000;
    pd->rx_depth    = 4;
    memset(pd->nonce, 0x5a, sizeof(pd->nonce));
    pd_mac(b, "REQ", pd, NULL, 0, pd->mac);
    if (!good_mac) {
        pd->mac[0] ^= 1;
    }
}

/* req made as the answer to the challenge nonce (a holder of B's key) */
static void forge_answer(const side_t *b, s_conn_pd_t *req, const uint8_t *nonce)
{
    req->flags = 2;
    memcpy(req->nonce, nonce, sizeof(req->nonce));
    pd_mac(b, "REQ", req, NULL, 0, req->mac);
}

/* qp was refused with a challenge that B signed over req's nonce: 1, and
 * the challenge in rej */
static int got_challenge(struct siwarp_qp *qp, const side_t *b, const s_conn_pd_t *req,
                         s_conn_pd_t *rej)
{
    struct siwarp_qp_attr attr;
    uint8_t mac[32];

    if (siwarp_query_qp(qp, &attr) < 0 || attr.peer_private_data_len != sizeof(*rej)) {
        return 0;
    }
    memcpy(rej, attr.peer_private_data, sizeof(*rej));
    pd_mac(b, "REP", rej, req->nonce, sizeof(req->nonce), mac);
    return rej->magic == S_PD_MAGIC && (rej->flags & 1) && !memcmp(mac, rej->mac, sizeof(mac));
}

/* An RDMA Write of harm into dst on qp, which B must cut off: 1 if it
 * did and dst is as before */
static int write_cut_off(stranger_t *st, struct siwarp_qp *qp, region_t *dst,
                         const uint8_t *before, size_t len)
{
    static const char harm[] = "HARM from a stranger";
    struct siwarp_sge sge = { .addr = (void*)harm, .length = sizeof(harm) };
    struct siwarp_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = SIWARP_WR_WRITE,
                                 .send_flags = SIWARP_SEND_INLINE };
    struct siwarp_send_wr *bad;

    wr.rdma.remote_addr = (uintptr_t)dst->buf;
    wr.rdma.rkey        = (uint32_t)dst->rkey.rkey;
    siwarp_post_send(qp, &wr, &bad);
    return stranger_cut_off(st, qp) && !memcmp(before, dst->buf, len);
}

/* B challenged the replayed request rec (rej): a verbs acceptor, or the
 * test hook SIWARP_UCT_TEST_CHALLENGE.  Only a fresh answer gets a QP. */
static void test_challenge_round(stranger_t *st, const side_t *b, region_t *dst,
                                 const uint8_t *before, size_t len, const s_conn_pd_t *rec,
                                 const s_conn_pd_t *rej)
{
    struct siwarp_qp *qp;
    s_conn_pd_t ans = *rec, chk;
    uint8_t bogus[16];
    enum siwarp_qp_state state;

    memset(bogus, 0x33, sizeof(bogus));
    forge_answer(b, &ans, bogus);
    state = stranger_connect(st, b, &ans, &qp);
    check(state == SIWARP_QPS_ERROR && !got_challenge(qp, b, &ans, &chk),
          "a request that answers no challenge of B (signed with the key): refused");
    siwarp_destroy_qp(qp);

    ans = *rec;
    forge_answer(b, &ans, rej->nonce);
    state = stranger_connect(st, b, &ans, &qp);
    check(state == SIWARP_QPS_RTS, "the answer to B's challenge, from a holder of the key: "
          "accepted");
    siwarp_destroy_qp(qp);

    /* what a recording of that exchange replays */
    state = stranger_connect(st, b, &ans, &qp);
    if (state == SIWARP_QPS_RTS) {
        write_cut_off(st, qp, dst, before, len);
        check(0, "the same answer played again: refused, its challenge spent (it got a QP)");
    } else {
        check(!memcmp(before, dst->buf, len),
              "the same answer played again: refused, its challenge spent; region unchanged");
    }
    siwarp_destroy_qp(qp);
}

/* A replay of pd accepted by a software acceptor, then a first Send with
 * the recording's proof, which is for another nonce */
static void test_stale_fin(stranger_t *st, const side_t *b, const s_conn_pd_t *pd)
{
    struct { uint32_t magic; uint8_t mac[32]; } __attribute__((packed)) fin;
    struct siwarp_sge sge = { .addr = &fin, .length = sizeof(fin) };
    struct siwarp_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_INLINE };
    struct siwarp_send_wr *bad;
    struct siwarp_qp *qp;

    if (stranger_connect(st, b, pd, &qp) == SIWARP_QPS_RTS) {
        fin.magic = S_FIN_MAGIC;
        memset(fin.mac, 0x77, sizeof(fin.mac));
        siwarp_post_send(qp, &wr, &bad);
        check(stranger_cut_off(st, qp),
              "replayed request, then a first Send with a stale proof: cut off");
    } else {
        check(0, "replayed request, then a first Send with a stale proof: no Reply");
    }
    siwarp_destroy_qp(qp);
}

void test_strangers(const side_t *b, region_t *dst)
{
    stranger_t st;
    struct siwarp_qp *qp;
    s_conn_pd_t pd, rej;
    uint8_t before[64];
    enum siwarp_qp_state state;

    if (siwarp_ctx_create(&st.ctx) < 0 || siwarp_alloc_pd(st.ctx, &st.pd) < 0 ||
        siwarp_create_cq(st.ctx, 64, &st.cq) < 0) {
        check(0, "stranger: libsiwarp context");
        return;
    }
    memcpy(before, dst->buf, sizeof(before));

    state = stranger_connect(&st, b, NULL, &qp);
    check(state == SIWARP_QPS_ERROR, "stranger with no private data: refused (MPA Reject)");
    siwarp_destroy_qp(qp);

    forge_request(b, &pd, 0);
    state = stranger_connect(&st, b, &pd, &qp);
    check(state == SIWARP_QPS_ERROR,
          "stranger without the iface's key (request mac wrong by one bit): refused");
    siwarp_destroy_qp(qp);

    /* a recorded request played again.  A software acceptor accepts it
     * (it is valid), but the connection must prove the key over the
     * Reply's fresh nonce before anything of it is placed; a verbs
     * acceptor, which cannot hold placement back, challenges it */
    forge_request(b, &pd, 1);
    state = stranger_connect(&st, b, &pd, &qp);
    if (state == SIWARP_QPS_RTS) {
        check(1, "replayed request: an MPA Reply (nothing created but the QP)");
        check(write_cut_off(&st, qp, dst, before, sizeof(before)),
              "replayed request, then an RDMA Write to a registered region: cut off, "
              "region unchanged");
        siwarp_destroy_qp(qp);
        test_stale_fin(&st, b, &pd);
    } else if (got_challenge(qp, b, &pd, &rej)) {
        check(1, "replayed request: refused with a challenge B signed over its nonce "
              "(no QP accepted)");
        siwarp_destroy_qp(qp);
        test_challenge_round(&st, b, dst, before, sizeof(before), &pd, &rej);
    } else {
        check(0, "replayed request: neither an MPA Reply nor a challenge");
        siwarp_destroy_qp(qp);
    }

    siwarp_destroy_cq(st.cq);
    siwarp_dealloc_pd(st.pd);
    siwarp_ctx_destroy(st.ctx);
}

