/*
 * siwarp-perftest-data.c - the data connection of siwarp-perftest: buffers,
 * the RDMA Write / RDMA Read / Send loops in perftest's manner, the credit
 * flow of send_bw over iWARP, and what can be checked of the data.
 *
 * What can be checked, given what perftest exposes:
 *  - read, client: perftest's server buffer holds random bytes it never
 *    changes during the test, so every Read of the same remote offset must
 *    return the same bytes, and those must have replaced our fill pattern;
 *  - write, server: the client's random bytes must have replaced our fill
 *    pattern at the advertised address, and our MR covers only the region
 *    perftest may address (anything beyond is refused with a Terminate);
 *  - read, server: the region the client reads must come through unchanged;
 *  - send, server: every message is exactly -s bytes, lands in its slot and
 *    nothing beyond; credits granted as perftest's sender expects;
 *  - write and send, client: perftest's server does not look at the data; we
 *    check every completion (all our work is signaled).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "siwarp-perftest.h"

#define PT_GUARD      64        /* bytes after each slot / region that nobody may touch */
#define PT_MAX_SLOTS  16u
#define PT_POLL_BATCH 16
#define PT_SEED(p)    ((p)->o->server ? 2u : 1u)

/* The fill pattern depends on the byte's offset in p->buf, so that a slot
 * filled again and the initial fill agree, and a byte moved elsewhere shows. */
static uint8_t pat(uint64_t off, uint32_t seed)
{
    return (uint8_t)(off * 31u + (off >> 8) + seed * 77u + 0x5au);
}

static void fill(struct pt *p, uint64_t off, uint64_t len, uint32_t seed)
{
    for (uint64_t i = off; i < off + len; i++)
        p->buf[i] = pat(i, seed);
}

