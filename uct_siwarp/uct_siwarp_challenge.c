/*
 * uct_siwarp_challenge.c - the challenge round of an acceptor on a verbs
 * device.
 *
 * Step 3 of uct_siwarp_auth.c cannot protect a verbs acceptor: its RNIC
 * places RDMA Writes and answers Reads as soon as the QP is accepted,
 * before the first Send can be checked.  A recorded Request played again
 * would get that far.  So such an acceptor proves the Request fresh before
 * it accepts any QP (as the BTL does, btl_siwarp_auth.c):
 *   1'. acceptor -> initiator, MPA Reject (nothing created): the private
 *       data with UCT_SIWARP_PD_F_CHALLENGE, a fresh nonce C, and mac =
 *       HMAC(S, "REP" || pd without mac || N_I).  C is kept for one use
 *       until the LLP timeout.
 *   1''. initiator -> acceptor, a new MPA Request (a new QP) with
 *       UCT_SIWARP_PD_F_ANSWER and nonce = C, signed as in step 1.  Its mac
 *       covers C: only a holder of S can make it, and C is spent on use,
 *       so a replay of it finds C gone and a replay of the first Request
 *       only draws a new challenge.
 * Steps 2 and 3 follow as before (N_I is now C).  The cost is one more
 * TCP connection and MPA exchange per connection a verbs acceptor takes.
 * SIWARP_UCT_TEST_CHALLENGE=1 makes a software acceptor challenge as well,
 * so that the round is tested without a device (test hook, not for use).
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ucs/time/time.h>

void uct_siwarp_challenge_init(uct_siwarp_iface_t *iface)
{
    const char *test = getenv("SIWARP_UCT_TEST_CHALLENGE");

    iface->challenge = !uct_siwarp_md_is_soft(iface->md) || ((test != NULL) && (test[0] == '1'));
    memset(iface->challenges, 0, sizeof(iface->challenges));
}

/* Fill rej, the Reject that challenges req (checked by the caller), and
 * keep its nonce.  0, or a negative errno (no random bytes). */
int uct_siwarp_challenge_issue(uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req,
                               uct_siwarp_conn_pd_t *rej)
{
    uct_siwarp_challenge_t *c = &iface->challenges[0];
    ucs_time_t now = ucs_get_time();
    unsigned i;
    int rc;

    /* a free or expired slot, else the one that expires first */
    for (i = 0; i < UCT_SIWARP_CHALLENGES; i++) {
        if (iface->challenges[i].expires <= now) {
            c = &iface->challenges[i];
            break;
        }
        if (iface->challenges[i].expires < c->expires) {
            c = &iface->challenges[i];
        }
    }
    memset(rej, 0, sizeof(*rej));
    rej->magic = UCT_SIWARP_PD_MAGIC;
    rej->flags = UCT_SIWARP_PD_F_CHALLENGE;
    rc = swp_auth_random(rej->nonce, sizeof(rej->nonce));
    if (rc < 0) {
        return rc;
    }
    uct_siwarp_auth_mac(iface->secret, "REP", rej, offsetof(uct_siwarp_conn_pd_t, mac),
                        req->nonce, sizeof(req->nonce), rej->mac);
    memcpy(c->nonce, rej->nonce, sizeof(c->nonce));
    c->expires = now + ucs_time_from_msec(iface->config.llp_timeout_ms);
    return 0;
}

/* req (its mac checked) answers a challenge of ours: spend it.  0 if it
 * did; -EACCES if no live challenge has its nonce (a replay, or one that
 * expired). */
int uct_siwarp_challenge_spend(uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req)
{
    ucs_time_t now = ucs_get_time();
    unsigned i;

    if (!(req->flags & UCT_SIWARP_PD_F_ANSWER)) {
        return -EACCES;
    }
    for (i = 0; i < UCT_SIWARP_CHALLENGES; i++) {
        uct_siwarp_challenge_t *c = &iface->challenges[i];

        if ((c->expires > now) && swp_auth_equal(c->nonce, req->nonce, sizeof(c->nonce))) {
            c->expires = 0;
            return 0;
        }
    }
    return -EACCES;
}

/* The initiator got rej, an MPA Reject: if it is a challenge of the iface
 * this connection was meant for, and the first, make conn->req its answer
 * (nonce = C, re-signed).  0 then; -EPROTO if rej is no challenge;
 * -EACCES if it is not signed with that iface's key over our Request, or
 * our answer was challenged again. */
int uct_siwarp_challenge_answer(uct_siwarp_conn_t *conn, const uct_siwarp_conn_pd_t *rej)
{
    uint8_t mac[UCT_SIWARP_MAC_LEN];

    if ((rej->magic != UCT_SIWARP_PD_MAGIC) || !(rej->flags & UCT_SIWARP_PD_F_CHALLENGE)) {
        return -EPROTO;
    }
    uct_siwarp_auth_mac(conn->peer_secret, "REP", rej, offsetof(uct_siwarp_conn_pd_t, mac),
                        conn->req.nonce, sizeof(conn->req.nonce), mac);
    if (!swp_auth_equal(mac, rej->mac, sizeof(mac)) || conn->answered) {
        return -EACCES;
    }
    memcpy(conn->req.nonce, rej->nonce, sizeof(conn->req.nonce));
    conn->req.flags |= UCT_SIWARP_PD_F_ANSWER;
    uct_siwarp_auth_sign_request_macs(conn->peer_secret, conn->iface->secret, &conn->req);
    conn->answered = 1;
    return 0;
}
