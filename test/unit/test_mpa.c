/*
 * test_mpa.c - MPA Request/Reply frames and connection-setup negotiation
 * (RFC 5044 section 7.1, RFC 6581), MULPDU and markers, then the connection
 * manager against raw-socket peers.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "mpa.h"

/* ---- fixed vectors ------------------------------------------------------------ */

/* siw as initiator, defaults (siw-vm README): rev 2, flags 0x10, IRD 1 ORD 1 */
static const uint8_t siw_req[] = {
    'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
    0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01,
};
/* siw with peer_to_peer=1 and CRC: flags 0x50, P2P, Write and Read RTR */
static const uint8_t siw_req_p2p[] = {
    'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
    0x50, 0x02, 0x00, 0x04, 0x80, 0x01, 0xc0, 0x01,
};
/* perftest over siw in iwarp-traces/rping-nocrc.pcap: the reply, IRD/ORD 128 */
static const uint8_t siw_rep_128[] = {
    'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e',
    0x10, 0x02, 0x00, 0x04, 0x00, 0x80, 0x00, 0x80,
};

static struct siwarp_conn_param param(int rev)
{
    struct siwarp_conn_param p;

    memset(&p, 0, sizeof(p));
    p.mpa_rev = rev;
    p.ird = 1;
    p.ord = 1;
    return p;
}

static void frame(uint8_t *buf, const char *key, uint8_t flags, uint8_t rev, uint16_t pd_len)
{
    memcpy(buf, key, 16);
    buf[16] = flags;
    buf[17] = rev;
    swp_put16(buf + 18, pd_len);
}

/* ---- build / parse ------------------------------------------------------------- */

TEST(build_matches_siw_request)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param p = param(2);
    int n = swp_mpa_build_request(out, sizeof(out), &p);

    ASSERT_EQ(n, sizeof(siw_req));
    ASSERT_MEM_EQ(out, siw_req, sizeof(siw_req));
    n = swp_mpa_build_rr(out, sizeof(out), false, 2, SWP_MPA_FLAG_ENH, 1, 1, NULL, 0);
    ASSERT_EQ(n, sizeof(siw_req));
    ASSERT_MEM_EQ(out, siw_req, sizeof(siw_req));
}

TEST(build_matches_siw_p2p_crc_request)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param p = param(2);
    int n;

    p.crc = 1;
    p.p2p = 1;
    p.rtr = SIWARP_RTR_WRITE | SIWARP_RTR_READ;
    n = swp_mpa_build_request(out, sizeof(out), &p);
    ASSERT_EQ(n, sizeof(siw_req_p2p));
    /* siw's request but for the RTR offer: with Read allowed we offer Read
     * alone (ORD word 0x4001, siw sends 0xc001), so stock siw cannot pick
     * the Write RTR that gives no sign it is reading FPDUs */
    ASSERT_MEM_EQ(out, siw_req_p2p, 22);
    ASSERT_EQ(out[22], 0x40);
    ASSERT_EQ(out[23], siw_req_p2p[23]);
    p.rtr = SIWARP_RTR_WRITE;
    n = swp_mpa_build_request(out, sizeof(out), &p);
    ASSERT_EQ(out[22], 0x80);
}

TEST(parse_siw_request)
{
    struct swp_mpa_rr_info i;

    ASSERT_EQ(swp_mpa_parse_rr_hdr(siw_req, sizeof(siw_req), false), 24);
    ASSERT_OK(swp_mpa_parse_rr(siw_req, sizeof(siw_req), false, &i));
    ASSERT_EQ(i.rev, 2);
    ASSERT(i.enhanced);
    ASSERT(!i.crc && !i.markers && !i.p2p && !i.siwarp);
    ASSERT_EQ(i.ird, 1);
    ASSERT_EQ(i.ord, 1);
    ASSERT_EQ(i.rtr, 0);
    ASSERT_EQ(i.pd_len, 0);

    ASSERT_OK(swp_mpa_parse_rr(siw_req_p2p, sizeof(siw_req_p2p), false, &i));
    ASSERT(i.crc && i.p2p && i.enhanced);
    ASSERT_EQ(i.rtr, SIWARP_RTR_WRITE | SIWARP_RTR_READ);
    ASSERT_EQ(i.ird, 1);
    ASSERT_EQ(i.ord, 1);

    ASSERT_OK(swp_mpa_parse_rr(siw_rep_128, sizeof(siw_rep_128), true, &i));
    ASSERT(!i.reject && !i.siwarp);
    ASSERT_EQ(i.ird, 128);
    ASSERT_EQ(i.ord, 128);
}

TEST(round_trip_with_private_data)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN], pd[508];
    struct swp_mpa_rr_info i;
    int n;

    for (unsigned k = 0; k < sizeof(pd); k++)
        pd[k] = (uint8_t)(k * 7 + 1);
    n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH | SWP_MPA_FLAG_C,
                         SWP_MPA_V2_IRD_P2P | 5, SWP_MPA_V2_ORD_READ_RTR | 9, pd, sizeof(pd));
    ASSERT_EQ(n, 20 + 512);
    ASSERT_EQ(swp_get16(out + 18), 512);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)n, true, &i));
    ASSERT_EQ(i.ird, 5);
    ASSERT_EQ(i.ord, 9);
    ASSERT(i.p2p);
    ASSERT_EQ(i.rtr, SIWARP_RTR_READ);
    ASSERT_EQ(i.pd_len, 508);
    ASSERT_MEM_EQ(i.pd, pd, 508);
    /* one more byte of user data pushes the frame over 512 */
    ASSERT_EQ(swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, 0, 0, pd, 509),
              -EMSGSIZE);
    /* rev 1 has no block: 512 user bytes fit */
    {
        static const uint8_t zero[512];
        ASSERT_EQ(swp_mpa_build_rr(out, sizeof(out), false, 1, 0, 0, 0, zero, 512), 532);
    }
    /* rev 1 frame: no block */
    n = swp_mpa_build_rr(out, sizeof(out), false, 1, 0, 0, 0, "abc", 3);
    ASSERT_EQ(n, 23);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)n, false, &i));
    ASSERT(!i.enhanced);
    ASSERT_EQ(i.pd_len, 3);
    ASSERT_MEM_EQ(i.pd, "abc", 3);
}

TEST(parse_rejects_wrong_key)
{
    uint8_t f[24];
    struct swp_mpa_rr_info i;

    memcpy(f, siw_req, sizeof(f));
    ASSERT_EQ(swp_mpa_parse_rr_hdr(f, sizeof(f), true), -EPROTO);    /* Req key as reply */
    f[3] = 'X';
    ASSERT_EQ(swp_mpa_parse_rr_hdr(f, sizeof(f), false), -EPROTO);
    ASSERT_EQ(swp_mpa_parse_rr(f, sizeof(f), false, &i), -EPROTO);
    memset(f, 0, sizeof(f));
    ASSERT_EQ(swp_mpa_parse_rr_hdr(f, sizeof(f), false), -EPROTO);
}

TEST(parse_short_header)
{
    struct swp_mpa_rr_info i;

    for (size_t n = 0; n < 20; n++) {
        ASSERT_EQ(swp_mpa_parse_rr_hdr(siw_req, n, false), -EAGAIN);
        ASSERT_EQ(swp_mpa_parse_rr(siw_req, n, false, &i), -EPROTO);
    }
    /* a full header but a truncated private data */
    ASSERT_EQ(swp_mpa_parse_rr(siw_req, 22, false, &i), -EPROTO);
}

TEST(parse_pd_len_limit)
{
    uint8_t f[20 + 513];
    struct swp_mpa_rr_info i;

    memset(f, 0, sizeof(f));
    frame(f, SWP_MPA_KEY_REQ, 0, 1, 513);
    ASSERT_EQ(swp_mpa_parse_rr_hdr(f, 20, false), -EMSGSIZE);
    ASSERT_EQ(swp_mpa_parse_rr(f, sizeof(f), false, &i), -EMSGSIZE);
    frame(f, SWP_MPA_KEY_REQ, 0, 1, 0xffff);
    ASSERT_EQ(swp_mpa_parse_rr_hdr(f, 20, false), -EMSGSIZE);
    frame(f, SWP_MPA_KEY_REQ, 0, 1, 512);
    ASSERT_EQ(swp_mpa_parse_rr_hdr(f, 20, false), 532);
    ASSERT_OK(swp_mpa_parse_rr(f, 532, false, &i));
    ASSERT_EQ(i.pd_len, 512);
}