/* how many bytes of p->buf[off, off+len) still hold the fill pattern */
static uint64_t unchanged(const struct pt *p, uint64_t off, uint64_t len, uint32_t seed)
{
    uint64_t n = 0;
    for (uint64_t i = off; i < off + len; i++)
        n += p->buf[i] == pat(i, seed);
    return n;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* perftest's remote address for iteration i (increase_rem_addr): messages
 * of up to half the cycle buffer walk through it in cache-line-aligned
 * steps, larger ones all go to the advertised address. */
static uint64_t remote_off(const struct pt *p, uint64_t i)
{
    uint64_t inc = align_up(p->o->size, p->cache_line);

    if (p->o->size > p->cycle_buffer / 2)
        return 0;
    return (i % (p->cycle_buffer / inc)) * inc;
}

int pt_data_setup(struct pt *p)
{
    struct pt_opts *o = p->o;
    int acc = SIWARP_ACCESS_LOCAL_WRITE, rc;
    uint64_t mr_len;

    if (o->server && o->verb != PT_SEND) {
        /* one region the peer addresses (at most max(size, cycle buffer)
         * from vaddr), then a guard outside the MR */
        p->region_len = o->size > p->cycle_buffer ? o->size : p->cycle_buffer;
        p->buf_len = p->region_len + PT_GUARD;
        mr_len = p->region_len;
        acc |= o->verb == PT_WRITE ? SIWARP_ACCESS_REMOTE_WRITE : SIWARP_ACCESS_REMOTE_READ;
    } else {
        /* slots: our sources (write, send), Read sinks, or receive buffers */
        /* a receiver needs all rx_depth receives: perftest's sender fills
         * its whole credit window */
        uint32_t depth = o->server ? o->rx_depth : o->tx_depth;
        p->nslots = o->server || depth < PT_MAX_SLOTS ? depth : PT_MAX_SLOTS;
        if (p->nslots > o->iters)
            p->nslots = o->iters;
        p->slot_len = align_up(o->size, 64) + PT_GUARD;
        p->buf_len = p->slot_len * p->nslots;
        mr_len = p->buf_len;
    }
    p->buf = aligned_alloc(4096, align_up(p->buf_len, 4096));
    if (!p->buf)
        return pt_fail(p, "data buffer of %llu bytes: out of memory",
                       (unsigned long long)p->buf_len);
    /* the server's region gets another pattern than a client's sinks: a Read
     * from one siwarp-perftest to another must not look like no data */
    fill(p, 0, p->buf_len, PT_SEED(p));
    if ((rc = siwarp_reg_mr(p->pd, p->buf, mr_len, acc, &p->buf_mr)))
        return pt_fail(p, "register data buffer: %s", strerror(-rc));

    p->mine.qpn = o->server ? 2 : 1;
    p->mine.psn = (uint32_t)(pt_now_us() * 2654435761u) & 0xffffff;
    p->mine.out_reads = o->verb == PT_READ ? 128 : 1;
    p->mine.rkey = siwarp_mr_stag(p->buf_mr);
    p->mine.vaddr = (uint64_t)(uintptr_t)p->buf;
    if (o->verb == PT_SEND) {
        /* send_bw on iWARP: both sides advertise a credit buffer instead
         * (perftest ctx_alloc_credit); the receiver writes its count to the
         * sender's.  [0]: where our credit Writes come from (inline, unused),
         * [1]: what the peer writes. */
        p->credit = calloc(2, sizeof(uint32_t));
        if (!p->credit)
            return pt_fail(p, "credit buffer: out of memory");
        if ((rc = siwarp_reg_mr(p->pd, p->credit, 2 * sizeof(uint32_t),
                                SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE,
                                &p->credit_mr)))
            return pt_fail(p, "register credit buffer: %s", strerror(-rc));
        p->mine.rkey = siwarp_mr_stag(p->credit_mr);
        p->mine.vaddr = (uint64_t)(uintptr_t)&p->credit[1];
    }
    return 0;
}

static void set_result(struct pt *p, uint64_t msgs, uint64_t t_us)
{
    double s = t_us ? (double)t_us / 1e6 : 1e-6;

    p->result.size = p->o->size;
    p->result.iters = msgs;
    p->result.bw_avg = (double)msgs * p->o->size / s / (1024.0 * 1024.0);
    p->result.bw_peak = p->result.bw_avg;
    p->result.msg_rate = (double)msgs / s / 1e6;
}

static int post_one(struct pt *p, enum siwarp_wr_opcode op, uint64_t i, uint8_t *local,
                    uint64_t raddr, uint32_t rkey)
{
    struct siwarp_sge s = { local, p->o->size, siwarp_mr_stag(p->buf_mr) };
    struct siwarp_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = op,
                                .send_flags = SIWARP_SEND_SIGNALED };

    w.rdma.remote_addr = raddr;
    w.rdma.rkey = rkey;
    return siwarp_post_send(p->data.qp, &w, NULL);
}

/* A completed Read into slot `slot` of iteration i: its bytes must equal what
 * earlier Reads of the same remote offset returned (ref), must not be our
 * fill pattern, and the guard after the slot must be intact. */
static int check_read(struct pt *p, uint64_t i, uint64_t slot_off, uint8_t *ref, uint8_t *seen)
{
    uint32_t size = p->o->size;
    uint8_t *slot = p->buf + slot_off;
    uint64_t off = remote_off(p, i), same = unchanged(p, slot_off, size, 1);

    if (unchanged(p, slot_off + align_up(size, 64), PT_GUARD, 1) != PT_GUARD)
        return pt_fail(p, "read %llu: bytes written past the %u-byte sink",
                       (unsigned long long)i, size);
    if (same > size / 8 + 8)
        return pt_fail(p, "read %llu: %llu of %u bytes still hold our fill pattern "
                       "(the Read placed no data)", (unsigned long long)i,
                       (unsigned long long)same, size);
    if (!seen[off / p->cache_line]) {
        memcpy(ref + off, slot, size);
        seen[off / p->cache_line] = 1;
    } else if (memcmp(ref + off, slot, size)) {
        return pt_fail(p, "read %llu: remote offset %llu returned other bytes than before",
                       (unsigned long long)i, (unsigned long long)off);
    }
    fill(p, slot_off, size, 1);
    return 0;
}

