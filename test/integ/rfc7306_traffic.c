/*
 * rfc7306_traffic.c - RFC 7306 traffic over loopback for test_tshark.sh's
 * capture check: every atomic and both Immediate Data opcodes between two
 * siwarp ends that agreed on RFC 7306.
 *
 *   rfc7306_traffic -s          serve on 127.0.0.1, an ephemeral port:
 *                               prints "listening port=N", then accepts
 *                               until killed
 *   rfc7306_traffic -c PORT     one connection: FetchAdd of 5, masked
 *                               FetchAdd, CmpSwap, masked CmpSwap, then
 *                               Immediate Data and with SE; prints
 *                               "target stag=S" (decimal, as tshark shows
 *                               it); exit 0 when all completed well
 *
 * The server's Accept carries the target's STag and address as private
 * data (8 + 4 octets).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "siwarp/siwarp.h"

#define DEPTH 16

static struct siwarp_qp *new_qp(struct siwarp_pd *pd, struct siwarp_cq *cq)
{
    struct siwarp_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .max_send_wr = DEPTH,
                                     .max_recv_wr = DEPTH, .max_sge = 1 };
    struct siwarp_qp *qp;

    return siwarp_create_qp(pd, &a, &qp) ? NULL : qp;
}

static int serve(void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    static uint64_t target[8] __attribute__((aligned(64)));
    static char rbuf[DEPTH][8];
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_mr *tmr, *rmr;
    struct siwarp_listener *l;
    struct sockaddr_storage ss;
    struct siwarp_conn_param p;
    uint8_t pdata[12];

    if (siwarp_ctx_create(&ctx) || siwarp_alloc_pd(ctx, &pd) || siwarp_create_cq(ctx, 256, &cq) ||
        siwarp_reg_mr(pd, target, sizeof(target),
                      SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_ATOMIC, &tmr) ||
        siwarp_reg_mr(pd, rbuf, sizeof(rbuf), SIWARP_ACCESS_LOCAL_WRITE, &rmr))
        return 1;
    siwarp_conn_param_default(&p);
    if (siwarp_listen(ctx, (struct sockaddr *)&sin, sizeof(sin), &p, &l) ||
        siwarp_listener_addr(l, &ss))
        return 1;
    printf("listening port=%u\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
    fflush(stdout);
    memcpy(pdata, &(uint64_t){ (uintptr_t)target }, 8);
    memcpy(pdata + 8, &(uint32_t){ siwarp_mr_stag(tmr) }, 4);
    p.private_data = pdata;
    p.private_data_len = sizeof(pdata);
    for (;;) {
        struct siwarp_conn_req *req;
        struct siwarp_qp *qp;
        struct siwarp_wc wc[8];

        while (siwarp_poll_cq(cq, 8, wc) > 0)
            ;                                /* received Immediate Data */
        if (siwarp_get_conn_request_wait(l, 100, &req))
            continue;
        if (!(qp = new_qp(pd, cq)))
            return 1;
        for (int i = 0; i < 4; i++) {
            struct siwarp_sge s = { rbuf[i], 8, siwarp_mr_stag(rmr) };
            struct siwarp_recv_wr rw = { .sg_list = &s, .num_sge = 1 };
            siwarp_post_recv(qp, &rw, NULL);
        }
        if (siwarp_accept(req, qp, &p))
            return 1;
    }
}

static int run_client(int port)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    static uint64_t res[8] __attribute__((aligned(64)));
    static const struct { enum siwarp_wr_opcode op; uint64_t ca, sw, cm, sm; } ops[] = {
        { SIWARP_WR_ATOMIC_FETCH_ADD, 5, 0, 0, 0 },
        { SIWARP_WR_ATOMIC_MASKED_FETCH_ADD, 0x0101, 0, 0x8080, 0 },
        { SIWARP_WR_ATOMIC_CMP_SWP, 0, 0x77, 0, 0 },
        { SIWARP_WR_ATOMIC_MASKED_CMP_SWP, 0x7, 0x700, 0xff, 0xff00 },
        { SIWARP_WR_IMM_DATA, 0, 0, 0, 0 },
        { SIWARP_WR_IMM_DATA_SE, 0, 0, 0, 0 },
    };
    const unsigned nops = sizeof(ops) / sizeof(ops[0]);
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_mr *rmr;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr at;
    struct siwarp_conn_param p;
    uint64_t taddr;
    uint32_t stag;
    unsigned done = 0;

    if (siwarp_ctx_create(&ctx) || siwarp_alloc_pd(ctx, &pd) || siwarp_create_cq(ctx, 64, &cq) ||
        siwarp_reg_mr(pd, res, sizeof(res), SIWARP_ACCESS_LOCAL_WRITE, &rmr) ||
        !(qp = new_qp(pd, cq)))
        return 1;
    siwarp_conn_param_default(&p);
    p.rfc7306 = 1;
    if (siwarp_connect(qp, (struct sockaddr *)&sin, sizeof(sin), &p) ||
        siwarp_connect_wait(qp, 10000) || siwarp_query_qp(qp, &at) || at.state != SIWARP_QPS_RTS) {
        fprintf(stderr, "connect failed\n");
        return 1;
    }
    if (!at.rfc7306 || at.peer_private_data_len != 12) {
        fprintf(stderr, "RFC 7306 not negotiated\n");
        return 1;
    }
    memcpy(&taddr, at.peer_private_data, 8);
    memcpy(&stag, at.peer_private_data + 8, 4);
    printf("target stag=%u\n", stag);
    for (unsigned i = 0; i < nops; i++) {
        struct siwarp_sge s = { &res[i], 8, siwarp_mr_stag(rmr) };
        struct siwarp_send_wr wr = { .wr_id = i, .opcode = ops[i].op, .sg_list = &s,
                                     .num_sge = i < 4, .send_flags = SIWARP_SEND_SIGNALED };
        wr.atomic.remote_addr = taddr;
        wr.atomic.rkey = stag;
        wr.atomic.compare_add = ops[i].ca;
        wr.atomic.swap = ops[i].sw;
        wr.atomic.compare_add_mask = ops[i].cm;
        wr.atomic.swap_mask = ops[i].sm;
        wr.imm_data = 0x1122334455667700ull + i;
        if (siwarp_post_send(qp, &wr, NULL))
            return 1;
    }
    for (int spin = 0; spin < 10000 && done < nops; spin++) {
        struct siwarp_wc wc;
        int n = siwarp_poll_cq(cq, 1, &wc);
        if (n < 0 || (n == 1 && wc.status != SIWARP_WC_SUCCESS)) {
            fprintf(stderr, "wr %llu: %s\n", (unsigned long long)wc.wr_id,
                    siwarp_wc_status_str(wc.status));
            return 1;
        }
        if (n == 1)
            done++;
        else
            siwarp_wait(ctx, 1);
    }
    siwarp_disconnect(qp);
    for (int i = 0; i < 100; i++)
        siwarp_wait(ctx, 1);
    return done == nops ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "-s"))
        return serve();
    if (argc == 3 && !strcmp(argv[1], "-c"))
        return run_client(atoi(argv[2]));
    fprintf(stderr, "usage: %s -s | -c PORT\n", argv[0]);
    return 2;
}
