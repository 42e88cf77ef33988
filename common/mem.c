/*
 * mem.c - protection domains, memory regions and the STag table.
 *
 * An STag is a 24-bit table index and an 8-bit key (RFC 5040 2.1: the
 * consumer-owned key).  Keys are drawn at random and a re-used index never
 * gets the key it had just before, so a stale or guessed STag is refused.
 * Remote accesses are checked in a fixed order: STag valid -> protection
 * domain -> access rights -> bounds (with overflow of to + len checked).
 */
#include <stdlib.h>
#include <string.h>

#include "swp.h"

#define SWP_STAG_INDEX(s)  ((s) >> 8)
#define SWP_STAG_KEY(s)    ((uint8_t)((s) & 0xff))
#define SWP_STAG_MAX_INDEX 0xffffffu

static uint32_t pd_ids;

int siwarp_alloc_pd(struct siwarp_ctx *ctx, struct siwarp_pd **out)
{
    struct siwarp_pd *pd;

    if (!ctx || !out)
        return -EINVAL;
    if (ctx->hw) return swp_hw_alloc_pd(ctx, out);
    pd = calloc(1, sizeof(*pd));
    if (!pd)
        return -ENOMEM;
    pd->ctx = ctx;
    swp_lock(ctx);
    pd->id = ++pd_ids;
    swp_unlock(ctx);
    *out = pd;
    return 0;
}

int siwarp_dealloc_pd(struct siwarp_pd *pd)
{
    if (!pd)
        return -EINVAL;
    if (pd->ctx->hw) return swp_hw_dealloc_pd(pd);
    if (pd->refs)
        return -EBUSY;
    free(pd);
    return 0;
}

static int swp_stag_grow(struct siwarp_ctx *ctx)
{
    uint32_t n = ctx->nstags ? ctx->nstags * 2 : 256;
    struct swp_stag_ent *t;

    if (n > SWP_STAG_MAX_INDEX + 1)
        n = SWP_STAG_MAX_INDEX + 1;
    if (n <= ctx->nstags)
        return -ENOSPC;
    t = realloc(ctx->stags, n * sizeof(*t));
    if (!t)
        return -ENOMEM;
    /* index 0 is never handed out: STag 0 names nothing (zero-length RTRs) */
    for (uint32_t i = ctx->nstags; i < n; i++) {
        t[i].mr = NULL;
        t[i].key = (uint8_t)swp_rand32(ctx);
        t[i].next_free = (i + 1 < n) ? i + 1 : 0;
    }
    if (ctx->nstags == 0) {
        ctx->stag_free = 1;
    } else {
        /* append the new range to the free list */
        t[n - 1].next_free = ctx->stag_free;
        ctx->stag_free = ctx->nstags;
    }
    ctx->stags = t;
    ctx->nstags = n;
    return 0;
}

int siwarp_reg_mr(struct siwarp_pd *pd, void *addr, size_t length, int access,
                  struct siwarp_mr **out)
{
    struct siwarp_ctx *ctx;
    struct siwarp_mr *mr;
    uint32_t idx;
    uint8_t key;
    int rc;

    if (!pd || !out || (!addr && length))
        return -EINVAL;
    if (pd->ctx->hw) return swp_hw_reg_mr(pd, addr, length, access, out);
    if (access & ~(SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE |
                   SIWARP_ACCESS_REMOTE_READ | SIWARP_ACCESS_REMOTE_ATOMIC))
        return -EINVAL;
    /* as libibverbs: remote write and remote atomic need local write */
    if ((access & (SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_ATOMIC)) &&
        !(access & SIWARP_ACCESS_LOCAL_WRITE))
        return -EINVAL;
    if ((uintptr_t)addr + length < (uintptr_t)addr)
        return -EOVERFLOW;
    ctx = pd->ctx;
    mr = calloc(1, sizeof(*mr));
    if (!mr)
        return -ENOMEM;
    swp_lock(ctx);
    if (ctx->stag_free == 0 && (rc = swp_stag_grow(ctx)) < 0) {
        swp_unlock(ctx);
        free(mr);
        return rc;
    }
    idx = ctx->stag_free;
    ctx->stag_free = ctx->stags[idx].next_free;
    /* a fresh key, never the one this index carried last */
    do {
        key = (uint8_t)swp_rand32(ctx);
    } while (key == ctx->stags[idx].key);
    ctx->stags[idx].key = key;
    ctx->stags[idx].mr = mr;
    mr->pd = pd;
    mr->addr = addr;
    mr->len = length;
    mr->access = access;
    mr->stag = idx << 8 | key;
    mr->valid = true;
    pd->refs++;
    swp_unlock(ctx);
    *out = mr;
    return 0;
}

