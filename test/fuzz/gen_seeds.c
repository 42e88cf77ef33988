/*
 * gen_seeds.c - writes the seed corpora of the fuzz harnesses:
 *   corpus/fuzz_rx/    streams a real siwarp sender transmits to the
 *                      fuzz_rx receiver (recorded by relaying through this
 *                      program), for many framing modes and operation mixes;
 *   corpus/fuzz_mpa/   MPA Requests and Replies from the builders, siw's
 *                      frames from the captures, malformed headers;
 *   corpus/fuzz_term/  Terminates for every code, with copied headers.
 * Usage: gen_seeds OUTDIR.  Deterministic: the same build writes the same
 * files (STag keys are seeded, memory lives at fixed addresses).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_rx_env.h"
#include "mpa.h"

static const char *outdir;

static void put(const char *harness, const char *name, const uint8_t *b, size_t n)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", outdir, harness);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/%s", outdir, harness, name);
    f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
        perror(path);
        exit(1);
    }
}

/* ---- fuzz_rx: record a sender's stream ------------------------------------ */

enum op { OP_END, OP_WRITE, OP_WRITE_BIG, OP_SEND, OP_SEND_SE, OP_SEND_INV, OP_READ,
          OP_WRITE_RO, OP_WRITE_PD2, OP_WRITE_INVAL, OP_WRITE_OOB, OP_SEND_LONG, OP_TERM };

static struct {
    uint8_t *buf;
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_mr *mr;
} snd;

