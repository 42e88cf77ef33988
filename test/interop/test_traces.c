/*
 * test_traces.c - siwarp's receive-side parsers over real frames: every
 * connection of ../shared/iwarp-traces/rping-crc.pcap and rping-nocrc.pcap
 * (Linux siw talking to siw: rping, then perftest write/read/send with -R),
 * extracted per direction into test/interop/traces/ by extract-streams.sh.
 *
 * For each connection: the MPA Request and Reply go through
 * swp_mpa_parse_rr and the negotiation of both roles (swp_mpa_nego_responder
 * and swp_mpa_nego_initiator must agree on CRC and markers); then every FPDU
 * of both directions is framed (RFC 5044 4.1: ULPDU_Length, pad, CRC), its
 * CRC checked when negotiated, its control bytes checked by the receive
 * path's own swp_ddp_check_ctrl, its header length taken from the receive
 * path's opcode table, and the untagged rules of RFC 5041 5.3 checked: queue
 * number of the opcode, MSNs from 1 in order per queue, message offsets
 * contiguous.  Terminates are parsed with swp_rdmap_parse_term.
 *
 * The frames name siw's STags, so they are not placed into siwarp memory:
 * this is the parser, not placement.  Each stream is also fed one byte at a
 * time to the same walker (resumable framing).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mpa.h"
#include "swp.h"

#ifndef SWP_SRCDIR
#define SWP_SRCDIR "."
#endif

struct buf {
    uint8_t *p;
    size_t n;
};

static struct buf load(const char *path)
{
    struct buf b = { NULL, 0 };
    FILE *f = fopen(path, "rb");
    long len;

    if (!f)
        return b;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.p = malloc((size_t)len + 1);
    ASSERT(b.p);
    b.n = fread(b.p, 1, (size_t)len, f);
    fclose(f);
    return b;
}

struct counts {
    unsigned fpdus, ops[SWP_OP_MAX], crc_checked, msgs;
};

/* The walker: FPDUs one after the other from `in`, keeping per-queue MSN
 * and MO state in *st.  Returns the number of bytes consumed (a partial
 * FPDU at the end is left for the next call). */
struct walk {
    bool crc;
    uint32_t msn[SWP_QN_COUNT];    /* next expected */
    uint32_t mo[SWP_QN_COUNT];     /* next expected message offset */
    struct counts c;
    const char *name;
};

