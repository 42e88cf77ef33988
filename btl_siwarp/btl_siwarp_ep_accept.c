/*
 * btl_siwarp_ep_accept.c - the passive side of a connection: a peer's iWARP
 * connection request is accepted or rejected here, and when both ends
 * connect at once (an all-to-all start) the lower process name keeps its
 * outgoing connection.  An endpoint told to wait for its peer's request
 * (the peer connects to us) waits at most btl_siwarp_connect_timeout.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

void mca_btl_siwarp_ep_await_incoming(mca_btl_siwarp_endpoint_t *ep)
{
    ep->await_incoming = 1;
    ep->deadline_ms = mca_btl_siwarp_now_ms() + (uint64_t) mca_btl_siwarp_component.connect_timeout;
    mca_btl_siwarp_ep_activate(ep);     /* progress_connect watches the deadline */
}

/* Test hook, never set in production: SIWARP_BTL_TEST_REFUSE_INCOMING=1
 * answers every incoming connection "duplicate, use mine" without ever
 * connecting, so the peer waits in vain (run-mpi-tests.sh: connect timeout). */
static int test_refuse_incoming(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("SIWARP_BTL_TEST_REFUSE_INCOMING");
        v = e && '1' == e[0];
    }
    return v;
}

/* Lower process name keeps its outgoing connection.  Returns 1 when the
 * incoming connection should be accepted (abandoning ours, if any). */
int mca_btl_siwarp_ep_accept_incoming(mca_btl_siwarp_endpoint_t *ep)
{
    if (test_refuse_incoming()) {
        return 0;
    }
    switch (ep->state) {
    case MCA_BTL_SIWARP_EP_CLOSED:
        return 1;
    case MCA_BTL_SIWARP_EP_CONNECTING:
        if (ep->qp && ep->qp_accepted) {
            /* we accepted another attempt of this peer: one of the two was
             * given up (see btl_siwarp_endpoint.h), and the peer may be
             * sending on the other already.  Keep ours; if it is the dead
             * one, iwarp_accepted_failed connects to the peer. */
            return 0;
        }
        if (ep->await_incoming) {
            return 1;
        }
        if (opal_compare_proc(OPAL_PROC_MY_NAME, ep->name) < 0) {
            return 0;           /* we are lower: ours wins */
        }
        if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
            mca_btl_siwarp_tcp_close(ep);
        } else {
            mca_btl_siwarp_ep_qp_abandon(ep);
        }
        return 1;
    default:
        return 0;
    }
}

/* Refuse a request: one hash spent at most, nothing created, a warning
 * (rate-limited) naming where it came from.  UNKNOWN carries no proof. */
static void refuse(struct siwarp_conn_req *req, const struct sockaddr_storage *peer,
                   const char *why)
{
    mca_btl_siwarp_conn_pd_t rej;

    mca_btl_siwarp_auth_warn((const struct sockaddr *) peer, why);
    mca_btl_siwarp_fill_conn_pd(&rej, MCA_BTL_SIWARP_CONN_UNKNOWN);
    siwarp_reject(req, &rej, sizeof(rej));
}