TEST(parse_bad_revision_and_block)
{
    uint8_t f[24];
    struct swp_mpa_rr_info i;

    memcpy(f, siw_req, sizeof(f));
    f[17] = 3;
    ASSERT_EQ(swp_mpa_parse_rr(f, sizeof(f), false, &i), -EPROTONOSUPPORT);
    f[17] = 0;
    ASSERT_EQ(swp_mpa_parse_rr(f, sizeof(f), false, &i), -EPROTONOSUPPORT);
    /* enhanced frame with only 2 private-data bytes: no room for IRD/ORD */
    frame(f, SWP_MPA_KEY_REQ, SWP_MPA_FLAG_ENH, 2, 2);
    ASSERT_EQ(swp_mpa_parse_rr(f, 22, false, &i), -EPROTO);
    /* rev 2 without the enhanced flag: no block, bytes are user data */
    frame(f, SWP_MPA_KEY_REQ, 0, 2, 2);
    ASSERT_OK(swp_mpa_parse_rr(f, 22, false, &i));
    ASSERT(!i.enhanced);
    ASSERT_EQ(i.pd_len, 2);
}

/* ---- negotiation ----------------------------------------------------------------- */

/* Run a full exchange between two siwarp-built frames. */
struct pair {
    int rc_resp, rc_init;
    bool reject;
    const char *why;
    struct swp_nego resp, init;
    struct swp_mpa_rr_info rep_info;    /* points into rep[] */
    uint8_t req[SWP_MPA_RR_MAX_LEN], rep[SWP_MPA_RR_MAX_LEN];
};

static void exchange(const struct siwarp_conn_param *ini, const struct siwarp_conn_param *rsp,
                     struct pair *r)
{
    uint8_t *req = r->req, *rep = r->rep;
    struct swp_mpa_rr_info ri;
    int n;

    memset(r, 0, sizeof(*r));
    n = swp_mpa_build_request(req, sizeof(r->req), ini);
    ASSERT(n >= 20);
    ASSERT_OK(swp_mpa_parse_rr(req, (size_t)n, false, &ri));
    r->rc_resp = swp_mpa_nego_responder(rsp, &ri, 1460, &r->resp, &r->reject, &r->why);
    if (r->rc_resp == 0)
        n = swp_mpa_build_reply(rep, sizeof(r->rep), &r->resp, &ri, rsp->big_fpdu, "ok", 2);
    else if (r->reject)
        n = swp_mpa_build_reject(rep, sizeof(r->rep), &ri, rsp, "no", 2);
    else
        return;
    ASSERT(n >= 20);
    ASSERT_OK(swp_mpa_parse_rr(rep, (size_t)n, true, &r->rep_info));
    r->rc_init = swp_mpa_nego_initiator(ini, &r->rep_info, 1460, &r->init, &r->why);
}

TEST(nego_crc_either_side)
{
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 2; b++) {
            struct siwarp_conn_param i = param(2), s = param(2);
            struct pair r;

            i.crc = a;
            s.crc = b;
            exchange(&i, &s, &r);
            ASSERT_OK(r.rc_resp);
            ASSERT_OK(r.rc_init);
            ASSERT_EQ(r.resp.crc, a || b);
            ASSERT_EQ(r.init.crc, a || b);
            ASSERT_EQ(r.rep_info.crc, a || b);
        }
    }
}

TEST(nego_markers)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    /* RFC 5044 7.1, per direction: the initiator asks, the responder did not
     * want markers itself -- it sends them anyway, receives none */
    i.markers = 1;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT(r.resp.markers_tx && !r.resp.markers_rx);
    ASSERT(!r.init.markers_tx && r.init.markers_rx);
    ASSERT(!r.rep_info.markers);
    ASSERT_EQ(r.init.mulpdu, 1454);        /* the initiator sends no markers */

    /* both ask: markers both ways, smaller MULPDU */
    s.markers = 1;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT(r.resp.markers_tx && r.resp.markers_rx && r.init.markers_tx && r.init.markers_rx);
    ASSERT_EQ(r.init.mulpdu, 1442);

    /* only the responder asks: the initiator sends markers */
    i.markers = 0;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_init);
    ASSERT(r.rep_info.markers);
    ASSERT(r.init.markers_tx && !r.init.markers_rx);
    ASSERT(!r.resp.markers_tx && r.resp.markers_rx);
    ASSERT_EQ(r.init.mulpdu, 1442);

    /* neither */
    s.markers = 0;
    exchange(&i, &s, &r);
    ASSERT(!r.init.markers_tx && !r.init.markers_rx && !r.resp.markers_tx && !r.resp.markers_rx);
    ASSERT_EQ(r.init.mulpdu, 1454);
}

TEST(nego_markers_reply_bits)
{
    struct siwarp_conn_param i = param(1);
    struct swp_mpa_rr_info rep;
    struct swp_nego n;
    const char *why;
    uint8_t f[20];

    /* a Reply with M although we did not ask: the peer wants markers from us */
    frame(f, SWP_MPA_KEY_REP, SWP_MPA_FLAG_M, 1, 0);
    ASSERT_OK(swp_mpa_parse_rr(f, 20, true, &rep));
    ASSERT_OK(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why));
    ASSERT(n.markers_tx && !n.markers_rx);
    /* we asked, it answered without M: it sends markers, wants none */
    i.markers = 1;
    frame(f, SWP_MPA_KEY_REP, 0, 1, 0);
    ASSERT_OK(swp_mpa_parse_rr(f, 20, true, &rep));
    ASSERT_OK(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why));
    ASSERT(!n.markers_tx && n.markers_rx);
}

TEST(nego_rev1_and_rev2)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(1), s = param(2);
    struct pair r;
    int n;

    /* rev 1 request to a rev 2 responder: rev 1 reply, no IRD/ORD block */
    i.ird = 3;
    i.ord = 4;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT_EQ(r.resp.mpa_rev, 1);
    ASSERT_EQ(r.rep_info.rev, 1);
    ASSERT(!r.rep_info.enhanced);
    ASSERT_EQ(r.rep_info.pd_len, 2);        /* "ok", nothing else */
    ASSERT_EQ(r.init.ird, 3);
    ASSERT_EQ(r.init.ord, 4);

    /* rev 2 request to a rev 1 responder: close, no reply (RFC 5044 7.1) */
    i = param(2);
    s = param(1);
    exchange(&i, &s, &r);
    ASSERT_EQ(r.rc_resp, -EPROTONOSUPPORT);
    ASSERT(!r.reject);

    /* a rev 1 reply to our rev 2 request is accepted as rev 1 */
    {
        struct swp_mpa_rr_info rep;
        struct swp_nego ng;
        const char *why;

        n = swp_mpa_build_rr(out, sizeof(out), true, 1, 0, 0, 0, NULL, 0);
        ASSERT_OK(swp_mpa_parse_rr(out, (size_t)n, true, &rep));
        ASSERT_OK(swp_mpa_nego_initiator(&i, &rep, 1460, &ng, &why));
        ASSERT_EQ(ng.mpa_rev, 1);
        /* a rev 2 reply to a rev 1 request is not */
        i = param(1);
        n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, 1, 1, NULL, 0);
        ASSERT_OK(swp_mpa_parse_rr(out, (size_t)n, true, &rep));
        ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &ng, &why), -EPROTO);
    }
}

TEST(nego_siw_request_reply_echo)
{
    /* our reply to siw's default request looks like siw's own reply */
    struct siwarp_conn_param s = param(2);
    struct swp_mpa_rr_info ri;
    struct swp_nego n;
    const char *why;
    bool rej;
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    static const uint8_t want[] = {
        'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e',
        0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01,
    };

    ASSERT_OK(swp_mpa_parse_rr(siw_req, sizeof(siw_req), false, &ri));
    ASSERT_OK(swp_mpa_nego_responder(&s, &ri, 1460, &n, &rej, &why));
    ASSERT_EQ(swp_mpa_build_reply(out, sizeof(out), &n, &ri, 0, NULL, 0), sizeof(want));
    ASSERT_MEM_EQ(out, want, sizeof(want));
    ASSERT(!n.p2p);
    ASSERT(!n.peer_is_siwarp);
}