/* Write, Read or Send `iters` messages of `size` bytes: at most tx_depth in
 * flight (Reads: at most one per sink slot), Sends within the credit window
 * (perftest run_iter_bw: scnt + 1 - credit < rx_depth). */
int pt_data_run_client(struct pt *p)
{
    struct pt_opts *o = p->o;
    uint64_t posted = 0, done = 0, t_start, t_end, stall_deadline;
    uint32_t window = o->verb == PT_READ ? p->nslots : o->tx_depth;
    uint64_t ref_len = p->cycle_buffer > o->size ? p->cycle_buffer : o->size;
    uint8_t *ref = NULL, *seen = NULL;
    volatile uint32_t *credit = p->credit ? &p->credit[1] : NULL;
    enum siwarp_wr_opcode op = o->verb == PT_WRITE ? SIWARP_WR_WRITE :
                               o->verb == PT_READ ? SIWARP_WR_READ : SIWARP_WR_SEND;
    enum siwarp_wc_opcode want = o->verb == PT_WRITE ? SIWARP_WC_WRITE :
                                 o->verb == PT_READ ? SIWARP_WC_READ : SIWARP_WC_SEND;
    int rc;

    if (o->verb == PT_READ) {
        ref = malloc(ref_len);
        seen = calloc(ref_len / p->cache_line + 1, 1);
        if (!ref || !seen)
            return pt_fail(p, "read reference buffer: out of memory");
    }
    if (o->verb != PT_READ)
        for (uint32_t k = 0; k < p->nslots; k++)
            fill(p, k * p->slot_len, o->size, 100 + k);
    t_start = pt_now_us();
    stall_deadline = t_start + (uint64_t)o->timeout_s * 1000000u;
    while (done < o->iters) {
        while (posted < o->iters && posted - done < window) {
            if (credit && posted + 1 - le32toh(*credit) >= o->rx_depth)
                break;      /* the receiver has not granted more */
            uint8_t *slot = p->buf + (posted % p->nslots) * p->slot_len;
            rc = post_one(p, op, posted, slot, p->peer.vaddr + remote_off(p, posted),
                          p->peer.rkey);
            if (rc == -ENOMEM)
                break;
            if (rc)
                return pt_fail(p, "post %s %llu: %s", pt_verb_name(o->verb),
                               (unsigned long long)posted, strerror(-rc));
            posted++;
        }
        struct siwarp_wc wc[PT_POLL_BATCH];
        int n = siwarp_poll_cq(p->data.cq, PT_POLL_BATCH, wc);
        if (n < 0)
            return pt_fail(p, "poll: %s", strerror(-n));
        for (int k = 0; k < n; k++) {
            if (wc[k].status != SIWARP_WC_SUCCESS)
                return pt_fail(p, "%s %llu: completion status %s (vendor_err 0x%x)",
                               pt_verb_name(o->verb), (unsigned long long)wc[k].wr_id,
                               siwarp_wc_status_str(wc[k].status), wc[k].vendor_err);
            if (wc[k].opcode != want)
                continue;
            if (wc[k].wr_id != done)
                return pt_fail(p, "completion of %llu, expected %llu (out of order)",
                               (unsigned long long)wc[k].wr_id, (unsigned long long)done);
            if (o->verb == PT_READ &&
                check_read(p, done, (done % p->nslots) * p->slot_len, ref, seen))
                return 1;
            done++;
            stall_deadline = pt_now_us() + (uint64_t)o->timeout_s * 1000000u;
        }
        if (!n) {
            if (pt_now_us() >= stall_deadline)
                return pt_fail(p, "%s: no progress for %d s: %llu posted, %llu completed%s",
                               pt_verb_name(o->verb), o->timeout_s,
                               (unsigned long long)posted, (unsigned long long)done,
                               credit && posted < o->iters ? " (waiting for credits)" : "");
            /* credits arrive as RDMA Writes, which complete nothing here:
             * progress the context rather than sleep on the CQ */
            if (credit)
                siwarp_wait(p->ctx, 1);
            else
                siwarp_cq_wait(p->data.cq, 100);
        }
    }
    t_end = pt_now_us();
    set_result(p, done, t_end - t_start);
    if (o->verb == PT_READ) {
        uint64_t offs = 0;
        for (uint64_t k = 0; k <= ref_len / p->cache_line; k++)
            offs += seen[k];
        snprintf(p->data_note, sizeof(p->data_note), "verified: %llu Reads placed the "
                 "peer's bytes, repeated Reads of %llu remote offsets identical",
                 (unsigned long long)done, (unsigned long long)offs);
    } else if (credit) {
        snprintf(p->data_note, sizeof(p->data_note), "%llu Sends completed, the peer "
                 "granted %u credits", (unsigned long long)done, le32toh(*credit));
    } else {
        snprintf(p->data_note, sizeof(p->data_note), "%llu Writes completed (perftest's "
                 "server exposes nothing to check them with)", (unsigned long long)done);
    }
    free(ref);
    free(seen);
    return 0;
}