void mca_btl_siwarp_ep_handle_conn_req(mca_btl_siwarp_module_t *m, struct siwarp_conn_req *req)
{
    struct siwarp_conn_param theirs, p;
    struct sockaddr_storage peer;
    mca_btl_siwarp_conn_pd_t pd, wire, rej;
    opal_process_name_t name;
    mca_btl_siwarp_endpoint_t *ep;
    int rc;

    memset(&peer, 0, sizeof(peer));
    if (siwarp_conn_req_param(req, &theirs, &peer) < 0 ||
        OPAL_SUCCESS != mca_btl_siwarp_parse_conn_pd(theirs.private_data,
                                                     theirs.private_data_len, &pd, &wire)) {
        refuse(req, &peer, "no siwarp BTL private data of this version");
        return;
    }
    name.jobid = pd.jobid;
    name.vpid = pd.vpid;
    ep = mca_btl_siwarp_ep_lookup(m, &name, 1);
    if (NULL == ep) {
        refuse(req, &peer, "it names no process this one knows");
        return;
    }
    rc = mca_btl_siwarp_auth_check_request(ep, &wire);
    if (OPAL_SUCCESS != rc) {
        refuse(req, &peer, OPAL_ERR_PERM == rc ? "a connection request played again"
                                               : "its request did not prove the job's key");
        return;
    }
    if (OPAL_SUCCESS != mca_btl_siwarp_ep_check_max_send(ep, &pd)) {
        /* a job member with other buffers: the endpoint failed, saying why */
        mca_btl_siwarp_fill_conn_pd(&rej, MCA_BTL_SIWARP_CONN_UNKNOWN);
        siwarp_reject(req, &rej, sizeof(rej));
        return;
    }
    if (!mca_btl_siwarp_ep_accept_incoming(ep)) {
        BTL_VERBOSE(("rejecting connection from %s (duplicate)", OPAL_NAME_PRINT(name)));
        mca_btl_siwarp_fill_conn_pd(&rej, MCA_BTL_SIWARP_CONN_DUP);
        mca_btl_siwarp_auth_sign_reply(ep, &wire, &rej);
        siwarp_reject(req, &rej, sizeof(rej));
        return;
    }
    if (MCA_BTL_SIWARP_EP_CLOSED == ep->state) {
        mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CONNECTING);
    }
    if (!ep->auth_answered && mca_btl_siwarp_auth_must_challenge(ep)) {
        /* a verbs device would place and deliver before we could check a
         * first message: no QP until a request over our nonce came
         * (btl_siwarp_auth.c, the challenge round); the peer connects again */
        BTL_VERBOSE(("challenging %s before accepting", OPAL_NAME_PRINT(name)));
        mca_btl_siwarp_auth_challenge(ep, &wire, &rej);
        siwarp_reject(req, &rej, sizeof(rej));
        ep->transport = MCA_BTL_SIWARP_TR_IWARP;
        mca_btl_siwarp_ep_await_incoming(ep);
        return;
    }
    ep->transport = MCA_BTL_SIWARP_TR_IWARP;
    ep->await_incoming = 0;
    ep->peer_rq = pd.rq_depth;
    ep->auth_from = peer;
    ep->auth_ok = 0;
    rc = mca_btl_siwarp_ep_qp_create(ep);
    if (OPAL_SUCCESS == rc && ep->auth_answered) {
        ep->auth_ok = 1;        /* the request answered our challenge: proven */
    } else if (OPAL_SUCCESS == rc) {
        /* nothing of the peer is taken before its first Send proved the
         * key (btl_siwarp_auth.c); only the software stack can hold it
         * back (a verbs device was challenged above) */
        rc = siwarp_qp_verify_first_send(ep->qp, mca_btl_siwarp_auth_verify_qp, NULL,
                                         sizeof(mca_btl_siwarp_auth_t),
                                         mca_btl_siwarp_component.stall_timeout);
        if (rc < 0) {
            BTL_ERROR(("siwarp: siwarp_qp_verify_first_send: %s", strerror(-rc)));
            mca_btl_siwarp_ep_qp_abandon(ep);
            rc = OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    if (OPAL_SUCCESS != rc) {
        mca_btl_siwarp_fill_conn_pd(&rej, MCA_BTL_SIWARP_CONN_UNKNOWN);
        siwarp_reject(req, &rej, sizeof(rej));
        mca_btl_siwarp_ep_fail(ep, "could not create a queue pair", 1);
        return;
    }
    mca_btl_siwarp_ep_conn_param(ep, &p, &rej, MCA_BTL_SIWARP_CONN_OK);
    mca_btl_siwarp_auth_sign_reply(ep, &wire, &rej);
    /* we answer with the peer's negotiated choices where the API lets us */
    rc = siwarp_accept(req, ep->qp, &p);
    if (rc < 0) {
        mca_btl_siwarp_ep_qp_abandon(ep);
        mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CLOSED);
        BTL_VERBOSE(("siwarp_accept: %s", strerror(-rc)));
        return;
    }
    ep->qp_accepted = 1;
    mca_btl_siwarp_ep_activate(ep);
    /* peer's rq_depth is in its request; RTS is noticed by progress_connect,
     * which reads the same private data back through siwarp_query_qp.  The
     * connection is up then: we may send, and the QP takes nothing of the
     * peer's before its first Send proved the key (our gets and puts wait
     * for that too: they draw Read Responses, which would be placed) */
}
