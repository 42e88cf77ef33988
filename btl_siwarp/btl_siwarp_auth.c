/*
 * btl_siwarp_auth.c - only the job's own processes get in.
 *
 * Each process draws a 32-byte secret from the kernel (getrandom) at
 * component init and publishes it only through the modex, which Open MPI
 * shares with the processes of the job and of jobs the runtime connects on
 * purpose (MPI_Comm_spawn, accept/connect).  Two processes A and B derive
 * their pair key from both secrets and both names:
 *     K = HMAC-SHA256(s_lo || s_hi, "siwarp btl pair key" || name_lo || name_hi)
 * (lo, hi in opal_compare_proc order), once per endpoint, lazily.
 *
 * A connection (iWARP MPA exchange or fallback HELLO) goes:
 *   1. initiator I -> acceptor R, MPA Request / HELLO: conn_pd with both
 *      names, attempt (rising per peer), nonce N_I, and
 *        mac = HMAC(K, "REQ" || pd without mac).
 *      R checks: addressed to R, mac right, attempt above the last one of I
 *      that R accepted.  A stranger without K, or a recorded request played
 *      again (its attempt is old), is refused here: one hash, nothing
 *      created, a rate-limited warning naming the source address.
 *   2. R -> I, MPA Reply / HELLO_ACK: conn_pd with the attempt echoed,
 *      nonce N_R, and mac = HMAC(K, "REP" || pd without mac || N_I).
 *      I checks the mac: R holds K and answered this very attempt.  (A
 *      DUP answer is signed the same way; UNKNOWN carries no mac.)
 *   3. I -> R, the connection's first message (a Send that libsiwarp's
 *      siwarp_qp_verify_first_send holds for us, or an AUTH frame):
 *        mac = HMAC(K, "FIN" || name_I || name_R || attempt || N_I || N_R).
 *      R takes no other byte of the connection before this checked: a
 *      replayed exchange cannot answer a fresh N_R.  A failure closes the
 *      connection, places nothing and costs R one hash.
 * Each mac is compared in constant time.  The primitives (HMAC-SHA256
 * from nettle, the compare, the random draw, the warning gate) are
 * common/auth.c's, which the UCT transport's handshake uses too.
 *
 * An acceptor on a verbs device cannot do step 3: the RNIC places Writes
 * and delivers Sends before the BTL sees a byte.  So it proves freshness
 * before it accepts anything, with a challenge round:
 *   2'. R -> I, MPA Reject (no QP accepted): conn_pd with reason CHALLENGE,
 *      a fresh nonce C, mac = HMAC(K, "REP" || pd without mac || N_I);
 *      R keeps C, valid for btl_siwarp_connect_timeout, for one use.
 *   1'. I -> R, a new MPA Request (attempt + 1) with reason CHALLENGE and
 *        mac = HMAC(K, "REQ" || pd without mac || C).
 *      R checks it as in 1, over C; C is spent.  The request is fresh (C
 *      is), so R accepts with no first message due: a replay of it finds C
 *      spent, a replay of the first request finds its attempt old.
 * A verbs acceptor thus admits a QP only after the proof: the cost is one
 * more TCP connection and MPA exchange per connection it accepts.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "auth.h"
#include "opal/util/output.h"

#define AUTH_MODEX_KEY  "btl.siwarp.auth"
#define AUTH_SECRET_LEN 32
#define AUTH_WARN_EVERY_S 10     /* at most one warning this often, and a count */

static uint8_t auth_secret[AUTH_SECRET_LEN];

_Static_assert(MCA_BTL_SIWARP_MAC_LEN == SWP_AUTH_MAC_LEN, "a mac is one HMAC-SHA256");

static int fill_random(void *buf, size_t len)
{
    return 0 == swp_auth_random(buf, len) ? OPAL_SUCCESS : OPAL_ERROR;
}

int mca_btl_siwarp_auth_init(void)
{
    int rc;

    if (OPAL_SUCCESS != fill_random(auth_secret, sizeof(auth_secret))) {
        BTL_ERROR(("siwarp: no random secret from the kernel (getrandom): %s", strerror(errno)));
        return OPAL_ERROR;
    }
    OPAL_MODEX_SEND_STRING(rc, OPAL_PMIX_GLOBAL, AUTH_MODEX_KEY, auth_secret,
                           sizeof(auth_secret));
    return rc;
}

void mca_btl_siwarp_auth_fini(void)
{
    swp_auth_wipe(auth_secret, sizeof(auth_secret));
}