TEST(nego_p2p_rtr_each_type)
{
    static const struct { int offered, accepted, want; } t[] = {
        { SIWARP_RTR_READ,  0, SIWARP_RTR_READ },
        { SIWARP_RTR_WRITE, 0, SIWARP_RTR_WRITE },
        { SIWARP_RTR_WRITE | SIWARP_RTR_READ, 0, SIWARP_RTR_READ },   /* offers Read only */
        { SIWARP_RTR_SEND,  SIWARP_RTR_SEND, SIWARP_RTR_SEND },
        { SIWARP_RTR_SEND | SIWARP_RTR_READ, SIWARP_RTR_SEND | SIWARP_RTR_READ, SIWARP_RTR_READ },
        { SIWARP_RTR_WRITE | SIWARP_RTR_READ, SIWARP_RTR_READ, SIWARP_RTR_READ },
    };

    for (unsigned k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        struct siwarp_conn_param i = param(2), s = param(2);
        struct pair r;

        i.p2p = 1;
        i.rtr = t[k].offered;
        s.rtr = t[k].accepted;
        exchange(&i, &s, &r);
        ASSERT_OK(r.rc_resp);
        ASSERT_OK(r.rc_init);
        ASSERT(r.resp.p2p && r.init.p2p);
        ASSERT_EQ(r.resp.rtr, t[k].want);
        ASSERT_EQ(r.init.rtr, t[k].want);
        ASSERT(r.init.initiator && !r.resp.initiator);
    }
}

TEST(nego_p2p_default_offer_is_read)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(2);
    struct swp_mpa_rr_info ri;

    i.p2p = 1;
    ASSERT(swp_mpa_build_request(out, sizeof(out), &i) > 0);
    ASSERT_OK(swp_mpa_parse_rr(out, 24, false, &ri));
    ASSERT_EQ(ri.rtr, SIWARP_RTR_READ);
    ASSERT(ri.p2p);
}

TEST(nego_p2p_no_common_rtr)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    /* Send RTR only; the responder accepts Write and Read by default */
    i.p2p = 1;
    i.rtr = SIWARP_RTR_SEND;
    exchange(&i, &s, &r);
    ASSERT_EQ(r.rc_resp, -EPROTO);
    ASSERT(r.reject);
    ASSERT(r.rep_info.reject);
    ASSERT_EQ(r.rep_info.rtr, 0);
    ASSERT_EQ(r.rc_init, -ECONNREFUSED);
}

TEST(nego_initiator_checks_reply_rtr)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(2);
    struct swp_mpa_rr_info rep;
    struct swp_nego n;
    const char *why;
    int len;

    i.p2p = 1;
    i.rtr = SIWARP_RTR_READ;
    /* responder chose Write, which we did not offer */
    len = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH,
                           SWP_MPA_V2_IRD_P2P | 1, SWP_MPA_V2_ORD_WRITE_RTR | 1, NULL, 0);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)len, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EPROTO);
    /* two types at once */
    i.rtr = SIWARP_RTR_READ | SIWARP_RTR_WRITE;
    len = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, SWP_MPA_V2_IRD_P2P | 1,
                           SWP_MPA_V2_ORD_WRITE_RTR | SWP_MPA_V2_ORD_READ_RTR | 1, NULL, 0);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)len, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EPROTO);
    /* P2P bit without a type */
    len = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, SWP_MPA_V2_IRD_P2P | 1,
                           1, NULL, 0);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)len, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EPROTO);
    /* P2P in a reply we did not ask for */
    i.p2p = 0;
    len = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, SWP_MPA_V2_IRD_P2P | 1,
                           SWP_MPA_V2_ORD_READ_RTR | 1, NULL, 0);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)len, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EPROTO);
    /* siw's real P2P answer, Write: refused when Read was allowed (we then
     * offered Read alone), taken when Write was the only type offered */
    i.p2p = 1;
    len = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH | SWP_MPA_FLAG_C,
                           SWP_MPA_V2_IRD_P2P | 1, SWP_MPA_V2_ORD_WRITE_RTR | 1, NULL, 0);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)len, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EPROTO);
    i.rtr = SIWARP_RTR_WRITE;
    ASSERT_OK(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why));
    ASSERT_EQ(n.rtr, SIWARP_RTR_WRITE);
    ASSERT(n.crc && n.p2p);
}

TEST(nego_ird_ord_lenient)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    i.ird = 2;
    i.ord = 16;
    s.ird = 4;
    s.ord = 8;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT_EQ(r.resp.ird, 4);
    ASSERT_EQ(r.resp.ord, 2);       /* min(8, initiator IRD 2) */
    ASSERT_EQ(r.init.ird, 2);
    ASSERT_EQ(r.init.ord, 4);       /* min(16, responder IRD 4) */
    ASSERT_EQ(r.rep_info.ird, 4);
    ASSERT_EQ(r.rep_info.ord, 2);

    /* peer IRD 0: we may issue no Read at all */
    i.ird = 0;
    exchange(&i, &s, &r);
    ASSERT_EQ(r.resp.ord, 0);
}

TEST(nego_private_data_stripped)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    i.private_data = "hello";
    i.private_data_len = 5;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_EQ(r.resp.peer_pd_len, 5);
    ASSERT_MEM_EQ(r.resp.peer_pd, "hello", 5);
    ASSERT_EQ(r.init.peer_pd_len, 2);
    ASSERT_MEM_EQ(r.init.peer_pd, "ok", 2);
}

/* ---- big FPDUs -------------------------------------------------------------------- */

TEST(big_fpdu_between_siwarp_peers)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    i.big_fpdu = 65535;
    s.big_fpdu = 16384;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT(r.resp.peer_is_siwarp && r.init.peer_is_siwarp);
    ASSERT_EQ(r.init.mulpdu, 16384);            /* the responder takes 16 KiB */
    ASSERT_EQ(r.init.max_rx_ulpdu, 65535);
    ASSERT_EQ(r.resp.mulpdu, 16384);            /* min(peer 64K, own 16K) */
    ASSERT_EQ(r.resp.max_rx_ulpdu, 16384);
    /* private data untouched */
    ASSERT_EQ(r.init.peer_pd_len, 2);

    /* responder without big_fpdu: siwarp answer, standard sizes */
    s.big_fpdu = 0;
    exchange(&i, &s, &r);
    ASSERT(r.init.peer_is_siwarp);
    ASSERT_EQ(r.init.mulpdu, 1454);
    ASSERT_EQ(r.resp.mulpdu, 1454);

    /* initiator without big_fpdu: a standard frame, no siwarp bits at all */
    i.big_fpdu = 0;
    s.big_fpdu = 65535;
    exchange(&i, &s, &r);
    ASSERT(!r.resp.peer_is_siwarp && !r.init.peer_is_siwarp);
    ASSERT_EQ(r.rep_info.flags & 0x0f, 0);
}

/* The initiator i's Request, answered as siw answers: every flag bit of
 * the request echoed into the reply (rep); the reply must not pass for
 * siwarp.  Returns the frame length. */
static int siw_echo(const struct siwarp_conn_param *i, uint8_t *rep, struct swp_nego *n)
{
    uint8_t req[SWP_MPA_RR_MAX_LEN];
    struct swp_mpa_rr_info ri;
    const char *why;
    int len = swp_mpa_build_request(req, sizeof(req), i);

    ASSERT((req[16] & 0x0f) != 0);
    memcpy(rep, req, (size_t)len);
    memcpy(rep, SWP_MPA_KEY_REP, 16);
    ASSERT_OK(swp_mpa_parse_rr(rep, (size_t)len, true, &ri));
    ASSERT(!ri.siwarp);
    ASSERT_OK(swp_mpa_nego_initiator(i, &ri, 1460, n, &why));
    ASSERT(!n->peer_is_siwarp);
    return len;
}