static void sender_init(uint8_t cfg, int fd)
{
    struct siwarp_qp_init_attr a;
    struct swp_nego n = fz_nego(cfg);

    if (!snd.buf) {
        snd.buf = mmap((void *)FZ_READ_RADDR, 65536, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (snd.buf != (void *)FZ_READ_RADDR) {
            fprintf(stderr, "gen_seeds: cannot map the sender buffer at %#llx\n", FZ_READ_RADDR);
            exit(1);
        }
        for (unsigned i = 0; i < 65536; i++)
            snd.buf[i] = (uint8_t)(i * 7 + 3);
    }
    n.initiator = !n.initiator;
    if (siwarp_ctx_create(&snd.ctx) < 0)
        exit(1);
    snd.ctx->rng = FZ_PEER_SEED;
    memset(&a, 0, sizeof(a));
    if (siwarp_alloc_pd(snd.ctx, &snd.pd) < 0 || siwarp_create_cq(snd.ctx, 256, &snd.cq) < 0)
        exit(1);
    a.send_cq = a.recv_cq = snd.cq;
    a.max_send_wr = a.max_recv_wr = 32;
    a.max_sge = 2;
    if (siwarp_create_qp(snd.pd, &a, &snd.qp) < 0 ||
        siwarp_reg_mr(snd.pd, snd.buf, 65536, SIWARP_ACCESS_LOCAL_WRITE |
                      SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ, &snd.mr) < 0)
        exit(1);
    if (siwarp_mr_stag(snd.mr) != fz_read_rkey())
        exit(2);
    if (swp_qp_attach_fd(snd.qp, fd, &n) < 0)
        exit(1);
}

static void sender_fini(void)
{
    siwarp_destroy_qp(snd.qp);
    siwarp_dereg_mr(snd.mr);
    siwarp_destroy_cq(snd.cq);
    siwarp_dealloc_pd(snd.pd);
    siwarp_ctx_destroy(snd.ctx);
}

static void post(struct fz_env *e, enum op op)
{
    struct siwarp_sge s = { snd.buf, 0, siwarp_mr_stag(snd.mr) };
    struct siwarp_send_wr w;

    memset(&w, 0, sizeof(w));
    w.sg_list = &s;
    w.num_sge = 1;
    w.wr_id = op;
    w.rdma.rkey = siwarp_mr_stag(e->mra);
    switch (op) {
    case OP_WRITE:      w.opcode = SIWARP_WR_WRITE; s.length = 100; w.rdma.remote_addr = (uintptr_t)e->a + 5; break;
    case OP_WRITE_BIG:  w.opcode = SIWARP_WR_WRITE; s.length = 7000; w.rdma.remote_addr = (uintptr_t)e->a + 1000; break;
    case OP_SEND:       w.opcode = SIWARP_WR_SEND; s.length = 120; break;
    case OP_SEND_SE:    w.opcode = SIWARP_WR_SEND_SE; s.length = 10; break;
    case OP_SEND_INV:   w.opcode = SIWARP_WR_SEND_INV; s.length = 30; w.invalidate_stag = siwarp_mr_stag(e->mra); break;
    case OP_SEND_LONG:  w.opcode = SIWARP_WR_SEND; s.length = 151; break;
    case OP_READ:       w.opcode = SIWARP_WR_READ; s.length = 64; w.rdma.rkey = siwarp_mr_stag(e->mrb);
                        w.rdma.remote_addr = (uintptr_t)e->b + 8; break;
    case OP_WRITE_RO:   w.opcode = SIWARP_WR_WRITE; s.length = 8; w.rdma.rkey = siwarp_mr_stag(e->mrb);
                        w.rdma.remote_addr = (uintptr_t)e->b; break;
    case OP_WRITE_PD2:  w.opcode = SIWARP_WR_WRITE; s.length = 8; w.rdma.rkey = siwarp_mr_stag(e->mrd);
                        w.rdma.remote_addr = (uintptr_t)e->d; break;
    case OP_WRITE_INVAL: w.opcode = SIWARP_WR_WRITE; s.length = 8; w.rdma.rkey = siwarp_mr_stag(e->mrc);
                        w.rdma.remote_addr = (uintptr_t)e->c; break;
    case OP_WRITE_OOB:  w.opcode = SIWARP_WR_WRITE; s.length = 16; w.rdma.remote_addr = (uintptr_t)e->a + FZ_A_LEN - 8; break;
    case OP_TERM:       siwarp_qp_to_error(snd.qp); return;
    case OP_END:        return;
    }
    if (siwarp_post_send(snd.qp, &w, NULL) < 0) {
        fprintf(stderr, "gen_seeds: post op %d failed\n", op);
        exit(1);
    }
}

static void relay(struct fz_env *e, int mid_s, int mid_t, uint8_t *rec, size_t *n, size_t max)
{
    for (int i = 0; i < 300; i++) {
        uint8_t b[65536];
        ssize_t r;
        struct siwarp_wc wc[8];

        siwarp_progress(snd.ctx);
        while ((r = recv(mid_s, b, sizeof(b), MSG_DONTWAIT)) > 0) {
            if (*n + (size_t)r > max)
                r = (ssize_t)(max - *n);
            memcpy(rec + *n, b, (size_t)r);
            *n += (size_t)r;
            if (send(mid_t, b, (size_t)r, MSG_NOSIGNAL) < 0)
                break;
        }
        siwarp_progress(e->ctx);
        while ((r = recv(mid_t, b, sizeof(b), MSG_DONTWAIT)) > 0)
            if (send(mid_s, b, (size_t)r, MSG_NOSIGNAL) < 0)
                break;
        while (siwarp_poll_cq(e->cq, 8, wc) > 0)
            ;
        while (siwarp_poll_cq(snd.cq, 8, wc) > 0)
            ;
    }
}

static void rx_seed(const char *name, uint8_t cfg, uint8_t split, const enum op *ops)
{
    static uint8_t rec[1 << 20];
    struct fz_env e;
    int tv[2], sv[2];
    size_t n = 2;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, tv) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        exit(1);
    if (fz_env_init(&e, cfg, tv[0]) < 0)
        exit(1);
    e.peer = tv[1];
    sender_init(cfg, sv[0]);
    rec[0] = cfg;
    rec[1] = split;
    relay(&e, sv[1], tv[1], rec, &n, sizeof(rec));    /* RTRs, the target's Read */
    for (; *ops != OP_END; ops++) {
        post(&e, *ops);
        relay(&e, sv[1], tv[1], rec, &n, sizeof(rec));
    }
    put("fuzz_rx", name, rec, n);
    sender_fini();
    close(sv[1]);
    fz_env_fini(&e);
}