static size_t walk(struct walk *w, const uint8_t *in, size_t n)
{
    size_t off = 0;

    while (n - off >= 2) {
        const uint8_t *f = in + off;
        uint32_t ulen = swp_get16(f);
        uint32_t framed = SWP_MPA_HDR_LEN + ulen + swp_mpa_pad(ulen);
        const struct swp_ctrl *c = (const struct swp_ctrl *)(f + 2);
        unsigned op;
        uint32_t term;

        if (n - off < framed + SWP_MPA_CRC_LEN)
            break;
        /* RFC 5044 4.1 / 4.4 */
        if (w->crc) {
            if (swp_mpa_get_crc(f + framed) != swp_crc32c(0, f, framed))
                FAIL("%s: FPDU %u at %zu: bad CRC", w->name, w->c.fpdus, off);
            w->c.crc_checked++;
        }
        if (ulen < sizeof(struct swp_ctrl))
            FAIL("%s: FPDU %u: ULPDU of %u bytes", w->name, w->c.fpdus, ulen);
        term = swp_ddp_check_ctrl(c, false);
        if (term)
            FAIL("%s: FPDU %u: control bytes %02x %02x refused: %s", w->name, w->c.fpdus,
                 c->ddp, c->rdmap, siwarp_term_str(term));
        op = swp_ctrl_opcode(c);
        if (ulen < swp_opinfo[op].hdr_len)
            FAIL("%s: FPDU %u: %s of %u bytes, header is %u", w->name, w->c.fpdus,
                 swp_opinfo[op].name, ulen, swp_opinfo[op].hdr_len);
        if (!swp_opinfo[op].has_payload && ulen != swp_opinfo[op].hdr_len)
            FAIL("%s: FPDU %u: %s with payload", w->name, w->c.fpdus, swp_opinfo[op].name);
        if (!swp_opinfo[op].tagged) {
            const struct swp_ddp_untagged_hdr *u = (const void *)(f + 2);
            uint32_t qn = swp_get32(u->qn), msn = swp_get32(u->msn), mo = swp_get32(u->mo);

            /* RFC 5041 5.3 */
            if (qn != swp_opinfo[op].qn)
                FAIL("%s: FPDU %u: %s on queue %u", w->name, w->c.fpdus, swp_opinfo[op].name, qn);
            if (msn != w->msn[qn])
                FAIL("%s: FPDU %u: MSN %u, expected %u", w->name, w->c.fpdus, msn, w->msn[qn]);
            if (mo != w->mo[qn])
                FAIL("%s: FPDU %u: MO %u, expected %u", w->name, w->c.fpdus, mo, w->mo[qn]);
            w->mo[qn] += ulen - swp_opinfo[op].hdr_len;
            if (swp_ctrl_last(c)) {
                w->msn[qn]++;
                w->mo[qn] = 0;
                w->c.msgs++;
            }
            if (op == SWP_OP_TERMINATE) {
                uint32_t t;
                ASSERT_OK(swp_rdmap_parse_term(f + 2, ulen, &t));
            }
        } else if (!swp_ctrl_last(c) && op == SWP_OP_READ_RESP && ulen == swp_opinfo[op].hdr_len) {
            FAIL("%s: FPDU %u: empty non-last Read Response", w->name, w->c.fpdus);
        }
        w->c.ops[op]++;
        w->c.fpdus++;
        off += framed + SWP_MPA_CRC_LEN;
    }
    return off;
}

static void walk_init(struct walk *w, bool crc, const char *name)
{
    memset(w, 0, sizeof(*w));
    w->crc = crc;
    w->name = name;
    for (int q = 0; q < SWP_QN_COUNT; q++)
        w->msn[q] = 1;             /* RFC 5041 5.3: MSN starts at 1 */
}

static unsigned total_fpdus, total_crc, total_conns;

/* A stream's file name: a connection's base name (at most 1023 bytes,
 * main's buffer) and ".a" or ".b". */
#define TRACE_NAME_MAX (1024 + 2)