static void name_be(opal_process_name_t n, uint8_t out[8])
{
    uint32_t j = htonl(n.jobid), v = htonl(n.vpid);
    memcpy(out, &j, 4);
    memcpy(out + 4, &v, 4);
}

int mca_btl_siwarp_auth_ep_init(mca_btl_siwarp_endpoint_t *ep)
{
    static const char label[] = "siwarp btl pair key";
    opal_process_name_t me = OPAL_PROC_MY_NAME, lo, hi;
    uint8_t *theirs = NULL, names[16], keys[2 * AUTH_SECRET_LEN];
    const struct swp_auth_part parts[] = { { label, sizeof(label) - 1 }, { names, sizeof(names) } };
    size_t size = 0;
    int rc, me_lo;

    OPAL_MODEX_RECV_STRING(rc, AUTH_MODEX_KEY, &ep->name, (void **) &theirs, &size);
    if (OPAL_SUCCESS != rc || NULL == theirs || AUTH_SECRET_LEN != size) {
        BTL_VERBOSE(("no key material in the modex of %s (rc %d, %zu bytes)",
                     OPAL_NAME_PRINT(ep->name), rc, size));
        free(theirs);
        return OPAL_ERR_NOT_FOUND;
    }
    me_lo = opal_compare_proc(me, ep->name) < 0;
    lo = me_lo ? me : ep->name;
    hi = me_lo ? ep->name : me;
    memcpy(keys, me_lo ? auth_secret : theirs, AUTH_SECRET_LEN);
    memcpy(keys + AUTH_SECRET_LEN, me_lo ? theirs : auth_secret, AUTH_SECRET_LEN);
    name_be(lo, names);
    name_be(hi, names + 8);
    _Static_assert(sizeof(ep->auth_key) == SWP_AUTH_MAC_LEN, "the pair key is one HMAC");
    swp_auth_mac(keys, sizeof(keys), NULL, parts, 2, ep->auth_key);
    swp_auth_wipe(keys, sizeof(keys));
    swp_auth_wipe(theirs, size);
    free(theirs);
    return OPAL_SUCCESS;
}

/* HMAC(K, label || pd without its mac || extra) */
static void pd_mac(const mca_btl_siwarp_endpoint_t *ep, const char label[4],
                   const mca_btl_siwarp_conn_pd_t *pd, const uint8_t *extra, size_t extra_len,
                   uint8_t out[MCA_BTL_SIWARP_MAC_LEN])
{
    const struct swp_auth_part parts[] = {
        { pd, offsetof(mca_btl_siwarp_conn_pd_t, mac) }, { extra, extra_len },
    };

    swp_auth_mac(ep->auth_key, sizeof(ep->auth_key), label, parts, 2, out);
}

static int pd_mac_ok(const mca_btl_siwarp_endpoint_t *ep, const char label[4],
                     const mca_btl_siwarp_conn_pd_t *pd, const uint8_t *extra, size_t extra_len)
{
    uint8_t want[MCA_BTL_SIWARP_MAC_LEN];

    pd_mac(ep, label, pd, extra, extra_len, want);
    return swp_auth_equal(want, pd->mac, sizeof(want));
}

static void set_peer(const mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_conn_pd_t *pd)
{
    pd->peer_jobid = htonl(ep->name.jobid);
    pd->peer_vpid = htonl(ep->name.vpid);
}

static int addressed_to_me(const mca_btl_siwarp_conn_pd_t *pd)
{
    opal_process_name_t me = OPAL_PROC_MY_NAME;
    return ntohl(pd->peer_jobid) == me.jobid && ntohl(pd->peer_vpid) == me.vpid;
}

void mca_btl_siwarp_auth_sign_request(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_conn_pd_t *pd)
{
    int answer = MCA_BTL_SIWARP_ANSWER_DUE == ep->auth_answer_state;

    set_peer(ep, pd);
    pd->attempt = htobe64(++ep->auth_out_attempt);
    if (OPAL_SUCCESS != fill_random(ep->auth_out_nonce, sizeof(ep->auth_out_nonce))) {
        /* never seen; the acceptor's nonce keeps the exchange fresh anyway */
        memset(ep->auth_out_nonce, 0, sizeof(ep->auth_out_nonce));
    }
    memcpy(pd->nonce, ep->auth_out_nonce, sizeof(pd->nonce));
    if (answer) {
        pd->reason = MCA_BTL_SIWARP_CONN_CHALLENGE;     /* covered by the mac */
        pd_mac(ep, "REQ", pd, ep->auth_answer, sizeof(ep->auth_answer), pd->mac);
        ep->auth_answer_state = MCA_BTL_SIWARP_ANSWER_SENT;
    } else {
        pd_mac(ep, "REQ", pd, NULL, 0, pd->mac);
        ep->auth_answer_state = MCA_BTL_SIWARP_ANSWER_NONE;
    }
}