/* ---- server ----------------------------------------------------------------------- */

static int post_recv_slot(struct pt *p, uint64_t i)
{
    struct siwarp_sge s = { p->buf + (i % p->nslots) * p->slot_len, p->o->size,
                            siwarp_mr_stag(p->buf_mr) };
    struct siwarp_recv_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1 };
    return siwarp_post_recv(p->data.qp, &w, NULL);
}

/* send: the receives must be there before the handshake that starts the
 * client's Sends (perftest posts them before its last pre-test one) */
int pt_data_server_arm(struct pt *p)
{
    int rc;

    for (p->recv_posted = 0; p->recv_posted < p->nslots; p->recv_posted++)
        if ((rc = post_recv_slot(p, p->recv_posted)))
            return pt_fail(p, "post receive %llu: %s", (unsigned long long)p->recv_posted,
                           strerror(-rc));
    return 0;
}

/* The credit: our receive count, host order as perftest writes it, into the
 * sender's credit buffer (inline: the value is copied at post time). */
static int post_credit(struct pt *p, uint32_t count)
{
    uint32_t v = htole32(count);
    struct siwarp_sge s = { &v, sizeof(v), 0 };
    struct siwarp_send_wr w = { .wr_id = UINT64_MAX, .sg_list = &s, .num_sge = 1,
                                .opcode = SIWARP_WR_WRITE,
                                .send_flags = SIWARP_SEND_SIGNALED | SIWARP_SEND_INLINE };

    w.rdma.remote_addr = p->peer.vaddr;
    w.rdma.rkey = p->peer.rkey;
    return siwarp_post_send(p->data.qp, &w, NULL);
}

/* send: receive `iters` messages, repost, grant credits every rx_depth/3
 * (perftest's credit_cnt) and at the end.  write/read: nothing to do during
 * the test (one-sided); pt_data_check_server looks at the region after. */