TEST(big_fpdu_siw_echo_is_not_siwarp)
{
    uint8_t rep[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(2);
    struct swp_nego n;

    i.big_fpdu = 65535;
    siw_echo(&i, rep, &n);
    ASSERT_EQ(n.mulpdu, 1454);
    ASSERT_EQ(n.max_rx_ulpdu, 65535);
}

/* ---- RFC 7306 between siwarp peers (mpa.h) ------------------------------------------ */

TEST(rfc7306_offer_accepted_by_siwarp)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    i.rfc7306 = 1;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT_EQ(r.req[16] & 0x0f, SWP_MPA_RFC7306_OFFER);
    ASSERT(r.resp.rfc7306 && r.init.rfc7306);
    ASSERT(r.resp.peer_is_siwarp && r.init.peer_is_siwarp);
    ASSERT_EQ(r.rep_info.flags & 0x0f, SWP_MPA_SIWARP_REPLY);   /* class 0 */
    ASSERT_EQ(r.init.mulpdu, 1454);          /* no big FPDUs were asked for */
    ASSERT_EQ(r.resp.mulpdu, 1454);

    /* with big FPDUs on both sides: the offer announces class 7 (65535) */
    i.big_fpdu = 16384;
    s.big_fpdu = 32768;
    exchange(&i, &s, &r);
    ASSERT(r.resp.rfc7306 && r.init.rfc7306);
    ASSERT_EQ(r.init.max_rx_ulpdu, 65535);   /* what the offer told the peer */
    ASSERT_EQ(r.resp.mulpdu, 32768);         /* min(peer 64K, own 32K) */
    ASSERT_EQ(r.init.mulpdu, 16384);         /* min(peer 32K, own 16K) */
    ASSERT_EQ(r.resp.max_rx_ulpdu, 32768);

    /* with markers: the offer still goes, big FPDUs do not */
    i.markers = s.markers = 1;
    exchange(&i, &s, &r);
    ASSERT(r.resp.rfc7306 && r.init.rfc7306);
    ASSERT_EQ(r.init.mulpdu, r.resp.mulpdu);
    ASSERT(r.init.mulpdu < 1460);
}

TEST(rfc7306_not_offered_nothing_changes)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    s.rfc7306 = 1;                           /* a responder never offers */
    exchange(&i, &s, &r);
    ASSERT(!r.resp.rfc7306 && !r.init.rfc7306);
    ASSERT_EQ(r.req[16] & 0x0f, 0);
    ASSERT_EQ(r.rep_info.flags & 0x0f, 0);
    /* big FPDUs alone: as before, siwarp but no RFC 7306 */
    i.big_fpdu = 65535;
    exchange(&i, &s, &r);
    ASSERT(r.init.peer_is_siwarp && !r.init.rfc7306 && !r.resp.rfc7306);
}

TEST(rfc7306_refused_by_responder)
{
    struct siwarp_conn_param i = param(2), s = param(2);
    struct pair r;

    i.rfc7306 = 1;
    s.rfc7306 = -1;
    s.big_fpdu = 65535;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_init);
    ASSERT(!r.resp.rfc7306 && !r.init.rfc7306);
    ASSERT_EQ(r.rep_info.flags & 0x0f, 0);   /* a plain reply */
    ASSERT(!r.init.peer_is_siwarp && !r.resp.peer_is_siwarp);
    ASSERT_EQ(r.init.mulpdu, 1454);
}

/* siw echoes the request's reserved bits: 0x0f back is not an answer */
TEST(rfc7306_siw_echo_declines)
{
    uint8_t rep[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(2);
    struct swp_mpa_rr_info ri;
    struct swp_nego n;
    const char *why;
    int len;

    i.rfc7306 = 1;
    i.big_fpdu = 65535;
    len = siw_echo(&i, rep, &n);
    ASSERT_EQ(rep[16] & 0x0f, SWP_MPA_RFC7306_OFFER);
    ASSERT(!n.rfc7306);
    ASSERT_EQ(n.mulpdu, 1454);
    /* a hardware reply (reserved bits zero) declines too */
    rep[16] &= 0xf0;
    ASSERT_OK(swp_mpa_parse_rr(rep, (size_t)len, true, &ri));
    ASSERT_OK(swp_mpa_nego_initiator(&i, &ri, 1460, &n, &why));
    ASSERT(!n.rfc7306);
}

/* An earlier siwarp parses the offer as "not siwarp" and answers plainly;
 * and no reply of a siwarp responder is ever 0x0f. */
TEST(rfc7306_offer_unlike_any_earlier_request)
{
    uint8_t req[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(2);
    struct swp_mpa_rr_info ri;

    for (uint32_t big = 0; big <= 65535; big += 1024) {
        i.big_fpdu = big;
        i.rfc7306 = 0;
        swp_mpa_build_request(req, sizeof(req), &i);
        ASSERT_EQ(req[16] & SWP_MPA_SIWARP_REPLY, 0);       /* bit 0 never set */
        ASSERT((req[16] & 0x0f) != SWP_MPA_RFC7306_OFFER);
        for (unsigned cls = 0; cls <= 6; cls++) {
            struct swp_nego n = { 0 };
            uint8_t rep[SWP_MPA_RR_MAX_LEN];
            int len = swp_mpa_build_request(req, sizeof(req), &i);
            ASSERT_OK(swp_mpa_parse_rr(req, (size_t)len, false, &ri));
            ri.siwarp = true;
            len = swp_mpa_build_reply(rep, sizeof(rep), &n, &ri, swp_mpa_big_limit(cls), NULL, 0);
            ASSERT((rep[16] & 0x0f) != SWP_MPA_RFC7306_OFFER);
        }
    }
}

TEST(big_fpdu_classes)
{
    ASSERT_EQ(swp_mpa_big_class(0), 0);
    ASSERT_EQ(swp_mpa_big_class(2047), 0);
    ASSERT_EQ(swp_mpa_big_class(2048), 1);
    ASSERT_EQ(swp_mpa_big_class(10000), 3);
    ASSERT_EQ(swp_mpa_big_limit(3), 8192);
    ASSERT_EQ(swp_mpa_big_class(65535), 6);
    ASSERT_EQ(swp_mpa_big_limit(6), 65535);
    ASSERT_EQ(swp_mpa_big_limit(7), 65535);
}

/* ---- MULPDU and markers -------------------------------------------------------------- */

TEST(mulpdu_from_mss)
{
    /* EMSS 1460: 1460 - (2 + 4 + 0) */
    ASSERT_EQ(swp_mpa_mulpdu(1460, false, true), 1454);
    ASSERT_EQ(swp_mpa_mulpdu(1460, false, false), 1454);
    /* markers: 3 markers in 1460 octets */
    ASSERT_EQ(swp_mpa_mulpdu(1460, true, false), 1442);
    /* loopback MSS 65483: 65483 mod 4 = 3 */
    ASSERT_EQ(swp_mpa_mulpdu(65483, false, false), 65474);
    ASSERT_EQ(swp_mpa_mulpdu(65483, true, false), 65483 - (6 + 4 * 128 + 3));
    /* the FPDU built from the result fits the segment */
    ASSERT(2 + 1454 + swp_mpa_pad(1454) + 4 <= 1460);
    ASSERT(2 + 65474 + swp_mpa_pad(65474) + 4 <= 65483);
    ASSERT_EQ(swp_mpa_pad(65474), 0);
    /* conn_param.mulpdu overrides */
    {
        struct siwarp_conn_param i = param(2), s = param(2);
        struct pair r;

        i.mulpdu = 1000;
        exchange(&i, &s, &r);
        ASSERT_EQ(r.init.mulpdu, 1000);
        ASSERT_EQ(r.resp.mulpdu, 1454);
    }
}

TEST(marker_positions)
{
    ASSERT_EQ(swp_mpa_marker_next(0), 0);
    ASSERT_EQ(swp_mpa_marker_next(1), 512);
    ASSERT_EQ(swp_mpa_marker_next(512), 512);
    ASSERT_EQ(swp_mpa_marker_next(513), 1024);
    ASSERT_EQ(swp_mpa_marker_next(0x100000000ull + 1), 0x100000200ull);
}

/* ---- the connection manager over real sockets ---------------------------------------- */

struct env {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
};

static void env_init(struct env *e)
{
    ASSERT_OK(siwarp_ctx_create(&e->ctx));
    ASSERT_OK(siwarp_alloc_pd(e->ctx, &e->pd));
    ASSERT_OK(siwarp_create_cq(e->ctx, 64, &e->cq));
}

/* Release every QP of the context, then the CQ, PD and context (the case
 * destroys its listeners and deregisters its MRs first). */
static void env_fini(struct env *e)
{
    while (!swp_list_empty(&e->ctx->qps)) {
        struct siwarp_qp *qp = swp_container_of(e->ctx->qps.next, struct siwarp_qp, link);
        ASSERT_OK(siwarp_destroy_qp(qp));
    }
    ASSERT_OK(siwarp_destroy_cq(e->cq));
    ASSERT_OK(siwarp_dealloc_pd(e->pd));
    siwarp_ctx_destroy(e->ctx);
}

static struct siwarp_qp *env_qp(struct env *e)
{
    struct siwarp_qp_init_attr a;
    struct siwarp_qp *qp;

    memset(&a, 0, sizeof(a));
    a.send_cq = a.recv_cq = e->cq;
    a.max_send_wr = a.max_recv_wr = 8;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(e->pd, &a, &qp));
    return qp;
}

static struct sockaddr_in loopback(uint16_t port)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port);
    return sin;
}

