/*
 * uct_siwarp_auth.c - only processes that were given an iface's address
 * get in.
 *
 * A UCT iface address reaches other processes only through the runtime
 * that wires UCP up (the PMIx modex of Open MPI and OpenSHMEM, an
 * application's own out-of-band exchange).  Each iface draws a 16-byte
 * secret from the kernel (getrandom) when it is opened and puts it in its
 * iface address, so a process that can connect to the listener but was
 * never given the address -- a stranger on the network -- does not know it.
 * With S the acceptor's secret, a connection goes:
 *   1. initiator -> acceptor, MPA Request: the private data (credit word,
 *      its own iface's listener, a fresh nonce N_I, and src_mac =
 *      HMAC(S_I, "SRC" || pd up to src_mac) with S_I the initiator's own
 *      secret) and mac = HMAC-SHA256(S, "REQ" || pd without mac).
 *      The acceptor checks it before it creates anything: a stranger gets an
 *      MPA Reject and a rate-limited warning naming its address.
 *   2. acceptor -> initiator, MPA Reply: flush word, a fresh nonce N_R and
 *      mac = HMAC(S, "REP" || pd without mac || N_I).  The initiator checks
 *      it: the acceptor holds S and answered this very request.
 *   3. initiator -> acceptor, the connection's first Send:
 *      HMAC(S, "FIN" || N_I || N_R).  Until it is checked the acceptor's
 *      libsiwarp holds every other segment (siwarp_qp_verify_first_send):
 *      a recorded request played again gets a fresh N_R it cannot answer,
 *      so its connection fails before a byte of it is placed or delivered.
 *   4. the acceptor sends on the connection (an ep of its own to the
 *      initiator's iface, uct_siwarp_conn_find) only after step 3, and only
 *      when src_mac checks with the secret of the iface address that ep was
 *      given: the connection leads to that iface and to no one else.
 * Every mac is compared in constant time.  The primitives (HMAC-SHA256
 * from nettle, the compare, the random draw, the warning gate) are
 * common/auth.c's, which the BTL's handshake uses too.
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <string.h>
#include <time.h>

_Static_assert(UCT_SIWARP_MAC_LEN == SWP_AUTH_MAC_LEN, "a mac is one HMAC-SHA256");

#define UCT_SIWARP_AUTH_WARN_EVERY_S 10    /* one warning this often, and a count */

/* HMAC(secret, label || a || b) */
void uct_siwarp_auth_mac(const uint8_t *secret, const char label[4], const void *a,
                                size_t alen, const void *b, size_t blen,
                                uint8_t mac[UCT_SIWARP_MAC_LEN])
{
    const struct swp_auth_part parts[] = { { a, alen }, { b, blen } };

    swp_auth_mac(secret, UCT_SIWARP_SECRET_LEN, label, parts, 2, mac);
}

/* secret: the acceptor's (from its iface address); own_secret: the
 * initiator iface's, for src_mac, which lets the acceptor send on this
 * connection to the iface the Request names once it holds that iface's
 * address too (uct_siwarp_conn_find) */
int uct_siwarp_auth_sign_request(const uint8_t *secret, const uint8_t *own_secret,
                                 uct_siwarp_conn_pd_t *req)
{
    int rc = swp_auth_random(req->nonce, sizeof(req->nonce));

    if (rc < 0) {
        return rc;
    }
    uct_siwarp_auth_sign_request_macs(secret, own_secret, req);
    return 0;
}

/* src_mac and mac over the request as it is (its nonce chosen) */
void uct_siwarp_auth_sign_request_macs(const uint8_t *secret, const uint8_t *own_secret,
                                       uct_siwarp_conn_pd_t *req)
{
    uct_siwarp_auth_mac(own_secret, "SRC", req, offsetof(uct_siwarp_conn_pd_t, src_mac),
                        NULL, 0, req->src_mac);
    uct_siwarp_auth_mac(secret, "REQ", req, offsetof(uct_siwarp_conn_pd_t, mac), NULL, 0,
                        req->mac);
}