int mca_btl_siwarp_auth_check_request(mca_btl_siwarp_endpoint_t *ep,
                                      const mca_btl_siwarp_conn_pd_t *pd)
{
    uint64_t attempt = be64toh(pd->attempt);
    const uint8_t *chl = NULL;

    ep->auth_answered = 0;
    if (MCA_BTL_SIWARP_CONN_CHALLENGE == pd->reason) {
        /* an answer to a challenge we have out, and still valid */
        if (0 == ep->auth_chl_deadline || mca_btl_siwarp_now_ms() > ep->auth_chl_deadline) {
            return OPAL_ERR_PERM;   /* none out: an answer played again */
        }
        chl = ep->auth_chl;
    } else if (MCA_BTL_SIWARP_CONN_OK != pd->reason) {
        return OPAL_ERR_AUTHENTICATION_FAILED;
    }
    /* our own endpoint (osc/rdma's, transport SELF) has no pair key: a
     * request in our own name comes from no one we know */
    if (MCA_BTL_SIWARP_TR_SELF == ep->transport || !addressed_to_me(pd) ||
        !pd_mac_ok(ep, "REQ", pd, chl, chl ? MCA_BTL_SIWARP_NONCE_LEN : 0)) {
        return OPAL_ERR_AUTHENTICATION_FAILED;
    }
    if (attempt <= ep->auth_in_attempt) {
        return OPAL_ERR_PERM;       /* a recorded request played again */
    }
    ep->auth_in_attempt = attempt;
    if (chl) {
        ep->auth_chl_deadline = 0;  /* spent */
        memset(ep->auth_chl, 0, sizeof(ep->auth_chl));
        ep->auth_answered = 1;
    }
    return OPAL_SUCCESS;
}

/* the proof the initiator's first message carries */
static void fin_mac(const mca_btl_siwarp_endpoint_t *ep, opal_process_name_t ini,
                    opal_process_name_t acc, uint64_t attempt_be, const uint8_t *n_i,
                    const uint8_t *n_r, uint8_t out[MCA_BTL_SIWARP_MAC_LEN])
{
    uint8_t names[16];
    const struct swp_auth_part parts[] = {
        { names, sizeof(names) }, { &attempt_be, sizeof(attempt_be) },
        { n_i, MCA_BTL_SIWARP_NONCE_LEN }, { n_r, MCA_BTL_SIWARP_NONCE_LEN },
    };

    name_be(ini, names);
    name_be(acc, names + 8);
    swp_auth_mac(ep->auth_key, sizeof(ep->auth_key), "FIN", parts, 4, out);
}

void mca_btl_siwarp_auth_sign_reply(mca_btl_siwarp_endpoint_t *ep,
                                    const mca_btl_siwarp_conn_pd_t *pd_in,
                                    mca_btl_siwarp_conn_pd_t *pd)
{
    set_peer(ep, pd);
    pd->attempt = pd_in->attempt;
    if (OPAL_SUCCESS != fill_random(pd->nonce, sizeof(pd->nonce))) {
        memset(pd->nonce, 0, sizeof(pd->nonce));
    }
    pd_mac(ep, "REP", pd, pd_in->nonce, sizeof(pd_in->nonce), pd->mac);
    if (MCA_BTL_SIWARP_CONN_OK == pd->reason) {
        fin_mac(ep, ep->name, OPAL_PROC_MY_NAME, pd->attempt, pd_in->nonce, pd->nonce,
                ep->auth_fin);
    }
}

void mca_btl_siwarp_auth_challenge(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_conn_pd_t *pd_in,
                                   mca_btl_siwarp_conn_pd_t *pd)
{
    mca_btl_siwarp_fill_conn_pd(pd, MCA_BTL_SIWARP_CONN_CHALLENGE);
    mca_btl_siwarp_auth_sign_reply(ep, pd_in, pd);
    memcpy(ep->auth_chl, pd->nonce, sizeof(ep->auth_chl));
    ep->auth_chl_deadline = mca_btl_siwarp_now_ms() +
                            (uint64_t) mca_btl_siwarp_component.connect_timeout;
}