static struct siwarp_listener *listen_lo(struct env *e, int timeout_ms, struct sockaddr_in *bound)
{
    struct siwarp_conn_param p;
    struct siwarp_listener *l;
    struct sockaddr_in sin = loopback(0);
    struct sockaddr_storage ss;

    siwarp_conn_param_default(&p);
    p.crc = 0;
    p.timeout_ms = timeout_ms;
    ASSERT_OK(siwarp_listen(e->ctx, (struct sockaddr *)&sin, sizeof(sin), &p, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));
    memcpy(bound, &ss, sizeof(*bound));
    return l;
}

static int raw_connect(const struct sockaddr_in *to)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ASSERT(fd >= 0);
    ASSERT_OK(connect(fd, (const struct sockaddr *)to, sizeof(*to)));
    return fd;
}

/* Progress ctx until fd reads EOF / reset (1) or the time runs out (0). */
static int wait_closed(struct env *e, int fd, int ms)
{
    uint64_t end = swp_now_ns() + (uint64_t)ms * 1000000ull;
    char b[64];

    while (swp_now_ns() < end) {
        ssize_t n;

        siwarp_wait(e->ctx, 20);
        n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
    }
    return 0;
}

static void read_full(int fd, uint8_t *b, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = recv(fd, b + got, n - got, 0);
        ASSERT(r > 0);
        got += (size_t)r;
    }
}

TEST(listener_drops_silent_peer_serves_healthy)
{
    struct env e;
    struct sockaddr_in at;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_conn_param rp;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    uint8_t rep[24];
    int silent, half, good;
    uint64_t t0;

    env_init(&e);
    l = listen_lo(&e, 400, &at);
    silent = raw_connect(&at);
    half = raw_connect(&at);
    ASSERT_EQ(send(half, siw_req, 10, 0), 10);      /* half a header, then nothing */
    good = raw_connect(&at);
    t0 = swp_now_ns();
    ASSERT_EQ(send(good, siw_req, 12, 0), 12);      /* split across two segments */
    siwarp_progress(e.ctx);
    ASSERT_EQ(send(good, siw_req + 12, sizeof(siw_req) - 12, 0), (ssize_t)sizeof(siw_req) - 12);
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    ASSERT(swp_now_ns() - t0 < 300000000ull);       /* not held up by the others */
    ASSERT_OK(siwarp_conn_req_param(req, &rp, NULL));
    ASSERT_EQ(rp.mpa_rev, 2);
    ASSERT_EQ(rp.ird, 1);
    qp = env_qp(&e);
    ASSERT_OK(siwarp_accept(req, qp, NULL));
    read_full(good, rep, sizeof(rep));
    ASSERT_MEM_EQ(rep, SWP_MPA_KEY_REP, 16);
    ASSERT_EQ(rep[17], 2);
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT_EQ(qa.state, SIWARP_QPS_RTS);
    ASSERT_EQ(qa.mpa_rev, 2);
    ASSERT_EQ(qa.ord, 1);                           /* min(16, siw IRD 1) */

    /* the silent and the half-header peers go after the 400 ms timeout */
    ASSERT(wait_closed(&e, silent, 2000));
    ASSERT(wait_closed(&e, half, 500));
    ASSERT(swp_now_ns() - t0 >= 350000000ull);
    close(silent);
    close(half);
    close(good);
    siwarp_listener_destroy(l);
    env_fini(&e);
}

static void bad_request_closed(const uint8_t *f, size_t n, bool want_reject)
{
    struct env e;
    struct sockaddr_in at;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    uint8_t rep[64];
    int fd;

    env_init(&e);
    l = listen_lo(&e, 5000, &at);
    fd = raw_connect(&at);
    ASSERT_EQ(send(fd, f, n, 0), (ssize_t)n);
    if (want_reject) {
        struct swp_mpa_rr_info ri;
        ssize_t r;

        for (int i = 0; i < 100; i++) {
            siwarp_wait(e.ctx, 10);
            r = recv(fd, rep, sizeof(rep), MSG_DONTWAIT | MSG_PEEK);
            if (r >= 20)
                break;
        }
        r = recv(fd, rep, sizeof(rep), 0);
        ASSERT(r >= 20);
        ASSERT_OK(swp_mpa_parse_rr(rep, (size_t)r, true, &ri));
        ASSERT(ri.reject);
    }
    ASSERT(wait_closed(&e, fd, 1000));              /* long before the 5 s timeout */
    ASSERT_EQ(siwarp_get_conn_request(l, &req), -EAGAIN);
    close(fd);
    /* and the listener still serves */
    fd = raw_connect(&at);
    ASSERT_EQ(send(fd, siw_req, sizeof(siw_req), 0), (ssize_t)sizeof(siw_req));
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    ASSERT_OK(siwarp_reject(req, "busy", 4));
    {
        struct swp_mpa_rr_info ri;
        uint8_t b[64];
        ssize_t r;

        read_full(fd, b, 20);
        r = recv(fd, b + 20, sizeof(b) - 20, MSG_WAITALL);
        ASSERT(r == 8);
        ASSERT_OK(swp_mpa_parse_rr(b, 28, true, &ri));
        ASSERT(ri.reject);
        ASSERT_EQ(ri.pd_len, 4);
        ASSERT_MEM_EQ(ri.pd, "busy", 4);
    }
    close(fd);
    siwarp_listener_destroy(l);
    env_fini(&e);
}

TEST(listener_closes_garbage_key)
{
    uint8_t f[24];

    memcpy(f, siw_req, sizeof(f));
    memcpy(f, "GET / HTTP/1.1\r\n", 16);
    bad_request_closed(f, sizeof(f), false);
}

TEST(listener_closes_pd_len_1000)
{
    uint8_t f[20];

    frame(f, SWP_MPA_KEY_REQ, SWP_MPA_FLAG_ENH, 2, 1000);
    bad_request_closed(f, sizeof(f), false);
}

TEST(listener_closes_rev3)
{
    uint8_t f[24];

    memcpy(f, siw_req, sizeof(f));
    f[17] = 3;
    bad_request_closed(f, sizeof(f), false);
}

TEST(listener_rejects_enhanced_without_block)
{
    uint8_t f[22];

    memset(f, 0, sizeof(f));
    frame(f, SWP_MPA_KEY_REQ, SWP_MPA_FLAG_ENH, 2, 2);
    bad_request_closed(f, sizeof(f), true);
}

/* A raw TCP responder run in a thread: reads a Request, answers per mode. */
enum raw_mode { RAW_REJECT, RAW_SILENT, RAW_V1_ONLY, RAW_SIW_P2P, RAW_SIW_NO_MARKERS };

struct raw_srv {
    int lfd;
    struct sockaddr_in at;
    enum raw_mode mode;
    int requests;
    uint8_t last_req_flags, last_req_rev;
    pthread_t th;
};