/* the Request came from the iface whose secret is peer_secret */
int uct_siwarp_auth_check_src(const uint8_t *peer_secret, const uct_siwarp_conn_pd_t *req)
{
    uint8_t mac[UCT_SIWARP_MAC_LEN];

    uct_siwarp_auth_mac(peer_secret, "SRC", req, offsetof(uct_siwarp_conn_pd_t, src_mac),
                        NULL, 0, mac);
    return swp_auth_equal(mac, req->src_mac, sizeof(mac)) ? 0 : -EACCES;
}

int uct_siwarp_auth_check_request(const uct_siwarp_iface_t *iface,
                                  const uct_siwarp_conn_pd_t *req)
{
    uint8_t mac[UCT_SIWARP_MAC_LEN];

    uct_siwarp_auth_mac(iface->secret, "REQ", req, offsetof(uct_siwarp_conn_pd_t, mac),
                        NULL, 0, mac);
    return swp_auth_equal(mac, req->mac, sizeof(mac)) ? 0 : -EACCES;
}

int uct_siwarp_auth_sign_reply(const uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req,
                               uct_siwarp_conn_pd_t *rep)
{
    int rc = swp_auth_random(rep->nonce, sizeof(rep->nonce));

    if (rc < 0) {
        return rc;
    }
    uct_siwarp_auth_mac(iface->secret, "REP", rep, offsetof(uct_siwarp_conn_pd_t, mac),
                        req->nonce, sizeof(req->nonce), rep->mac);
    return 0;
}

int uct_siwarp_auth_check_reply(const uint8_t *secret, const uct_siwarp_conn_pd_t *req,
                                const uct_siwarp_conn_pd_t *rep)
{
    uint8_t mac[UCT_SIWARP_MAC_LEN];

    uct_siwarp_auth_mac(secret, "REP", rep, offsetof(uct_siwarp_conn_pd_t, mac), req->nonce,
                        sizeof(req->nonce), mac);
    return swp_auth_equal(mac, rep->mac, sizeof(mac)) ? 0 : -EACCES;
}

void uct_siwarp_auth_fin(const uint8_t *secret, const uct_siwarp_conn_pd_t *req,
                         const uct_siwarp_conn_pd_t *rep, uct_siwarp_auth_fin_t *fin)
{
    fin->magic = UCT_SIWARP_FIN_MAGIC;
    uct_siwarp_auth_mac(secret, "FIN", req->nonce, sizeof(req->nonce), rep->nonce,
                        sizeof(rep->nonce), fin->mac);
}

/* siwarp_verify_fn of an accepted QP: its first Send must be step 3. */
int uct_siwarp_auth_verify_first(void *arg, struct siwarp_qp *qp, const void *data,
                                 uint32_t len)
{
    uct_siwarp_conn_t *conn = arg;
    uct_siwarp_auth_fin_t want, got;

    if (len != sizeof(got)) {
        uct_siwarp_auth_warn(conn->iface, conn->peer, "its first message has the wrong length");
        return -EACCES;
    }
    memcpy(&got, data, sizeof(got));
    uct_siwarp_auth_fin(conn->iface->secret, &conn->req, &conn->rep, &want);
    if ((got.magic != want.magic) || !swp_auth_equal(got.mac, want.mac, sizeof(want.mac))) {
        uct_siwarp_auth_warn(conn->iface, conn->peer,
                             "its first message does not prove the key (a replayed request?)");
        return -EACCES;
    }
    /* from here this end may send on the connection too */
    conn->verified = 1;
    conn->iface->verified++;      /* eps look for a second connection to merge */
    return 0;
}

/* At most one warning every UCT_SIWARP_AUTH_WARN_EVERY_S seconds per
 * process, with the count of the ones left out (swp_auth_warn_due). */
void uct_siwarp_auth_warn(const uct_siwarp_iface_t *iface, const char *peer, const char *why)
{
    static struct swp_auth_warn_gate gate;
    unsigned skipped;

    if (!swp_auth_warn_due(&gate, time(NULL), UCT_SIWARP_AUTH_WARN_EVERY_S, &skipped)) {
        return;
    }
    if (skipped != 0) {
        ucs_warn("siwarp: refused a connection from %s on %s: %s (and %u more since the "
                 "last warning)", peer, iface->if_name, why, skipped);
    } else {
        ucs_warn("siwarp: refused a connection from %s on %s: %s", peer, iface->if_name, why);
    }
}