int mca_btl_siwarp_auth_take_challenge(mca_btl_siwarp_endpoint_t *ep,
                                       const mca_btl_siwarp_conn_pd_t *pd)
{
    if (MCA_BTL_SIWARP_CONN_CHALLENGE != pd->reason) {
        return 0;
    }
    /* proven over our request's nonce; a second challenge to our answer
     * would have us go round forever */
    if (OPAL_SUCCESS != mca_btl_siwarp_auth_check_reply(ep, pd) ||
        MCA_BTL_SIWARP_ANSWER_SENT == ep->auth_answer_state) {
        ep->auth_answer_state = MCA_BTL_SIWARP_ANSWER_NONE;
        return OPAL_ERR_AUTHENTICATION_FAILED;
    }
    memcpy(ep->auth_answer, pd->nonce, sizeof(ep->auth_answer));
    ep->auth_answer_state = MCA_BTL_SIWARP_ANSWER_DUE;
    return 1;
}

/* Test hook, never set in production: SIWARP_BTL_TEST_CHALLENGE=1 makes an
 * acceptor on the software stack challenge every request as one on a verbs
 * device does (run-mpi-tests.sh: the challenge round without a device). */
static int test_challenge(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("SIWARP_BTL_TEST_CHALLENGE");
        v = e && '1' == e[0];
    }
    return v;
}

int mca_btl_siwarp_auth_must_challenge(const mca_btl_siwarp_endpoint_t *ep)
{
    return test_challenge() || 0 != strcmp(siwarp_ctx_backend(ep->module->ctx), "soft");
}

int mca_btl_siwarp_auth_check_reply(mca_btl_siwarp_endpoint_t *ep,
                                    const mca_btl_siwarp_conn_pd_t *pd)
{
    if (!addressed_to_me(pd) || be64toh(pd->attempt) != ep->auth_out_attempt ||
        !pd_mac_ok(ep, "REP", pd, ep->auth_out_nonce, sizeof(ep->auth_out_nonce))) {
        return OPAL_ERR_AUTHENTICATION_FAILED;
    }
    if (MCA_BTL_SIWARP_CONN_OK == pd->reason) {
        fin_mac(ep, OPAL_PROC_MY_NAME, ep->name, pd->attempt, ep->auth_out_nonce, pd->nonce,
                ep->auth_fin);
    }
    return OPAL_SUCCESS;
}

void mca_btl_siwarp_auth_fin_msg(const mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_auth_t *a)
{
    a->magic = htonl(MCA_BTL_SIWARP_AUTH_MAGIC);
    a->reserved = 0;
    memcpy(a->mac, ep->auth_fin, sizeof(a->mac));
}

int mca_btl_siwarp_auth_check_fin(mca_btl_siwarp_endpoint_t *ep, const void *data, size_t len)
{
    mca_btl_siwarp_auth_t a;

    if (len != sizeof(a)) {
        return OPAL_ERR_AUTHENTICATION_FAILED;
    }
    memcpy(&a, data, sizeof(a));
    if (ntohl(a.magic) != MCA_BTL_SIWARP_AUTH_MAGIC ||
        !swp_auth_equal(a.mac, ep->auth_fin, sizeof(a.mac))) {
        return OPAL_ERR_AUTHENTICATION_FAILED;
    }
    return OPAL_SUCCESS;
}

/* a lock-free stack: the verifier may run in libsiwarp's progress thread,
 * which takes no BTL lock */