static int raw_read_req(int fd, uint8_t *b)
{
    size_t got = 0, want = 20;

    while (got < want) {
        ssize_t r = recv(fd, b + got, want - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        if (got == 20)
            want = 20 + swp_get16(b + 18);
    }
    return (int)got;
}

static void *raw_srv_main(void *arg)
{
    struct raw_srv *s = arg;

    for (;;) {
        uint8_t b[SWP_MPA_RR_MAX_LEN], out[SWP_MPA_RR_MAX_LEN];
        int fd = accept(s->lfd, NULL, NULL), n = 0;

        if (fd < 0)
            return NULL;
        if (raw_read_req(fd, b) < 0) {
            close(fd);
            continue;
        }
        s->requests++;
        s->last_req_flags = b[16];
        s->last_req_rev = b[17];
        switch (s->mode) {
        case RAW_REJECT:
            n = swp_mpa_build_rr(out, sizeof(out), true, b[17], SWP_MPA_FLAG_R | SWP_MPA_FLAG_ENH,
                                 0, 0, "go away", 7);
            break;
        case RAW_SILENT:
            pause();
            break;
        case RAW_V1_ONLY:
            if (b[17] != 1) {           /* RFC 5044 7.1: close on a foreign revision */
                close(fd);
                continue;
            }
            n = swp_mpa_build_rr(out, sizeof(out), true, 1, 0, 0, 0, NULL, 0);
            break;
        case RAW_SIW_NO_MARKERS:
            /* siw answers a markers request with Reject; else echoes */
            n = swp_mpa_build_rr(out, sizeof(out), true, 2,
                                 (b[16] & SWP_MPA_FLAG_M) ? (uint8_t)(b[16] | SWP_MPA_FLAG_R) : b[16],
                                 1, 1, NULL, 0);
            break;
        case RAW_SIW_P2P:
            /* siw echoes the flags and picks Write */
            n = swp_mpa_build_rr(out, sizeof(out), true, 2, b[16],
                                 SWP_MPA_V2_IRD_P2P | 1, SWP_MPA_V2_ORD_WRITE_RTR | 1, NULL, 0);
            break;
        }
        ASSERT(n > 0);
        ASSERT_EQ(send(fd, out, (size_t)n, MSG_NOSIGNAL), n);
        if (s->mode == RAW_SIW_P2P) {
            /* expect the RTR: a zero-length RDMA Write FPDU */
            uint8_t f[2 + 14 + 4];
            size_t got = 0;
            while (got < sizeof(f)) {
                ssize_t r = recv(fd, f + got, sizeof(f) - got, 0);
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            s->requests += (got == sizeof(f) && swp_get16(f) == 14 &&
                            (f[3] & 0x0f) == SWP_OP_WRITE) ? 100 : 0;
        }
        shutdown(fd, SHUT_WR);
        sleep(1);
        close(fd);
    }
}

static void raw_srv_start(struct raw_srv *s, enum raw_mode mode)
{
    socklen_t sl = sizeof(s->at);

    memset(s, 0, sizeof(*s));
    s->mode = mode;
    s->at = loopback(0);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(s->lfd >= 0);
    ASSERT_OK(bind(s->lfd, (struct sockaddr *)&s->at, sizeof(s->at)));
    ASSERT_OK(listen(s->lfd, 8));
    ASSERT_OK(getsockname(s->lfd, (struct sockaddr *)&s->at, &sl));
    ASSERT_OK(pthread_create(&s->th, NULL, raw_srv_main, s));
}

/* The thread works on *s, which lives in the test's frame: it has to end
 * before the test returns (it may be in accept, recv, sleep or pause, all
 * cancellation points). */
static void raw_srv_stop(struct raw_srv *s)
{
    pthread_cancel(s->th);
    ASSERT_OK(pthread_join(s->th, NULL));
    close(s->lfd);
}

static int connect_to(struct env *e, struct siwarp_qp *qp, struct raw_srv *s,
                      struct siwarp_conn_param *p)
{
    ASSERT_OK(siwarp_connect(qp, (struct sockaddr *)&s->at, sizeof(s->at), p));
    return siwarp_connect_wait(qp, 5000);
    (void)e;
}

TEST(connect_reject_reply)
{
    struct env e;
    struct raw_srv s;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    struct siwarp_conn_param p;
    char port[16];

    env_init(&e);
    raw_srv_start(&s, RAW_REJECT);
    qp = env_qp(&e);
    siwarp_conn_param_default(&p);
    ASSERT_EQ(connect_to(&e, qp, &s, &p), -ECONNABORTED);   /* MPA Reject, not TCP */
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT_EQ(qa.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(qa.error, -ECONNABORTED);
    snprintf(port, sizeof(port), ":%u", ntohs(s.at.sin_port));
    ASSERT(strstr(qa.error_str, "127.0.0.1") && strstr(qa.error_str, port));
    ASSERT(strstr(qa.error_str, "Reject"));
    ASSERT_EQ(s.requests, 1);
    raw_srv_stop(&s);
    env_fini(&e);
}

TEST(connect_timeout_silent_responder)
{
    struct env e;
    struct raw_srv s;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    struct siwarp_conn_param p;
    uint64_t t0 = swp_now_ns();

    env_init(&e);
    raw_srv_start(&s, RAW_SILENT);
    qp = env_qp(&e);
    siwarp_conn_param_default(&p);
    p.timeout_ms = 300;
    ASSERT_EQ(connect_to(&e, qp, &s, &p), -ETIMEDOUT);
    ASSERT(swp_now_ns() - t0 >= 250000000ull);
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT(strstr(qa.error_str, "MPA Reply"));
    raw_srv_stop(&s);
    env_fini(&e);
}

TEST(connect_v1_fallback)
{
    struct env e;
    struct raw_srv s;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    struct siwarp_conn_param p;

    env_init(&e);
    raw_srv_start(&s, RAW_V1_ONLY);
    qp = env_qp(&e);
    siwarp_conn_param_default(&p);
    p.crc = 0;
    ASSERT_OK(connect_to(&e, qp, &s, &p));
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT_EQ(qa.mpa_rev, 1);
    ASSERT_EQ(qa.p2p, 0);
    ASSERT_EQ(s.requests, 2);          /* rev 2 closed by the peer, then rev 1 */
    ASSERT_EQ(s.last_req_rev, 1);

    /* without v1_fallback the same peer is a failure */
    qp = env_qp(&e);
    p.v1_fallback = 0;
    ASSERT(connect_to(&e, qp, &s, &p) < 0);
    raw_srv_stop(&s);
    env_fini(&e);
}

TEST(connect_markers_fallback)
{
    struct env e;
    struct raw_srv s;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    struct siwarp_conn_param p;

    env_init(&e);
    raw_srv_start(&s, RAW_SIW_NO_MARKERS);
    qp = env_qp(&e);
    siwarp_conn_param_default(&p);
    p.p2p = 0;
    p.markers = 1;
    ASSERT_OK(connect_to(&e, qp, &s, &p));
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT_EQ(qa.markers, 0);
    ASSERT_EQ(qa.mpa_rev, 2);
    ASSERT_EQ(s.requests, 2);
    ASSERT_EQ(s.last_req_flags & SWP_MPA_FLAG_M, 0);

    /* without markers_fallback: the Reject ends it */
    qp = env_qp(&e);
    p.markers_fallback = 0;
    ASSERT_EQ(connect_to(&e, qp, &s, &p), -ECONNABORTED);
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT(strstr(qa.error_str, "markers") != NULL);   /* the likely cause is named */
    raw_srv_stop(&s);
    env_fini(&e);
}

TEST(connect_accept_ipv6)
{
    struct env e;
    struct sockaddr_in6 sin6;
    struct sockaddr_storage ss;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_qp *a, *b;
    struct siwarp_qp_attr qa;
    int probe = socket(AF_INET6, SOCK_STREAM, 0);

    memset(&sin6, 0, sizeof(sin6));
    sin6.sin6_family = AF_INET6;
    sin6.sin6_addr = in6addr_loopback;
    if (probe < 0 || bind(probe, (struct sockaddr *)&sin6, sizeof(sin6)) < 0)
        SKIP("no IPv6 loopback");
    close(probe);
    env_init(&e);
    ASSERT_OK(siwarp_listen(e.ctx, (struct sockaddr *)&sin6, sizeof(sin6), NULL, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));
    ASSERT_EQ(ss.ss_family, AF_INET6);
    a = env_qp(&e);
    b = env_qp(&e);
    ASSERT_OK(siwarp_connect(a, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6), NULL));
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    ASSERT_OK(siwarp_accept(req, b, NULL));
    ASSERT_OK(siwarp_connect_wait(a, 2000));
    ASSERT_OK(siwarp_query_qp(a, &qa));
    ASSERT_EQ(qa.state, SIWARP_QPS_RTS);
    ASSERT_EQ(qa.peer.ss_family, AF_INET6);
    siwarp_listener_destroy(l);
    env_fini(&e);
}

/* siwarp_query_qp keeps the socket's addresses once both are known: a query
 * while connecting must not pin an empty peer, and the two ends must see
 * each other (a's local address is b's peer address and back). */
/* A listener on loopback (lp: its parameters, or NULL), two QPs, and a's
 * connect to it under way; *ss: the listener's address. */
static struct siwarp_listener *listen_connect_lo(struct env *e, const struct siwarp_conn_param *lp,
                                                 struct sockaddr_storage *ss,
                                                 struct siwarp_qp **a, struct siwarp_qp **b)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    struct siwarp_listener *l;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_OK(siwarp_listen(e->ctx, (struct sockaddr *)&sin, sizeof(sin), lp, &l));
    ASSERT_OK(siwarp_listener_addr(l, ss));
    *a = env_qp(e);
    *b = env_qp(e);
    ASSERT_OK(siwarp_connect(*a, (struct sockaddr *)ss, sizeof(struct sockaddr_in), NULL));
    return l;
}

TEST(query_qp_addresses_follow_the_connection)
{
    struct env e;
    struct sockaddr_storage ss;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_qp *a, *b;
    struct siwarp_qp_attr qa, qb;

    env_init(&e);
    l = listen_connect_lo(&e, NULL, &ss, &a, &b);
    ASSERT_OK(siwarp_query_qp(a, &qa));         /* early: the peer may not be known yet */
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    ASSERT_OK(siwarp_accept(req, b, NULL));
    ASSERT_OK(siwarp_connect_wait(a, 2000));
    ASSERT_OK(siwarp_query_qp(a, &qa));
    ASSERT_OK(siwarp_query_qp(b, &qb));
    for (int round = 0; round < 2; round++) {   /* the second round reads the kept copy */
        const struct sockaddr_in *al = (const void *)&qa.local, *ap = (const void *)&qa.peer;
        const struct sockaddr_in *bl = (const void *)&qb.local, *bp = (const void *)&qb.peer;
        ASSERT_EQ(ap->sin_family, AF_INET);
        ASSERT_EQ(ap->sin_port, ((const struct sockaddr_in *)&ss)->sin_port);
        ASSERT_EQ(al->sin_port, bp->sin_port);
        ASSERT_EQ(bl->sin_port, ap->sin_port);
        ASSERT(al->sin_port != 0);
        ASSERT_OK(siwarp_query_qp(a, &qa));
        ASSERT_OK(siwarp_query_qp(b, &qb));
    }
    siwarp_listener_destroy(l);
    env_fini(&e);
}

static int sockopt_int(int fd, int level, int name)
{
    int v = -12345;
    socklen_t l = sizeof(v);

    ASSERT_OK(getsockopt(fd, level, name, &v, &l));
    return v;
}

/* Accept with llp_ms as the LLP timeout (SIWARP_CONN_PARAM: 0 default,
 * < 0 none) from a listener set up with listen_llp_ms; returns the
 * accepted QP, in RTS. */
static struct siwarp_qp *accept_with_llp(struct env *e, int listen_llp_ms, int llp_ms)
{
    struct sockaddr_storage ss;
    struct siwarp_conn_param lp, ap;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_qp *a, *b;

    siwarp_conn_param_default(&lp);
    lp.rtr = SIWARP_RTR_WRITE | SIWARP_RTR_READ;
    lp.llp_timeout_ms = listen_llp_ms;
    ap = lp;
    ap.llp_timeout_ms = llp_ms;
    l = listen_connect_lo(e, &lp, &ss, &a, &b);
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    ASSERT_OK(siwarp_accept(req, b, &ap));
    ASSERT_OK(siwarp_connect_wait(a, 2000));
    for (int i = 0; i < 200 && b->state != SIWARP_QPS_RTS; i++)
        siwarp_wait(e->ctx, 5);
    ASSERT_EQ(b->state, SIWARP_QPS_RTS);
    siwarp_listener_destroy(l);
    return b;
}

/* An accepted socket has what the QP needs -- TCP_NODELAY, and keepalive
 * and TCP_USER_TIMEOUT for the accept's LLP timeout -- whether inherited
 * from the listener or set because the accept asked for another one. */
TEST(accepted_socket_options_follow_the_accept)
{
    struct env e;
    struct siwarp_qp *b;

    env_init(&e);
    b = accept_with_llp(&e, 20000, 20000);          /* as the listener: inherited */
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_NODELAY), 1);
    ASSERT_EQ(sockopt_int(b->pl.fd, SOL_SOCKET, SO_KEEPALIVE), 1);
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 20000);
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_KEEPIDLE), 10);
    b = accept_with_llp(&e, 20000, 8000);           /* the accept's own */
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_NODELAY), 1);
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 8000);
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_KEEPIDLE), 4);
    b = accept_with_llp(&e, 0, 0);                  /* both the default */
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 30000);
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_KEEPIDLE), 15);
    b = accept_with_llp(&e, 20000, -1);             /* none */
    ASSERT_EQ(sockopt_int(b->pl.fd, SOL_SOCKET, SO_KEEPALIVE), 0);
    ASSERT_EQ(sockopt_int(b->pl.fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
    env_fini(&e);
}

/* siwarp_take_conn_request never reads a socket: the request appears only
 * after something progressed the context */
TEST(take_conn_request_only_after_progress)
{
    struct env ini, rsp;        /* two contexts: progressing one leaves the other alone */
    struct sockaddr_in sin = { .sin_family = AF_INET };
    struct sockaddr_storage ss;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req = NULL, *again;
    struct siwarp_qp *a, *b;
    struct siwarp_wc wc;
    int i;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    env_init(&ini);
    env_init(&rsp);
    ASSERT_OK(siwarp_listen(rsp.ctx, (struct sockaddr *)&sin, sizeof(sin), NULL, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));
    a = env_qp(&ini);
    b = env_qp(&rsp);
    ASSERT_OK(siwarp_connect(a, (struct sockaddr *)&ss, sizeof(struct sockaddr_in), NULL));
    /* the Request leaves on the initiator's progress; the kernel queues the
     * connection and its bytes at the listener */
    for (i = 0; i < 20; i++) {
        siwarp_progress(ini.ctx);
        usleep(1000);
    }
    /* waiting in the kernel, read by nobody: a take never finds it */
    for (i = 0; i < 3; i++)
        ASSERT_EQ(siwarp_take_conn_request(l, &req), -EAGAIN);
    /* a poll of the responder's CQ reads its listener's sockets on the way */
    for (i = 0; i < 200 && siwarp_take_conn_request(l, &req) == -EAGAIN; i++) {
        ASSERT(siwarp_poll_cq(rsp.cq, 1, &wc) >= 0);
        siwarp_progress(ini.ctx);
        usleep(1000);
    }
    ASSERT(req != NULL);
    ASSERT_EQ(siwarp_take_conn_request(l, &again), -EAGAIN);    /* taken once */
    ASSERT_EQ(siwarp_take_conn_request(NULL, &again), -EINVAL);
    ASSERT_OK(siwarp_accept(req, b, NULL));
    for (i = 0; i < 2000 && siwarp_connect_wait(a, 1) != 0; i++)
        siwarp_progress(rsp.ctx);
    ASSERT_OK(siwarp_connect_wait(a, 1));
    siwarp_listener_destroy(l);
    env_fini(&ini);
    env_fini(&rsp);
}

/* A Request that waits in the socket when the listener accepts it is read
 * in that same pass: one progress call, and it can be taken (the BTL
 * relies on this to take a peer's connection instead of connecting too). */
TEST(waiting_request_read_in_the_accepting_pass)
{
    struct env e;
    struct sockaddr_in at;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req = NULL;
    int fd;

    env_init(&e);
    l = listen_lo(&e, 2000, &at);
    fd = raw_connect(&at);
    ASSERT_EQ(send(fd, siw_req, sizeof(siw_req), 0), (ssize_t)sizeof(siw_req));
    usleep(20000);                      /* the bytes are in the accepted socket */
    ASSERT_EQ(siwarp_take_conn_request(l, &req), -EAGAIN);
    siwarp_progress(e.ctx);
    ASSERT_OK(siwarp_take_conn_request(l, &req));
    ASSERT(req != NULL);
    siwarp_reject(req, NULL, 0);
    close(fd);
    siwarp_listener_destroy(l);
    env_fini(&e);
}

TEST(connect_siw_style_p2p_write_rtr)
{
    struct env e;
    struct raw_srv s;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    struct siwarp_conn_param p;

    env_init(&e);
    raw_srv_start(&s, RAW_SIW_P2P);
    qp = env_qp(&e);
    siwarp_conn_param_default(&p);
    p.crc = 0;
    p.rtr = SIWARP_RTR_WRITE;
    ASSERT_OK(connect_to(&e, qp, &s, &p));
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT(qa.p2p);
    ASSERT_EQ(qa.rtr, SIWARP_RTR_WRITE);
    ASSERT_EQ(s.last_req_flags, SWP_MPA_FLAG_ENH);
    /* the data path sends the zero-length Write RTR */
    for (int i = 0; i < 100 && s.requests < 100; i++)
        siwarp_wait(e.ctx, 10);
    ASSERT_EQ(s.requests, 101);
    raw_srv_stop(&s);
    env_fini(&e);
}

/* Two siwarp QPs of one context joined over loopback: pair_ask connects
 * a with ini and waits for the request (for the caller to inspect),
 * pair_accept accepts it on b with rsp and waits until a is connected. */
struct qp_pair {
    struct env e;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_qp *a, *b;
};

static void pair_ask(struct qp_pair *pr, const struct siwarp_conn_param *ini)
{
    struct sockaddr_in at;

    env_init(&pr->e);
    pr->l = listen_lo(&pr->e, 2000, &at);
    pr->a = env_qp(&pr->e);
    pr->b = env_qp(&pr->e);
    ASSERT_OK(siwarp_connect(pr->a, (struct sockaddr *)&at, sizeof(at), ini));
    ASSERT_OK(siwarp_get_conn_request_wait(pr->l, 2000, &pr->req));
}

static void pair_accept(struct qp_pair *pr, const struct siwarp_conn_param *rsp)
{
    ASSERT_OK(siwarp_accept(pr->req, pr->b, rsp));
    ASSERT_OK(siwarp_connect_wait(pr->a, 2000));
}

/* Over loopback: the initiator offers, the listener's conn_req says so,
 * both QPs report it; without the offer neither does. */
TEST(connect_accept_rfc7306)
{
    struct qp_pair pr;
    struct siwarp_conn_param p, rp;
    struct siwarp_qp_attr qa, qb;

    siwarp_conn_param_default(&p);
    p.rfc7306 = 1;
    pair_ask(&pr, &p);
    ASSERT_OK(siwarp_conn_req_param(pr.req, &rp, NULL));
    ASSERT_EQ(rp.rfc7306, 1);
    siwarp_conn_param_default(&rp);
    pair_accept(&pr, &rp);
    ASSERT_OK(siwarp_query_qp(pr.a, &qa));
    ASSERT_OK(siwarp_query_qp(pr.b, &qb));
    ASSERT_EQ(qa.state, SIWARP_QPS_RTS);
    ASSERT(qa.rfc7306 && qb.rfc7306);
    ASSERT(qa.peer_is_siwarp && qb.peer_is_siwarp);
    siwarp_listener_destroy(pr.l);
    env_fini(&pr.e);

    siwarp_conn_param_default(&p);
    pair_ask(&pr, &p);
    ASSERT_OK(siwarp_conn_req_param(pr.req, &rp, NULL));
    ASSERT_EQ(rp.rfc7306, 0);
    siwarp_conn_param_default(&rp);
    pair_accept(&pr, &rp);
    ASSERT_OK(siwarp_query_qp(pr.a, &qa));
    ASSERT_OK(siwarp_query_qp(pr.b, &qb));
    ASSERT(!qa.rfc7306 && !qb.rfc7306);
    siwarp_listener_destroy(pr.l);
    env_fini(&pr.e);
}

TEST(connect_accept_siwarp_pair)
{
    struct qp_pair pr;
    struct siwarp_conn_param p, rp;
    struct siwarp_qp_attr qa, qb;

    siwarp_conn_param_default(&p);
    p.private_data = "from-a";
    p.private_data_len = 6;
    p.big_fpdu = 65535;
    pair_ask(&pr, &p);
    ASSERT_OK(siwarp_conn_req_param(pr.req, &rp, NULL));
    ASSERT_EQ(rp.private_data_len, 6);
    ASSERT_MEM_EQ(rp.private_data, "from-a", 6);
    ASSERT_EQ(rp.big_fpdu, 65535);
    siwarp_conn_param_default(&rp);
    rp.crc = 0;
    rp.big_fpdu = 32768;
    rp.private_data = "from-b";
    rp.private_data_len = 6;
    pair_accept(&pr, &rp);
    ASSERT_OK(siwarp_query_qp(pr.a, &qa));
    ASSERT_OK(siwarp_query_qp(pr.b, &qb));
    ASSERT_EQ(qa.state, SIWARP_QPS_RTS);
    ASSERT_EQ(qb.state, SIWARP_QPS_RTS);
    ASSERT(qa.crc && qb.crc);              /* a asked for CRC */
    ASSERT(qa.p2p && qb.p2p);
    ASSERT_EQ(qa.rtr, SIWARP_RTR_READ);    /* default: the initiator offers Read */
    ASSERT_EQ(qb.rtr, SIWARP_RTR_READ);
    ASSERT(qa.peer_is_siwarp && qb.peer_is_siwarp);
    ASSERT_EQ(qa.mulpdu, 32768);
    ASSERT_EQ(qb.mulpdu, 32768);
    ASSERT_EQ(qa.peer_private_data_len, 6);
    ASSERT_MEM_EQ(qa.peer_private_data, "from-b", 6);
    ASSERT_EQ(qb.peer_private_data_len, 6);
    ASSERT_MEM_EQ(qb.peer_private_data, "from-a", 6);
    siwarp_listener_destroy(pr.l);
    env_fini(&pr.e);
}

/* RFC 6581 6 start-up, then nothing armed: a timer left behind would send
 * every progress call through epoll (swp_progress_direct steps aside while
 * any timer is armed) until it fired, 100 ms into the connection. */
static void p2p_startup_leaves_no_timer(uint8_t rtr)
{
    struct qp_pair pr;
    struct siwarp_conn_param p, rp;
    struct siwarp_qp *a, *b;
    uint64_t t0 = swp_now_ns(), ms;

    siwarp_conn_param_default(&p);
    p.crc = 0;
    p.rtr = rtr;
    p.big_fpdu = 65535;             /* both siwarp: no nudges are due */
    pair_ask(&pr, &p);
    siwarp_conn_param_default(&rp);
    rp.crc = 0;
    rp.big_fpdu = 65535;
    rp.rtr = rtr;
    pair_accept(&pr, &rp);
    a = pr.a;
    b = pr.b;
    ASSERT(a->nego.p2p && b->nego.p2p);
    ASSERT_EQ(a->nego.rtr, rtr);
    ASSERT(a->nego.peer_is_siwarp && b->nego.peer_is_siwarp);
    for (int i = 0; i < 2000 && (a->rtr_pending_tx || a->rtr_wait_resp || b->rtr_wait_rx); i++)
        siwarp_wait(pr.e.ctx, 1);
    ASSERT(!a->rtr_pending_tx && !a->rtr_wait_resp && !b->rtr_wait_rx);
    ms = (swp_now_ns() - t0) / 1000000u;
    if (ms >= SWP_RTR_RETRY_MS)
        printf("# start-up took %llu ms, past the RTR timer's first tick: inconclusive\n",
               (unsigned long long)ms);
    ASSERT(!a->rtr_timer.armed);
    ASSERT(!b->rtr_timer.armed);
    ASSERT(swp_list_empty(&pr.e.ctx->timers));
    siwarp_listener_destroy(pr.l);
}

TEST(p2p_read_rtr_startup_leaves_no_timer)  { p2p_startup_leaves_no_timer(SIWARP_RTR_READ); }
TEST(p2p_write_rtr_startup_leaves_no_timer) { p2p_startup_leaves_no_timer(SIWARP_RTR_WRITE); }
TEST(p2p_send_rtr_startup_leaves_no_timer)  { p2p_startup_leaves_no_timer(SIWARP_RTR_SEND); }

SWP_TEST_MAIN()