static void gen_rx(void)
{
    static const enum op mix[] = { OP_WRITE, OP_SEND, OP_SEND_SE, OP_READ, OP_WRITE_BIG,
                                   OP_SEND_INV, OP_WRITE, OP_END };
    static const enum op writes[] = { OP_WRITE, OP_WRITE_BIG, OP_READ, OP_READ, OP_END };
    static const enum op term[] = { OP_WRITE, OP_TERM, OP_END };
    static const enum op bad[][3] = {
        { OP_WRITE_RO, OP_END }, { OP_WRITE_PD2, OP_END }, { OP_WRITE_INVAL, OP_END },
        { OP_WRITE_OOB, OP_END }, { OP_SEND_LONG, OP_END }, { OP_SEND, OP_END },
    };
    static const char *badname[] = { "write_readonly", "write_other_pd", "write_invalidated",
                                     "write_beyond_end", "send_too_long", "send_no_recv" };
    static const uint8_t framing[] = { 0x00, 0x01, 0x02, 0x03 };
    char name[64];

    for (unsigned f = 0; f < 4; f++) {
        uint8_t c = framing[f];
        snprintf(name, sizeof(name), "mix_f%u", c);
        rx_seed(name, c | FZ_CFG_RECVS | FZ_CFG_READ, (uint8_t)f, mix);
        snprintf(name, sizeof(name), "mix_split_f%u", c);
        rx_seed(name, c | FZ_CFG_RECVS | FZ_CFG_READ, (uint8_t)(4 + f), mix);
        snprintf(name, sizeof(name), "writes_f%u", c);
        rx_seed(name, c, 0, writes);
        snprintf(name, sizeof(name), "terminate_f%u", c);
        rx_seed(name, c | FZ_CFG_RECVS, 1, term);
    }
    /* P2P: each RTR type, this end responder (waits for the RTR) and initiator */
    for (unsigned rtr = 1; rtr <= 3; rtr++) {
        for (unsigned ini = 0; ini < 2; ini++) {
            uint8_t c = (uint8_t)(FZ_CFG_CRC | FZ_CFG_P2P | rtr << FZ_CFG_RTR_SHIFT |
                                  (ini ? FZ_CFG_INITIATOR : 0) | FZ_CFG_RECVS);
            snprintf(name, sizeof(name), "p2p_rtr%u_%s", rtr, ini ? "initiator" : "responder");
            rx_seed(name, c, (uint8_t)rtr, mix);
        }
    }
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        rx_seed(badname[i], (uint8_t)(FZ_CFG_CRC | (i == 4 ? FZ_CFG_RECVS : 0)), 0, bad[i]);
}

/* ---- fuzz_mpa ------------------------------------------------------------- */

static void mpa_seed(const char *name, uint8_t a, uint8_t b, uint8_t mss, const uint8_t *f, int n)
{
    uint8_t buf[3 + SWP_MPA_RR_MAX_LEN + 8];

    if (n < 0 || n > (int)(sizeof(buf) - 3))
        exit(3);
    buf[0] = a;
    buf[1] = b;
    buf[2] = mss;
    memcpy(buf + 3, f, (size_t)n);
    put("fuzz_mpa", name, buf, (size_t)n + 3);
}

