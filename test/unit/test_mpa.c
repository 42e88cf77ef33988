/*
 * test_mpa.c - MPA Request/Reply frames and connection-setup negotiation
 * (RFC 5044 section 7.1, RFC 6581), MULPDU and markers, then the connection
 * manager against raw-socket peers.
 */
#include <errno.h>
#include <string.h>

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
    ASSERT_MEM_EQ(out, siw_req_p2p, sizeof(siw_req_p2p));
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
    ASSERT_EQ(swp_mpa_build_rr(out, sizeof(out), false, 1, 0, 0, 0, out, 512), 532);
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

    /* markers asked, responder unwilling: Reject (as siw), initiator sees it */
    i.markers = 1;
    exchange(&i, &s, &r);
    ASSERT_EQ(r.rc_resp, -EOPNOTSUPP);
    ASSERT(r.reject);
    ASSERT(r.rep_info.reject);
    ASSERT_EQ(r.rc_init, -ECONNREFUSED);
    ASSERT_EQ(r.rep_info.pd_len, 2);
    ASSERT_MEM_EQ(r.rep_info.pd, "no", 2);

    /* both willing: markers both ways, smaller MULPDU */
    s.markers = 1;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_resp);
    ASSERT_OK(r.rc_init);
    ASSERT(r.resp.markers && r.init.markers);
    ASSERT_EQ(r.init.mulpdu, 1442);

    /* responder willing, initiator did not ask: no markers */
    i.markers = 0;
    exchange(&i, &s, &r);
    ASSERT_OK(r.rc_init);
    ASSERT(!r.resp.markers && !r.init.markers);
    ASSERT_EQ(r.init.mulpdu, 1454);
}

TEST(nego_markers_asymmetric_reply)
{
    struct siwarp_conn_param i = param(1);
    struct swp_mpa_rr_info rep;
    struct swp_nego n;
    const char *why;
    uint8_t f[20];

    /* a peer granting M in its reply although we did not ask */
    frame(f, SWP_MPA_KEY_REP, SWP_MPA_FLAG_M, 1, 0);
    ASSERT_OK(swp_mpa_parse_rr(f, 20, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EOPNOTSUPP);
    /* we asked, it answered without M */
    i.markers = 1;
    frame(f, SWP_MPA_KEY_REP, 0, 1, 0);
    ASSERT_OK(swp_mpa_parse_rr(f, 20, true, &rep));
    ASSERT_EQ(swp_mpa_nego_initiator(&i, &rep, 1460, &n, &why), -EOPNOTSUPP);
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
        { SIWARP_RTR_WRITE | SIWARP_RTR_READ, 0, SIWARP_RTR_WRITE },
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
    /* siw's real P2P answer: Write chosen among Write+Read */
    i.p2p = 1;
    len = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH | SWP_MPA_FLAG_C,
                           SWP_MPA_V2_IRD_P2P | 1, SWP_MPA_V2_ORD_WRITE_RTR | 1, NULL, 0);
    ASSERT_OK(swp_mpa_parse_rr(out, (size_t)len, true, &rep));
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

TEST(big_fpdu_siw_echo_is_not_siwarp)
{
    uint8_t req[SWP_MPA_RR_MAX_LEN], rep[SWP_MPA_RR_MAX_LEN];
    struct siwarp_conn_param i = param(2);
    struct swp_mpa_rr_info ri;
    struct swp_nego n;
    const char *why;
    int len;

    i.big_fpdu = 65535;
    len = swp_mpa_build_request(req, sizeof(req), &i);
    ASSERT((req[16] & 0x0f) != 0);
    /* siw echoes every flag bit of the request into its reply */
    memcpy(rep, req, (size_t)len);
    memcpy(rep, SWP_MPA_KEY_REP, 16);
    ASSERT_OK(swp_mpa_parse_rr(rep, (size_t)len, true, &ri));
    ASSERT(!ri.siwarp);
    ASSERT_OK(swp_mpa_nego_initiator(&i, &ri, 1460, &n, &why));
    ASSERT(!n.peer_is_siwarp);
    ASSERT_EQ(n.mulpdu, 1454);
    ASSERT_EQ(n.max_rx_ulpdu, 65535);
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

SWP_TEST_MAIN()