int siwarp_dereg_mr(struct siwarp_mr *mr)
{
    struct siwarp_ctx *ctx;
    uint32_t idx;

    if (!mr)
        return -EINVAL;
    if (mr->pd->ctx->hw) return swp_hw_dereg_mr(mr);
    ctx = mr->pd->ctx;
    idx = SWP_STAG_INDEX(mr->stag);
    swp_lock(ctx);
    ctx->stags[idx].mr = NULL;
    ctx->mr_gen++;
    ctx->stags[idx].next_free = ctx->stag_free;
    ctx->stag_free = idx;
    mr->pd->refs--;
    swp_unlock(ctx);
    free(mr);
    return 0;
}

uint32_t siwarp_mr_stag(const struct siwarp_mr *mr)
{
    return mr ? mr->stag : 0;
}

struct siwarp_mr *swp_mem_lookup(struct siwarp_ctx *ctx, uint32_t stag)
{
    uint32_t idx = SWP_STAG_INDEX(stag);

    if (idx == 0 || idx >= ctx->nstags)
        return NULL;
    if (!ctx->stags[idx].mr || ctx->stags[idx].key != SWP_STAG_KEY(stag))
        return NULL;
    return ctx->stags[idx].mr;
}

int siwarp_invalidate_stag(struct siwarp_pd *pd, uint32_t stag)
{
    struct siwarp_mr *mr;
    int rc = 0;

    if (!pd)
        return -EINVAL;
    if (pd->ctx->hw) return swp_hw_invalidate_stag(pd, stag);
    swp_lock(pd->ctx);
    mr = swp_mem_lookup(pd->ctx, stag);
    if (!mr || mr->pd != pd)
        rc = -EINVAL;
    else {
        mr->valid = false;
        pd->ctx->mr_gen++;
    }
    swp_unlock(pd->ctx);
    return rc;
}

uint32_t swp_mem_check_remote(struct siwarp_ctx *ctx, struct siwarp_pd *pd,
                              uint32_t stag, uint64_t to, uint64_t len, int access,
                              int layer, uint8_t **dst)
{
    struct siwarp_mr *mr = swp_mem_lookup(ctx, stag);
    bool ddp = layer == SWP_TERM_LAYER_DDP;
    /* RFC 5041 7.2 (tagged buffer errors) when placing; RFC 5040 7.2
     * (remote protection errors) when RDMAP sources a Read Response. */
    uint32_t et = ddp ? SWP_DDP_ET_TAGGED : SWP_RDMAP_ET_REMOTE_PROT;

    if (!mr || !mr->valid)
        return SWP_TERM(layer, et, ddp ? SWP_DDP_EC_T_INV_STAG : SWP_RDMAP_EC_INV_STAG);
    if (mr->pd != pd)
        return SWP_TERM(layer, et, ddp ? SWP_DDP_EC_T_STAG_STREAM : SWP_RDMAP_EC_STAG_STREAM);
    if ((mr->access & access) != access) {
        /* DDP has no access-rights code: rights are an RDMAP matter
         * (RFC 5040 7.2, "access rights violation") */
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_ACCESS);
    }
    if (to + len < to)
        return SWP_TERM(layer, et, ddp ? SWP_DDP_EC_T_TO_WRAP : SWP_RDMAP_EC_TO_WRAP);
    if (to < (uintptr_t)mr->addr || to + len > (uintptr_t)mr->addr + mr->len)
        return SWP_TERM(layer, et, ddp ? SWP_DDP_EC_T_BASE_BOUNDS : SWP_RDMAP_EC_BASE_BOUNDS);
    *dst = mr->addr + (to - (uintptr_t)mr->addr);
    return 0;
}

SWP_HOT
int swp_mem_check_local(struct siwarp_ctx *ctx, struct siwarp_pd *pd,
                        const struct siwarp_sge *sge, int access)
{
    struct siwarp_mr *mr = swp_mem_lookup(ctx, sge->lkey);
    uintptr_t a = (uintptr_t)sge->addr;

    if (!mr || !mr->valid || mr->pd != pd)
        return -EINVAL;
    if ((mr->access & access) != access)
        return -EACCES;
    if (a + sge->length < a || a < (uintptr_t)mr->addr ||
        a + sge->length > (uintptr_t)mr->addr + mr->len)
        return -ERANGE;
    return 0;
}

uint32_t swp_mem_invalidate_remote(struct siwarp_ctx *ctx, struct siwarp_pd *pd, uint32_t stag)
{
    struct siwarp_mr *mr = swp_mem_lookup(ctx, stag);

    /* RFC 5040 6.2: invalid STag, or one of another stream's PD, cannot be
     * invalidated; the error is "STag cannot be invalidated". */
    if (!mr || !mr->valid || mr->pd != pd)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP,
                        SWP_RDMAP_EC_CANT_INVALIDATE);
    mr->valid = false;
    ctx->mr_gen++;
    return 0;
}

void swp_mem_fini(struct siwarp_ctx *ctx)
{
    free(ctx->stags);
    ctx->stags = NULL;
    ctx->nstags = 0;
    ctx->stag_free = 0;
}
