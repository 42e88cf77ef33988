/*
 * fuzz_rx_env.h - the receiving side of fuzz_rx: one siwarp QP on one end
 * of a socketpair with registered memory at a fixed address, set up
 * identically by the harness (fuzz_rx.c) and by the seed generator
 * (gen_seeds.c), so that STags and tagged offsets in a committed seed name
 * the same memory in every run.
 *
 * Determinism: the context's STag key generator is reseeded with a fixed
 * value before the first registration, and the memory is mapped at
 * FZ_BASE (outside every AddressSanitizer range) when the kernel allows.
 *
 * Memory map (4 KiB pages from FZ_BASE):
 *   0      guard (PROT_NONE)
 *   1      canary
 *   2-3    A  ACC_ALL, pd          remote writes and reads may land here
 *   4      canary
 *   5      B  REMOTE_READ, pd      source of Read Requests; never written
 *   6      C  ACC_ALL, pd, invalidated before the input: never written
 *   7      D  ACC_ALL, pd2 (another protection domain): never written
 *   8      canary
 *   9      guard (PROT_NONE)
 * Anything but A changing is a write outside what the peer may write.
 *
 * The first input byte (cfg) selects the negotiated parameters:
 *   bit 0 CRC, bit 1 markers, bit 2 P2P, bits 3-4 RTR type (0 none, 1 Send,
 *   2 Write, 3 Read), bit 5 this end is the initiator, bit 6 receives
 *   posted, bit 7 an RDMA Read posted (its response may come in the input).
 * The second byte (split) selects how the rest is cut into writes.
 */
#ifndef FUZZ_RX_ENV_H
#define FUZZ_RX_ENV_H

#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "swp.h"

#define FZ_PAGE       4096u
#define FZ_PAGES      10u
#define FZ_BASE       ((void *)0x300000000000ull)
#define FZ_CANARY     0xa5
#define FZ_FILL_A     0x00
#define FZ_FILL_B     0xb0
#define FZ_FILL_C     0xc0
#define FZ_FILL_D     0xd0
#define FZ_RNG_SEED   0x5157a9c0ffee1234ull
#define FZ_A_LEN      (2 * FZ_PAGE)
#define FZ_READ_LEN   256u            /* the Read this end posts (cfg bit 7) */
#define FZ_READ_SINK  4096u           /* offset of its sink in A */
#define FZ_READ_RADDR (0x300000000000ull + 0x100000)  /* peer buffer it names */
#define FZ_PEER_SEED  0x0123456789abcdefull   /* the generator's sending ctx */

#define FZ_CFG_CRC       0x01
#define FZ_CFG_MARKERS   0x02
#define FZ_CFG_P2P       0x04
#define FZ_CFG_RTR_SHIFT 3
#define FZ_CFG_INITIATOR 0x20
#define FZ_CFG_RECVS     0x40
#define FZ_CFG_READ      0x80

struct fz_env {
    uint8_t *map;                    /* FZ_PAGES pages */
    uint8_t *a, *b, *c, *d;
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd, *pd2;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_mr *mra, *mrb, *mrc, *mrd;
    int peer;                        /* the raw end of the socketpair */
};