static void gen_mpa(void)
{
    /* siw's frames, as in iwarp-traces and test_mpa.c */
    static const uint8_t siw_req[] = {
        'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
        0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01 };
    static const uint8_t siw_req_p2p[] = {
        'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
        0x50, 0x02, 0x00, 0x04, 0x80, 0x01, 0xc0, 0x01 };
    static const uint8_t siw_rep[] = {
        'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e',
        0x10, 0x02, 0x00, 0x04, 0x00, 0x80, 0x00, 0x80 };
    uint8_t f[SWP_MPA_RR_MAX_LEN];
    char name[64];
    int n;

    mpa_seed("siw_request", 0x10, 0x33, 0xff, siw_req, sizeof(siw_req));
    mpa_seed("siw_request_p2p", 0x14 | 0x60, 0x33, 0x08, siw_req_p2p, sizeof(siw_req_p2p));
    mpa_seed("siw_reply", 0x11, 0x33, 0xff, siw_rep, sizeof(siw_rep));
    /* requests from our builder, every flag combination that matters */
    for (unsigned v = 0; v < 64; v++) {
        struct siwarp_conn_param p;
        siwarp_conn_param_default(&p);
        p.mpa_rev = (v & 1) ? 1 : 2;
        p.crc = !!(v & 2);
        p.markers = !!(v & 4);
        p.p2p = !!(v & 8);
        p.rtr = (v & 16) ? SIWARP_RTR_SEND : SIWARP_RTR_READ | SIWARP_RTR_WRITE;
        p.big_fpdu = (v & 32) ? 65535 : 0;
        if (v % 3 == 0) {
            p.private_data = "application private data";
            p.private_data_len = 24;
        }
        n = swp_mpa_build_request(f, sizeof(f), &p);
        snprintf(name, sizeof(name), "request_%02u", v);
        mpa_seed(name, (uint8_t)(0x10 | 0x08 * (v & 1) | 0x60), (uint8_t)(0x55 ^ v), (uint8_t)v, f, n);
        /* and the reply our responder gives to it */
        {
            struct swp_mpa_rr_info ri;
            struct swp_nego ng;
            struct siwarp_conn_param ours;
            const char *why;
            bool rej;
            siwarp_conn_param_default(&ours);
            ours.markers = 1;
            ours.big_fpdu = 32768;
            if (swp_mpa_parse_rr(f, (size_t)n, false, &ri) == 0 &&
                swp_mpa_nego_responder(&ours, &ri, 1460, &ng, &rej, &why) == 0) {
                int m = swp_mpa_build_reply(f, sizeof(f), &ng, &ri, ours.big_fpdu, "rep", 3);
                snprintf(name, sizeof(name), "reply_%02u", v);
                /* as initiator with the parameters that built the request */
                mpa_seed(name, (uint8_t)(1 | (p.mpa_rev == 1 ? 2 : 0) | (p.crc ? 4 : 0) |
                                         (p.markers ? 8 : 0) | (p.p2p ? 0x10 : 0) | p.rtr << 5),
                         (uint8_t)((v & 32) ? 0x0c : 0), 22, f, m);
            }
        }
    }
    n = swp_mpa_build_reject(f, sizeof(f), &(struct swp_mpa_rr_info){ .rev = 2, .enhanced = true },
                             NULL, "busy", 4);
    mpa_seed("reject_v2", 0x11, 0, 22, f, n);
    n = swp_mpa_build_reject(f, sizeof(f), &(struct swp_mpa_rr_info){ .rev = 1 }, NULL, NULL, 0);
    mpa_seed("reject_v1", 0x13, 0, 22, f, n);
    /* malformed: enhanced without block, pd 513, pd 0xffff, rev 3, short */
    memcpy(f, siw_req, sizeof(siw_req));
    swp_put16(f + 18, 2);
    mpa_seed("enh_no_block", 0x10, 0, 22, f, 22);
    swp_put16(f + 18, 513);
    mpa_seed("pd_513", 0x10, 0, 22, f, 20);
    swp_put16(f + 18, 0xffff);
    mpa_seed("pd_ffff", 0x10, 0, 22, f, 20);
    memcpy(f, siw_req, sizeof(siw_req));
    f[17] = 3;
    mpa_seed("rev3", 0x10, 0, 22, f, sizeof(siw_req));
    mpa_seed("short", 0x10, 0, 22, siw_req, 19);
}

/* ---- fuzz_term ------------------------------------------------------------ */

static void gen_term(void)
{
    static const uint32_t codes[] = {
        0x0000, 0x0001, 0x0100, 0x0102, 0x0103, 0x0104, 0x0105, 0x0106, 0x0200, 0x0201,
        0x0205, 0x0206, 0x0209, 0x1000, 0x1100, 0x1101, 0x1102, 0x1103, 0x1104, 0x1106,
        0x1201, 0x1202, 0x1203, 0x1204, 0x1205, 0x1206, 0x2001, 0x2002, 0x2003, 0x2004,
        0x2005, 0x2006, 0x2007, 0x3fff,
    };
    uint8_t bad[2 + SWP_HDR_READ_REQ], msg[SWP_TERM_MAX_LEN];
    char name[64];

    for (unsigned i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        uint32_t len;
        swp_put16(bad, SWP_HDR_TAGGED);
        swp_ddp_build_tagged(bad + 2, SWP_OP_WRITE, true, 0x1234, 0x5678);
        if (i % 3 == 1) {
            swp_put16(bad, SWP_HDR_READ_REQ);
            swp_ddp_build_untagged(bad + 2, SWP_OP_READ_REQ, true, 1, 1, 0, 0);
            memset(bad + 2 + SWP_HDR_UNTAGGED, 0x11, SWP_HDR_READ_REQ - SWP_HDR_UNTAGGED);
        }
        len = swp_rdmap_build_term(msg, i + 1, codes[i], i % 3 == 2 ? NULL : bad,
                                   i % 3 == 1 ? sizeof(bad) : 2 + SWP_HDR_TAGGED);
        snprintf(name, sizeof(name), "term_%04x", codes[i]);
        put("fuzz_term", name, msg, len);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    mkdir(outdir, 0755);
    gen_mpa();
    gen_term();
    gen_rx();
    return 0;
}