int pt_data_run_server(struct pt *p)
{
    struct pt_opts *o = p->o;
    uint64_t rcnt = 0, t_first = 0, t_last = 0, deadline;
    uint32_t cc = o->rx_depth / 3 ? o->rx_depth / 3 : 1, credits = 0;
    int rc;

    if (o->verb != PT_SEND)
        return 0;
    deadline = pt_now_us() + (uint64_t)o->timeout_s * 1000000u;
    while (rcnt < o->iters) {
        struct siwarp_wc wc[PT_POLL_BATCH];
        int n = siwarp_poll_cq(p->data.cq, PT_POLL_BATCH, wc);
        if (n < 0)
            return pt_fail(p, "poll: %s", strerror(-n));
        for (int k = 0; k < n; k++) {
            if (wc[k].status != SIWARP_WC_SUCCESS)
                return pt_fail(p, "%s %llu: completion status %s (vendor_err 0x%x)",
                               wc[k].opcode == SIWARP_WC_RECV ? "receive" : "credit Write",
                               (unsigned long long)wc[k].wr_id,
                               siwarp_wc_status_str(wc[k].status), wc[k].vendor_err);
            if (wc[k].opcode != SIWARP_WC_RECV)
                continue;
            if (wc[k].wr_id != rcnt || wc[k].byte_len != o->size)
                return pt_fail(p, "receive %llu: wr %llu of %u bytes, expected %llu of %u",
                               (unsigned long long)rcnt, (unsigned long long)wc[k].wr_id,
                               wc[k].byte_len, (unsigned long long)rcnt, o->size);
            uint64_t slot_off = (rcnt % p->nslots) * p->slot_len;
            if (unchanged(p, slot_off + align_up(o->size, 64), PT_GUARD, 2) != PT_GUARD)
                return pt_fail(p, "receive %llu: bytes placed past the %u-byte buffer",
                               (unsigned long long)rcnt, o->size);
            if (!t_first)
                t_first = pt_now_us();
            t_last = pt_now_us();
            rcnt++;
            if (p->recv_posted < o->iters) {
                if ((rc = post_recv_slot(p, p->recv_posted)))
                    return pt_fail(p, "post receive: %s", strerror(-rc));
                p->recv_posted++;
            }
            if (rcnt % cc == 0 || rcnt == o->iters) {
                if ((rc = post_credit(p, (uint32_t)rcnt)))
                    return pt_fail(p, "post credit Write: %s", strerror(-rc));
                credits++;
            }
            deadline = pt_now_us() + (uint64_t)o->timeout_s * 1000000u;
        }
        if (!n) {
            if (pt_now_us() >= deadline)
                return pt_fail(p, "send: no message for %d s after %llu of %u", o->timeout_s,
                               (unsigned long long)rcnt, o->iters);
            siwarp_cq_wait(p->data.cq, 100);
        }
    }
    set_result(p, rcnt, t_last - t_first);
    snprintf(p->data_note, sizeof(p->data_note), "verified: %llu messages of exactly %u bytes, "
             "nothing past the buffers; %u credit Writes", (unsigned long long)rcnt, o->size,
             credits);
    return 0;
}

/* After the client said it is done: what its Writes / Reads did to the region. */
int pt_data_check_server(struct pt *p)
{
    uint32_t size = p->o->size;
    uint64_t same;

    if (p->o->verb == PT_SEND)
        return 0;
    if (unchanged(p, p->region_len, PT_GUARD, 2) != PT_GUARD)
        return pt_fail(p, "bytes past the exposed %llu-byte region changed",
                       (unsigned long long)p->region_len);
    same = unchanged(p, 0, p->region_len, 2);
    if (p->o->verb == PT_READ) {
        if (same != p->region_len)
            return pt_fail(p, "%llu bytes of the region the peer only reads changed",
                           (unsigned long long)(p->region_len - same));
        snprintf(p->data_note, sizeof(p->data_note), "verified: the %llu-byte region the "
                 "peer read is unchanged", (unsigned long long)p->region_len);
        return 0;
    }
    /* write: at least the first message's bytes are the peer's (random) */
    same = unchanged(p, 0, size, 2);
    if (same > size / 8 + 8)
        return pt_fail(p, "%llu of the first %u bytes still hold our fill pattern: the "
                       "peer's Writes did not land at the advertised address",
                       (unsigned long long)same, size);
    snprintf(p->data_note, sizeof(p->data_note), "verified: the peer's Writes replaced "
             "%llu of %llu region bytes (%u at the advertised address), nothing beyond",
             (unsigned long long)(p->region_len - unchanged(p, 0, p->region_len, 2)),
             (unsigned long long)p->region_len, size - (uint32_t)same);
    return 0;
}