/* Map the area once per process (fixed address if possible). */
static inline uint8_t *fz_map(void)
{
    static uint8_t *m;

    if (m)
        return m;
    m = mmap(FZ_BASE, FZ_PAGES * FZ_PAGE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m == MAP_FAILED || m != FZ_BASE) {
        if (m != MAP_FAILED)
            munmap(m, FZ_PAGES * FZ_PAGE);
        m = mmap(NULL, FZ_PAGES * FZ_PAGE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            abort();
    }
    mprotect(m, FZ_PAGE, PROT_NONE);
    mprotect(m + 9 * FZ_PAGE, FZ_PAGE, PROT_NONE);
    return m;
}

static inline void fz_fill(struct fz_env *e)
{
    memset(e->map + 1 * FZ_PAGE, FZ_CANARY, FZ_PAGE);
    memset(e->a, FZ_FILL_A, FZ_A_LEN);
    memset(e->map + 4 * FZ_PAGE, FZ_CANARY, FZ_PAGE);
    memset(e->b, FZ_FILL_B, FZ_PAGE);
    memset(e->c, FZ_FILL_C, FZ_PAGE);
    memset(e->d, FZ_FILL_D, FZ_PAGE);
    memset(e->map + 8 * FZ_PAGE, FZ_CANARY, FZ_PAGE);
}

/* Returns the index of the first byte outside A that changed, or -1. */
static inline long fz_check(const struct fz_env *e)
{
    static const struct { unsigned page; uint8_t v; } keep[] = {
        { 1, FZ_CANARY }, { 4, FZ_CANARY }, { 5, FZ_FILL_B }, { 6, FZ_FILL_C },
        { 7, FZ_FILL_D }, { 8, FZ_CANARY },
    };
    static uint8_t ref[256][FZ_PAGE];
    static int ref_done;
    if (!ref_done) {
        for (unsigned v = 0; v < 256; v++)
            memset(ref[v], (int)v, FZ_PAGE);
        ref_done = 1;
    }
    for (unsigned k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
        const uint8_t *p = e->map + keep[k].page * FZ_PAGE;
        if (memcmp(p, ref[keep[k].v], FZ_PAGE) == 0)
            continue;
        for (unsigned i = 0; i < FZ_PAGE; i++)
            if (p[i] != keep[k].v)
                return (long)(keep[k].page * FZ_PAGE + i);
    }
    return -1;
}

/* The STag the seed generator's sender gets for its first region: a
 * context seeded with FZ_PEER_SEED registering one region.  The Read this
 * end posts names it, so recorded Read Responses match. */
static inline uint32_t fz_read_rkey(void)
{
    static uint32_t stag;
    static uint8_t dummy[8];
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_mr *mr;

    if (stag)
        return stag;
    if (siwarp_ctx_create(&ctx) < 0)
        abort();
    ctx->rng = FZ_PEER_SEED;
    if (siwarp_alloc_pd(ctx, &pd) < 0 || siwarp_reg_mr(pd, dummy, sizeof(dummy), 0, &mr) < 0)
        abort();
    stag = siwarp_mr_stag(mr);
    siwarp_dereg_mr(mr);
    siwarp_dealloc_pd(pd);
    siwarp_ctx_destroy(ctx);
    return stag;
}

static inline struct swp_nego fz_nego(uint8_t cfg)
{
    static const int rtr[4] = { 0, SIWARP_RTR_SEND, SIWARP_RTR_WRITE, SIWARP_RTR_READ };
    struct swp_nego n;

    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = cfg & FZ_CFG_CRC;
    n.markers_tx = n.markers_rx = (cfg & FZ_CFG_MARKERS) != 0;
    n.p2p = cfg & FZ_CFG_P2P;
    n.rtr = n.p2p ? rtr[(cfg >> FZ_CFG_RTR_SHIFT) & 3] : 0;
    n.initiator = cfg & FZ_CFG_INITIATOR;
    n.ird = n.ord = 4;
    n.mulpdu = 4096;
    n.max_rx_ulpdu = 16384;
    return n;
}

/* Build the receiving QP; `fd` is its end of a connected stream socket.
 * Returns 0 or a negative errno (everything built so far stays in *e for
 * fz_env_fini). */
static inline int fz_env_init(struct fz_env *e, uint8_t cfg, int fd)
{
    struct siwarp_qp_init_attr a;
    struct swp_nego n = fz_nego(cfg);
    const int all = SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE |
                    SIWARP_ACCESS_REMOTE_READ;
    int rc;

    memset(e, 0, sizeof(*e));
    e->peer = -1;
    e->map = fz_map();
    e->a = e->map + 2 * FZ_PAGE;
    e->b = e->map + 5 * FZ_PAGE;
    e->c = e->map + 6 * FZ_PAGE;
    e->d = e->map + 7 * FZ_PAGE;
    fz_fill(e);
    if ((rc = siwarp_ctx_create(&e->ctx)) < 0)
        return rc;
    e->ctx->rng = FZ_RNG_SEED;
    if ((rc = siwarp_alloc_pd(e->ctx, &e->pd)) < 0 ||
        (rc = siwarp_alloc_pd(e->ctx, &e->pd2)) < 0 ||
        (rc = siwarp_create_cq(e->ctx, 256, &e->cq)) < 0)
        return rc;
    memset(&a, 0, sizeof(a));
    a.send_cq = a.recv_cq = e->cq;
    a.max_send_wr = a.max_recv_wr = 16;
    a.max_sge = 2;
    if ((rc = siwarp_create_qp(e->pd, &a, &e->qp)) < 0 ||
        (rc = siwarp_reg_mr(e->pd, e->a, FZ_A_LEN, all, &e->mra)) < 0 ||
        (rc = siwarp_reg_mr(e->pd, e->b, FZ_PAGE, SIWARP_ACCESS_REMOTE_READ, &e->mrb)) < 0 ||
        (rc = siwarp_reg_mr(e->pd, e->c, FZ_PAGE, all, &e->mrc)) < 0 ||
        (rc = siwarp_reg_mr(e->pd2, e->d, FZ_PAGE, all, &e->mrd)) < 0 ||
        (rc = siwarp_invalidate_stag(e->pd, siwarp_mr_stag(e->mrc))) < 0)
        return rc;
    if (cfg & FZ_CFG_RECVS) {
        /* four receives of 100 + 50 bytes in two SGEs, then one of 1 byte */
        for (uint32_t i = 0; i < 5; i++) {
            struct siwarp_sge s[2] = {
                { e->a + i * 512, i < 4 ? 100 : 1, siwarp_mr_stag(e->mra) },
                { e->a + i * 512 + 200, 50, siwarp_mr_stag(e->mra) },
            };
            struct siwarp_recv_wr r = { .wr_id = 100 + i, .sg_list = s,
                                        .num_sge = i < 4 ? 2 : 1 };
            if ((rc = siwarp_post_recv(e->qp, &r, NULL)) < 0)
                return rc;
        }
    }
    /* on failure the QP still owns fd: siwarp_destroy_qp closes it */
    if ((rc = swp_qp_attach_fd(e->qp, fd, &n)) < 0)
        return rc;
    if (cfg & FZ_CFG_READ) {
        struct siwarp_sge s = { e->a + FZ_READ_SINK, FZ_READ_LEN, siwarp_mr_stag(e->mra) };
        struct siwarp_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
                                    .opcode = SIWARP_WR_READ,
                                    .send_flags = SIWARP_SEND_SIGNALED };
        w.rdma.rkey = fz_read_rkey();
        w.rdma.remote_addr = FZ_READ_RADDR;
        if ((rc = siwarp_post_send(e->qp, &w, NULL)) < 0)
            return rc;
    }
    return 0;
}

static inline void fz_env_fini(struct fz_env *e)
{
    if (e->qp)
        siwarp_destroy_qp(e->qp);
    if (e->mra)
        siwarp_dereg_mr(e->mra);
    if (e->mrb)
        siwarp_dereg_mr(e->mrb);
    if (e->mrc)
        siwarp_dereg_mr(e->mrc);
    if (e->mrd)
        siwarp_dereg_mr(e->mrd);
    if (e->cq)
        siwarp_destroy_cq(e->cq);
    if (e->pd)
        siwarp_dealloc_pd(e->pd);
    if (e->pd2)
        siwarp_dealloc_pd(e->pd2);
    if (e->ctx)
        siwarp_ctx_destroy(e->ctx);
    if (e->peer >= 0)
        close(e->peer);
    memset(e, 0, sizeof(*e));
    e->peer = -1;
}

#endif /* FUZZ_RX_ENV_H */
