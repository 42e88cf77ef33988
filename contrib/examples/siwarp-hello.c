/*
 * siwarp-hello.c - the README's libsiwarp example as a whole program: one
 * process listens on loopback, connects to itself, and sends one message
 * across the iWARP connection (MPA v2, CRC).  Exit status 0 when the
 * message arrived intact, 1 otherwise, with the failing call named.
 *
 * Build against an installed libsiwarp:
 *   cc siwarp-hello.c $(pkg-config --cflags --libs siwarp) -o siwarp-hello
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <siwarp/siwarp.h>

#define CHECK(call) do {                                                     \
        int rc_ = (call);                                                    \
        if (rc_ < 0) {                                                       \
            fprintf(stderr, "siwarp-hello: %s: %s\n", #call, strerror(-rc_)); \
            return 1;                                                        \
        }                                                                    \
    } while (0)

static int make_qp(struct siwarp_pd *pd, struct siwarp_cq *cq, struct siwarp_qp **qp)
{
    struct siwarp_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .max_send_wr = 8,
                                     .max_recv_wr = 8, .max_sge = 1 };
    return siwarp_create_qp(pd, &a, qp);
}

int main(void)
{
    static char tx[64] = "hello over iWARP", rx[64];
    struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_storage addr;
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *client, *server;
    struct siwarp_mr *txmr, *rxmr;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_conn_param p;
    struct siwarp_wc wc;
    int n = 0, got = 0;

    CHECK(siwarp_ctx_create(&ctx));
    CHECK(siwarp_alloc_pd(ctx, &pd));
    CHECK(siwarp_create_cq(ctx, 16, &cq));
    CHECK(make_qp(pd, cq, &client));
    CHECK(make_qp(pd, cq, &server));
    CHECK(siwarp_reg_mr(pd, tx, sizeof(tx), 0, &txmr));
    CHECK(siwarp_reg_mr(pd, rx, sizeof(rx), SIWARP_ACCESS_LOCAL_WRITE, &rxmr));

    siwarp_conn_param_default(&p);                  /* MPA v2, CRC, P2P */
    CHECK(siwarp_listen(ctx, (struct sockaddr *)&any, sizeof(any), &p, &l));
    CHECK(siwarp_listener_addr(l, &addr));          /* the port the kernel chose */
    CHECK(siwarp_connect(client, (struct sockaddr *)&addr, sizeof(struct sockaddr_in), &p));
    CHECK(siwarp_get_conn_request_wait(l, 10000, &req));

    /* a Send needs a posted receive at the peer (RFC 5041 section 7.2) */
    struct siwarp_sge rsge = { rx, sizeof(rx), siwarp_mr_stag(rxmr) };
    struct siwarp_recv_wr rwr = { .wr_id = 2, .sg_list = &rsge, .num_sge = 1 };
    CHECK(siwarp_post_recv(server, &rwr, NULL));
    CHECK(siwarp_accept(req, server, &p));
    CHECK(siwarp_connect_wait(client, 10000));

    struct siwarp_sge ssge = { tx, (uint32_t)strlen(tx) + 1, siwarp_mr_stag(txmr) };
    struct siwarp_send_wr swr = { .wr_id = 1, .sg_list = &ssge, .num_sge = 1,
                                  .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
    CHECK(siwarp_post_send(client, &swr, NULL));

    /* both completions, the Send's and the receive's; bounded */
    for (int tries = 0; got < 2 && tries < 100; tries++) {
        int w = siwarp_cq_wait(cq, 100);
        if (w < 0 && w != -ETIMEDOUT)
            CHECK(w);
        while ((n = siwarp_poll_cq(cq, 1, &wc)) > 0) {
            if (wc.status != SIWARP_WC_SUCCESS) {
                fprintf(stderr, "siwarp-hello: completion %llu: %s\n",
                        (unsigned long long)wc.wr_id, siwarp_wc_status_str(wc.status));
                return 1;
            }
            got++;
        }
        CHECK(n);
    }
    if (got < 2 || strcmp(rx, tx) != 0) {
        fprintf(stderr, "siwarp-hello: %d of 2 completions, received \"%.63s\"\n", got, rx);
        return 1;
    }
    printf("siwarp-hello: received \"%s\"\n", rx);

    CHECK(siwarp_disconnect(client));
    CHECK(siwarp_destroy_qp(client));
    CHECK(siwarp_destroy_qp(server));
    CHECK(siwarp_listener_destroy(l));
    CHECK(siwarp_dereg_mr(txmr));
    CHECK(siwarp_dereg_mr(rxmr));
    CHECK(siwarp_destroy_cq(cq));
    CHECK(siwarp_dealloc_pd(pd));
    siwarp_ctx_destroy(ctx);
    return 0;
}
