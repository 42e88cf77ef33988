/*
 * fuzz_rx.c - libFuzzer harness for the receive path (qp_rx.c: MPA FPDU
 * framing, markers and CRC, DDP and RDMAP headers, placement, Read
 * Requests and Responses, Terminate), fed as a byte stream through a
 * socketpair exactly as a peer's TCP stream would arrive.
 *
 * Input: cfg byte (negotiated parameters, see fuzz_rx_env.h), split byte
 * (how the stream is cut into writes: 0 whole, else pseudo-random chunk
 * sizes up to a bound the byte picks), then the stream.  After every chunk
 * the context is progressed, so the parser must resume at any boundary.
 *
 * Invariants checked after every input (abort() = a finding):
 *   - nothing outside region A changed (canaries, other regions, wrong PD,
 *     invalidated STag, read-only region);
 *   - the QP is in RTS, or in ERROR with a Terminate sent or received;
 *   - what the QP transmitted is a well-formed FPDU stream (markers and
 *     CRC checked) and, if it sent a Terminate, that is its last FPDU and
 *     carries the code recorded in term_sent;
 *   - completions name posted work with sane lengths.
 * AddressSanitizer catches reads or writes outside any allocation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_rx_env.h"

#define OUT_MAX (1u << 20)

static uint8_t out[OUT_MAX];
static size_t out_len;
static int out_truncated;

static void die(const char *what, long v)
{
    fprintf(stderr, "fuzz_rx: invariant violated: %s (%ld)\n", what, v);
    abort();
}

static void drain(struct fz_env *e)
{
    for (;;) {
        uint8_t junk[4096];
        uint8_t *dst = out_len < OUT_MAX ? out + out_len : junk;
        size_t room = out_len < OUT_MAX ? OUT_MAX - out_len : sizeof(junk);
        ssize_t n = recv(e->peer, dst, room, MSG_DONTWAIT);
        if (n <= 0)
            return;
        if (dst == junk)
            out_truncated = 1;
        else
            out_len += (size_t)n;
    }
}

static void check_wc(struct fz_env *e)
{
    struct siwarp_wc wc[16];
    int n;

    while ((n = siwarp_poll_cq(e->cq, 16, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            if (wc[i].opcode == SIWARP_WC_RECV) {
                if (wc[i].wr_id < 100 || wc[i].wr_id > 104)
                    die("receive completion for an unknown wr_id", (long)wc[i].wr_id);
                if (wc[i].status == SIWARP_WC_SUCCESS &&
                    wc[i].byte_len > (wc[i].wr_id < 104 ? 150u : 1u))
                    die("receive completion longer than its buffer", wc[i].byte_len);
            } else if (wc[i].wr_id != 7) {
                die("send completion for an unknown wr_id", (long)wc[i].wr_id);
            }
        }
    }
}

/* Progress and drain until nothing moves (bounded). */
static void pump(struct fz_env *e, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        size_t before = out_len;
        int rc = siwarp_progress(e->ctx);
        drain(e);
        check_wc(e);
        if (rc <= 0 && out_len == before && i > 0)
            return;
    }
}

/* Walk what the QP transmitted: markers at every 512th octet with the
 * right FPDUPTR, CRC of each FPDU.  Returns 0 and the last FPDU's ULPDU
 * in *last (length *last_len), 1 if the stream ends mid-FPDU, or dies. */