static void kick_push(mca_btl_siwarp_module_t *m, mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_endpoint_t *head = __atomic_load_n(&m->auth_kicked, __ATOMIC_RELAXED);

    do {
        ep->kick_next = head;
    } while (!__atomic_compare_exchange_n(&m->auth_kicked, &head, ep, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

int mca_btl_siwarp_auth_verify_qp(void *arg, struct siwarp_qp *qp, const void *data, uint32_t len)
{
    mca_btl_siwarp_endpoint_t *ep = (mca_btl_siwarp_endpoint_t *) siwarp_qp_get_context(qp);
    (void) arg;

    if (NULL == ep || ep->qp != qp) {
        return -1;          /* abandoned meanwhile: nobody waits for it */
    }
    if (OPAL_SUCCESS != mca_btl_siwarp_auth_check_fin(ep, data, len)) {
        mca_btl_siwarp_auth_warn((const struct sockaddr *) &ep->auth_from,
                                 "its first message did not prove the job's key");
        return -1;
    }
    /* inside libsiwarp's progress, maybe in the progress thread: no call
     * into libsiwarp, no BTL list touched; the module's progress posts
     * what waited for this (gets and puts: they draw Read Responses) */
    __atomic_store_n(&ep->auth_ok, 1, __ATOMIC_RELEASE);
    if (!__atomic_exchange_n(&ep->auth_kick, 1, __ATOMIC_ACQ_REL)) {
        kick_push(ep->module, ep);      /* once: auth_kick says it is on */
    }
    return 0;
}

/* The module's progress, under its lock: take the whole stack at once (no
 * ABA: pushes race only with this exchange) and let each endpoint's held
 * work go.  Its next is read before auth_kick is cleared: from then on the
 * verifier may push it again and rewrite kick_next. */
void mca_btl_siwarp_auth_kick_drain(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_endpoint_t *e = __atomic_exchange_n(&m->auth_kicked, NULL, __ATOMIC_ACQUIRE);

    while (e) {
        mca_btl_siwarp_endpoint_t *next = e->kick_next;
        __atomic_store_n(&e->auth_kick, 0, __ATOMIC_RELEASE);
        mca_btl_siwarp_ep_progress_pending(e);
        e = next;
    }
}

/* Release, under the module lock, after the QP was abandoned (its context
 * cleared: a verifier starting now finds no endpoint): the stack must not
 * keep a pointer to it.  The others go back on; the stack is short
 * (endpoints proved since the last progress call).  A verifier that read
 * the context just before the abandon can still push it afterwards, as it
 * could set the flags of a freed endpoint before this stack. */
void mca_btl_siwarp_auth_kick_forget(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_endpoint_t *e;

    if (!__atomic_load_n(&ep->auth_kick, __ATOMIC_ACQUIRE)) {
        return;
    }
    e = __atomic_exchange_n(&m->auth_kicked, NULL, __ATOMIC_ACQUIRE);
    while (e) {
        mca_btl_siwarp_endpoint_t *next = e->kick_next;
        if (e != ep) {
            kick_push(m, e);
        }
        e = next;
    }
    __atomic_store_n(&ep->auth_kick, 0, __ATOMIC_RELEASE);
}

void mca_btl_siwarp_auth_warn(const struct sockaddr *from, const char *why)
{
    static struct swp_auth_warn_gate gate;
    char addr[INET6_ADDRSTRLEN + 16];
    unsigned skipped;

    if (!swp_auth_warn_due(&gate, time(NULL), AUTH_WARN_EVERY_S, &skipped)) {
        return;
    }
    swp_auth_addr_str(from, addr, sizeof(addr));
    if (skipped) {
        opal_output(0, "[%s] siwarp: refused a connection from %s: %s (and %u more since the "
                    "last warning)", opal_process_info.nodename, addr, why, skipped);
    } else {
        opal_output(0, "[%s] siwarp: refused a connection from %s: %s",
                    opal_process_info.nodename, addr, why);
    }
}

/* Test hook, never set in production: SIWARP_BTL_TEST_RECORD=file appends
 * one line per connection request this process sends -- "iwarp" or "tcp",
 * the listener's address and port, the private data in hex -- so that
 * test/hostile/siwarp_stranger can play them again and forge others
 * (run-mpi-tests.sh: hostile). */
void mca_btl_siwarp_auth_test_record(const char *kind, const struct sockaddr *to,
                                     const mca_btl_siwarp_conn_pd_t *pd)
{
    static int fd = -2;
    char line[64 + INET6_ADDRSTRLEN + 2 * sizeof(*pd)], host[INET6_ADDRSTRLEN] = "?";
    const uint8_t *b = (const uint8_t *) pd;
    unsigned port = 0;
    int n;

    if (-2 == fd) {
        const char *path = getenv("SIWARP_BTL_TEST_RECORD");
        fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
    }
    if (fd < 0 || AF_INET != to->sa_family) {
        return;
    }
    inet_ntop(AF_INET, &((const struct sockaddr_in *) to)->sin_addr, host, sizeof(host));
    port = ntohs(((const struct sockaddr_in *) to)->sin_port);
    n = snprintf(line, sizeof(line), "%s %s %u ", kind, host, port);
    for (size_t i = 0; i < sizeof(*pd); i++) {
        n += snprintf(line + n, sizeof(line) - (size_t) n, "%02x", b[i]);
    }
    line[n++] = '\n';
    if (write(fd, line, (size_t) n) != n) {
        fd = -1;
    }
}