/* One connection: a = initiator's bytes, b = responder's. */
static void check_conn(const char *base)
{
    char pa[TRACE_NAME_MAX], pb[TRACE_NAME_MAX];
    struct buf a, b;
    struct swp_mpa_rr_info req, rep;
    struct siwarp_conn_param ours;
    struct swp_nego nr, ni;
    bool rej;
    const char *why;
    int la, lb;

    snprintf(pa, sizeof(pa), "%s.a", base);
    snprintf(pb, sizeof(pb), "%s.b", base);
    a = load(pa);
    b = load(pb);
    ASSERT(a.p && b.p);
    la = swp_mpa_parse_rr_hdr(a.p, a.n, false);
    lb = swp_mpa_parse_rr_hdr(b.p, b.n, true);
    if (la <= 0 || lb <= 0)
        FAIL("%s: no MPA Request/Reply at the start (%d, %d)", base, la, lb);
    ASSERT_OK(swp_mpa_parse_rr(a.p, (size_t)la, false, &req));
    ASSERT_OK(swp_mpa_parse_rr(b.p, (size_t)lb, true, &rep));
    ASSERT(!rep.reject);
    ASSERT(!req.siwarp);           /* siw's echoed reserved bits are not siwarp's */
    ASSERT(!rep.siwarp);

    /* the responder's view, with siwarp's defaults minus CRC: it must come
     * to the same framing the Reply announces */
    siwarp_conn_param_default(&ours);
    ours.crc = rep.crc;
    ours.markers = 0;
    swp_mpa_param_fixup(&ours);
    ASSERT_OK(swp_mpa_nego_responder(&ours, &req, 1460, &nr, &rej, &why));
    /* the initiator's view of the Reply */
    memset(&ours, 0, sizeof(ours));
    ours.mpa_rev = req.rev;
    ours.crc = req.crc;
    ours.p2p = req.p2p;
    ours.rtr = req.rtr;
    ours.ird = req.ird;
    ours.ord = req.ord;
    swp_mpa_param_fixup(&ours);
    ASSERT_OK(swp_mpa_nego_initiator(&ours, &rep, 1460, &ni, &why));
    ASSERT_EQ(ni.crc, nr.crc);
    ASSERT(!ni.markers_tx && !ni.markers_rx);

    for (int dir = 0; dir < 2; dir++) {
        const uint8_t *s = dir ? b.p + lb : a.p + la;
        size_t n = dir ? b.n - (size_t)lb : a.n - (size_t)la;
        char name[TRACE_NAME_MAX];
        struct walk w, w1;
        size_t used, have = 0;
        uint8_t *acc = malloc(n + 1);

        snprintf(name, sizeof(name), "%s.%c", base, dir ? 'b' : 'a');
        walk_init(&w, ni.crc, name);
        used = walk(&w, s, n);
        if (used != n)
            FAIL("%s: %zu trailing bytes are not a whole FPDU", name, n - used);
        /* again, one byte at a time */
        walk_init(&w1, ni.crc, name);
        for (size_t i = 0; i < n; i++) {
            acc[have++] = s[i];
            size_t u = walk(&w1, acc, have);
            memmove(acc, acc + u, have - u);
            have -= u;
        }
        ASSERT_EQ(have, 0);
        ASSERT_EQ(w1.c.fpdus, w.c.fpdus);
        free(acc);
        total_fpdus += w.c.fpdus;
        total_crc += w.c.crc_checked;
        fprintf(stderr, "# %s: rev %d crc %d p2p %d: %u FPDUs (%u messages), %u CRCs good;"
                " Write %u, ReadReq %u, ReadResp %u, Send %u, Term %u\n",
                name, req.rev, ni.crc, ni.p2p, w.c.fpdus, w.c.msgs, w.c.crc_checked,
                w.c.ops[SWP_OP_WRITE], w.c.ops[SWP_OP_READ_REQ], w.c.ops[SWP_OP_READ_RESP],
                w.c.ops[SWP_OP_SEND] + w.c.ops[SWP_OP_SEND_SE], w.c.ops[SWP_OP_TERMINATE]);
    }
    total_conns++;
    free(a.p);
    free(b.p);
}

static void check_capture(const char *prefix, bool want_crc)
{
    char dir[512];
    struct dirent *e;
    DIR *d;
    unsigned before = total_conns, fp = total_fpdus, crcs = total_crc;

    snprintf(dir, sizeof(dir), "%s/test/interop/traces", SWP_SRCDIR);
    d = opendir(dir);
    if (!d)
        SKIP("no fixtures in %s", dir);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        char base[1024];
        if (strncmp(e->d_name, prefix, strlen(prefix)) || l < 2 || strcmp(e->d_name + l - 2, ".a"))
            continue;
        snprintf(base, sizeof(base), "%s/%.*s", dir, (int)(l - 2), e->d_name);
        check_conn(base);
    }
    closedir(d);
    if (total_conns == before)
        SKIP("no %s* fixtures", prefix);
    ASSERT(total_fpdus - fp > 100);                 /* the captures hold 122 FPDUs */
    if (want_crc)
        ASSERT_EQ(total_crc - crcs, total_fpdus - fp);
    else
        ASSERT_EQ(total_crc - crcs, 0);
}

TEST(siw_capture_with_crc) { check_capture("rping-crc.", true); }
TEST(siw_capture_without_crc) { check_capture("rping-nocrc.", false); }

SWP_TEST_MAIN()