static int walk_out(bool markers, bool crc, const uint8_t **last, uint32_t *last_len)
{
    static uint8_t f[2 + 65535 + 8];
    size_t off = 0;

    *last = NULL;
    *last_len = 0;
    while (off < out_len) {
        size_t start, fl = 0, want = 2;
        uint32_t c = 0;

        if (markers && off % SWP_MPA_MARKER_PERIOD == 0) {
            /* a marker leading an FPDU: FPDUPTR 0, covered by its CRC */
            if (off + 4 > out_len)
                return 1;
            if (swp_get16(out + off + 2) != 0)
                die("marker before an FPDU with FPDUPTR != 0", (long)off);
            c = swp_crc32c(0, out + off, 4);
            off += 4;
            if (off >= out_len)
                return 1;
        }
        start = off;
        while (fl < want) {
            if (off >= out_len)
                return 1;
            if (markers && off % SWP_MPA_MARKER_PERIOD == 0) {
                if (off + 4 > out_len)
                    return 1;
                if (swp_get16(out + off + 2) != off - start)
                    die("marker FPDUPTR does not point at the FPDU", (long)off);
                if (want == 2 || fl < want - 4)
                    c = swp_crc32c(c, out + off, 4);
                off += 4;
                continue;
            }
            if (want == 2 || fl < want - 4)
                c = swp_crc32c(c, out + off, 1);
            f[fl++] = out[off++];
            if (fl == 2) {
                uint32_t ul = swp_get16(f);
                want = 2 + ul + swp_mpa_pad(ul) + 4;
            }
        }
        if (crc && swp_mpa_get_crc(f + want - 4) != c)
            die("transmitted FPDU with a wrong CRC", (long)start);
        if (!crc && swp_mpa_get_crc(f + want - 4) != 0)
            die("transmitted FPDU with a CRC field that is not zero", (long)start);
        *last = f + 2;
        *last_len = swp_get16(f);
    }
    return 0;
}

static uint32_t split_rng;

static size_t chunk_len(uint8_t split, size_t left)
{
    static const size_t bound[8] = { 0, 1, 3, 7, 19, 64, 517, 4099 };
    size_t b = bound[split & 7], n;

    if (b == 0)
        return left;
    split_rng = split_rng * 1103515245u + 12345u;
    n = 1 + (split_rng >> 8) % b;
    return n < left ? n : left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_env e;
    struct siwarp_qp_attr at;
    uint8_t cfg, split;
    int sv[2];
    size_t off = 0;
    long bad;

    if (size < 2)
        return 0;
    cfg = data[0];
    split = data[1];
    data += 2;
    size -= 2;
    out_len = 0;
    out_truncated = 0;
    split_rng = split * 2654435761u + (uint32_t)size;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        die("socketpair", errno);
    if (fz_env_init(&e, cfg, sv[0]) < 0)
        die("environment setup failed", 0);
    e.peer = sv[1];
    pump(&e, 4);

    while (off < size) {
        size_t n = chunk_len(split, size - off);
        ssize_t w;

        if (e.qp->state == SIWARP_QPS_ERROR)
            break;                      /* it stopped reading */
        w = send(e.peer, data + off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                pump(&e, 8);
                continue;
            }
            break;                      /* EPIPE: the QP closed its end */
        }
        off += (size_t)w;
        siwarp_progress(e.ctx);         /* the parser resumes at this boundary */
        drain(&e);
    }
    pump(&e, 200);

    if ((bad = fz_check(&e)) >= 0)
        die("byte outside the writable region changed, offset in map", bad);
    siwarp_query_qp(e.qp, &at);
    if (at.state != SIWARP_QPS_RTS && at.state != SIWARP_QPS_ERROR)
        die("QP neither in RTS nor in ERROR", at.state);
    if (at.state == SIWARP_QPS_ERROR && !at.term_sent && !at.term_recv &&
        at.error != -ECONNABORTED)
        die("QP in ERROR without a Terminate", at.error);
    if (!out_truncated) {
        const uint8_t *last;
        uint32_t last_len;
        int partial = walk_out(e.qp->nego.markers_tx, e.qp->nego.crc, &last, &last_len);

        if (at.term_sent && e.qp->pl.fd < 0) {
            /* the socket is closed only once the Terminate has left */
            uint32_t term = 0;
            const struct swp_ctrl *c = (const struct swp_ctrl *)last;
            if (partial)
                die("stream ends mid-FPDU although the socket was closed", (long)out_len);
            if (!last || swp_ctrl_tagged(c) || swp_ctrl_opcode(c) != SWP_OP_TERMINATE)
                die("last transmitted FPDU is not the Terminate", (long)out_len);
            if (swp_rdmap_parse_term(last, last_len, &term) < 0 || term != at.term_sent)
                die("transmitted Terminate code differs from term_sent", (long)term);
        }
    }
    fz_env_fini(&e);
    return 0;
}
