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
 * Every mac is compared in constant time; nettle provides HMAC-SHA256
 * (the BTL uses it the same way, btl_siwarp_auth.c).
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/random.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#define UCT_SIWARP_AUTH_WARN_EVERY_S 10    /* one warning this often, and a count */

int uct_siwarp_auth_random(void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = getrandom((uint8_t*)buf + got, len - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        got += (size_t)n;
    }
    return 0;
}

/* HMAC(secret, label || a || b) */
void uct_siwarp_auth_mac(const uint8_t *secret, const char label[4], const void *a,
                                size_t alen, const void *b, size_t blen,
                                uint8_t mac[UCT_SIWARP_MAC_LEN])
{
    struct hmac_sha256_ctx h;

    hmac_sha256_set_key(&h, UCT_SIWARP_SECRET_LEN, secret);
    hmac_sha256_update(&h, 4, (const uint8_t*)label);
    hmac_sha256_update(&h, alen, a);
    if (blen != 0) {
        hmac_sha256_update(&h, blen, b);
    }
    hmac_sha256_digest(&h, UCT_SIWARP_MAC_LEN, mac);
}

/* secret: the acceptor's (from its iface address); own_secret: the
 * initiator iface's, for src_mac, which lets the acceptor send on this
 * connection to the iface the Request names once it holds that iface's
 * address too (uct_siwarp_conn_find) */
int uct_siwarp_auth_sign_request(const uint8_t *secret, const uint8_t *own_secret,
                                 uct_siwarp_conn_pd_t *req)
{
    int rc = uct_siwarp_auth_random(req->nonce, sizeof(req->nonce));

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
    return memeql_sec(mac, req->src_mac, sizeof(mac)) ? 0 : -EACCES;
}

int uct_siwarp_auth_check_request(const uct_siwarp_iface_t *iface,
                                  const uct_siwarp_conn_pd_t *req)
{
    uint8_t mac[UCT_SIWARP_MAC_LEN];

    uct_siwarp_auth_mac(iface->secret, "REQ", req, offsetof(uct_siwarp_conn_pd_t, mac),
                        NULL, 0, mac);
    return memeql_sec(mac, req->mac, sizeof(mac)) ? 0 : -EACCES;
}

int uct_siwarp_auth_sign_reply(const uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req,
                               uct_siwarp_conn_pd_t *rep)
{
    int rc = uct_siwarp_auth_random(rep->nonce, sizeof(rep->nonce));

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
    return memeql_sec(mac, rep->mac, sizeof(mac)) ? 0 : -EACCES;
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
    if ((got.magic != want.magic) || !memeql_sec(got.mac, want.mac, sizeof(want.mac))) {
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
 * process, with the count of the ones left out: a stranger knocking all
 * the time must not flood the job's output. */
void uct_siwarp_auth_warn(const uct_siwarp_iface_t *iface, const char *peer, const char *why)
{
    static time_t last;
    static unsigned skipped;
    time_t now = time(NULL);

    if ((last != 0) && (now - last < UCT_SIWARP_AUTH_WARN_EVERY_S)) {
        skipped++;
        return;
    }
    if (skipped != 0) {
        ucs_warn("siwarp: refused a connection from %s on %s: %s (and %u more since the "
                 "last warning)", peer, iface->if_name, why, skipped);
    } else {
        ucs_warn("siwarp: refused a connection from %s on %s: %s", peer, iface->if_name, why);
    }
    last    = now;
    skipped = 0;
}

void uct_siwarp_auth_peer_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in*)ss;
    char ip[INET_ADDRSTRLEN];

    if ((ss->ss_family != AF_INET) || (inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)) == NULL)) {
        snprintf(buf, len, "an unknown address");
        return;
    }
    snprintf(buf, len, "%s:%u", ip, ntohs(sin->sin_port));
}
