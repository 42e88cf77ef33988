/*
 * uct_check_conn.c - one connection carries both directions of a pair of
 * ifaces (uct_siwarp_conn.c): an ep to a peer sends on the connection the
 * peer opened, a connection outlives its ep for a later one, and two eps
 * made at the same moment end on one connection without a message
 * overtaking another.  Connections are counted as this process's TCP
 * sockets: both ends of each are in this process.
 */
#include "uct_check.h"

#include <siwarp/siwarp.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SEQ_ID  5
#define SEQ_N   2000

static int get_called;

/* sockets of this process (listeners included, which do not change) */
static int count_sockets(void)
{
    char path[300], link[64];
    struct dirent *d;
    DIR *dir = opendir("/proc/self/fd");
    int n = 0;

    if (dir == NULL) {
        return -1;
    }
    while ((d = readdir(dir)) != NULL) {
        ssize_t len;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
        len = readlink(path, link, sizeof(link) - 1);
        if (len > 0) {
            link[len] = '\0';
            n += !strncmp(link, "socket:", 7);
        }
    }
    closedir(dir);
    return n;
}

/* progress until the process holds want sockets; 0 if it came to that */
static int wait_sockets(int want)
{
    double end = now() + WAIT_SEC;

    while (count_sockets() != want && now() < end) {
        uct_worker_progress(worker);
    }
    return count_sockets() == want ? 0 : -1;
}

/* Each receiving iface checks that the sequence numbers of its peer come
 * in order: arg is its stream */
typedef struct {
    unsigned next;
    unsigned bad;
} seq_t;

static ucs_status_t seq_cb(void *arg, void *data, size_t length, unsigned flags UCS_V_UNUSED)
{
    seq_t *s = arg;
    uint64_t v;

    memcpy(&v, data, sizeof(v));     /* the am_short header */
    if ((length != sizeof(v)) || (v != s->next)) {
        s->bad++;
    }
    s->next++;
    return UCS_OK;
}

static int wait_seq(seq_t *s, unsigned n)
{
    double end = now() + WAIT_SEC;

    while (s->next < n && now() < end) {
        uct_worker_progress(worker);
    }
    return s->next >= n ? 0 : -1;
}

static uct_ep_h make_ep(side_t *from, side_t *to)
{
    uct_ep_params_t p;
    uct_ep_h ep;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = from->iface;
    p.dev_addr   = to->dev_addr;
    p.iface_addr = to->iface_addr;
    return (uct_ep_create(&p, &ep) == UCS_OK) ? ep : NULL;
}

/* n AMs of id numbered from first; 0 if all went */
static int send_seq_id(uct_ep_h ep, uint8_t id, unsigned first, unsigned n)
{
    ucs_status_t st;

    for (unsigned i = first; i < first + n; i++) {
        RETRY(st, uct_ep_am_short(ep, id, i, NULL, 0));
        if (st != UCS_OK) {
            return -1;
        }
    }
    return 0;
}

static int send_seq(uct_ep_h ep, unsigned first, unsigned n)
{
    return send_seq_id(ep, SEQ_ID, first, n);
}

/* Connections are sockets of this process on libsiwarp's software stack
 * only: a verbs device's (kernel siw, an RNIC) are the kernel's. */
static int sockets_count;

/* The socket count says so (software stack), or, on a device, a skip. */
static void check_sockets(int cond, const char *what)
{
    if (sockets_count) {
        check(cond, what);
    } else {
        skip_check(what, "a verbs device's connections are not sockets of this process");
    }
}

/* B answers A on the connection A opened; it stays when B's ep goes, and
 * B's next ep takes it again */
static void test_reverse(side_t *a, side_t *b, uct_ep_h ep_ab, seq_t *at_a, seq_t *at_b)
{
    int before = count_sockets();
    uct_ep_h ep_ba = make_ep(b, a);

    check(ep_ba != NULL && send_seq(ep_ba, 0, 100) == 0 && wait_seq(at_a, 100) == 0 &&
          at_a->bad == 0, "B's ep to A: 100 AMs arrive in order");
    check_sockets(count_sockets() == before,
                  "B's ep to A sends on the connection A opened (no new socket)");
    check(send_seq(ep_ab, 0, 100) == 0 && wait_seq(at_b, 100) == 0 && at_b->bad == 0,
          "A's ep to B still carries its AMs, in order");
    if (ep_ba != NULL) {
        uct_ep_destroy(ep_ba);
    }
    check(send_seq(ep_ab, 100, 100) == 0 && wait_seq(at_b, 200) == 0 && at_b->bad == 0,
          "B's ep destroyed: A's ep to B still works on their connection");
    ep_ba = make_ep(b, a);
    check(ep_ba != NULL && send_seq(ep_ba, 100, 100) == 0 && wait_seq(at_a, 200) == 0 &&
          at_a->bad == 0, "B's next ep to A: 100 more AMs arrive in order");
    check_sockets(count_sockets() == before, "B's next ep to A takes the same connection again");
    if (ep_ba != NULL) {
        uct_ep_destroy(ep_ba);
    }
}

static void get_done(uct_completion_t *self)
{
    (void)self;
    get_called++;
}

/* B's ep to A leaves with an RDMA Read in flight on the connection A's ep
 * sends on: the connection stays (A's ep keeps working), the Read's
 * completion goes with B's ep, and its slot comes back to the next one */
static void test_left_in_flight(side_t *a, side_t *b, uct_ep_h ep_ab, seq_t *at_a,
                                seq_t *at_b, region_t *src, region_t *dst)
{
    static uct_completion_t comp = { .func = get_done, .count = 1 };
    uct_iov_t iov = { .buffer = src->buf, .length = 65536, .memh = src->memh, .count = 1 };
    uct_ep_h ep_ba = make_ep(b, a);
    ucs_status_t st = UCS_ERR_NO_ELEM;

    if (ep_ba != NULL && send_seq(ep_ba, 200, 10) == 0 && wait_seq(at_a, 210) == 0) {
        RETRY(st, uct_ep_get_zcopy(ep_ba, &iov, 1, (uintptr_t)dst->buf, dst->rkey.rkey,
                                   &comp));
    }
    if (ep_ba != NULL) {
        uct_ep_destroy(ep_ba);
    }
    check(st == UCS_INPROGRESS || st == UCS_OK,
          "B's ep to A: an RDMA Read posted, the ep destroyed before it completes");
    check(send_seq(ep_ab, 200, 100) == 0 && wait_seq(at_b, 300) == 0 && at_b->bad == 0 &&
          flush_ep(ep_ab) == UCS_OK,
          "after that: A's ep to B still carries its AMs, in order, and flushes");
    ep_ba = make_ep(b, a);
    check(ep_ba != NULL && send_seq(ep_ba, 210, 100) == 0 && wait_seq(at_a, 310) == 0 &&
          at_a->bad == 0 && flush_ep(ep_ba) == UCS_OK && get_called == 0,
          "B's next ep to A: 100 AMs in order and a flush; the left Read completed nobody");
    if (ep_ba != NULL) {
        uct_ep_destroy(ep_ba);
    }
}

/* The order of the merge rule (uct_siwarp_conn_merge_target): the device
 * address (IPv4, network order) then the iface address's first field, its
 * listener port (network order), as uct_siwarp.h lays them out */
static uint64_t addr_rank(const side_t *s)
{
    uint32_t ip;
    uint16_t port;

    memcpy(&ip, s->dev_addr, sizeof(ip));
    memcpy(&port, s->iface_addr, sizeof(port));
    return ((uint64_t)ntohl(ip) << 16) | ntohs(port);
}

static void close_side(side_t *s)
{
    uct_iface_close(s->iface);
    free(s->dev_addr);
    free(s->iface_addr);
}

/* C and D make eps to each other before either connection is up: the
 * pair ends on one connection, and the AMs each sent on either arrive in
 * order */
static void test_simultaneous(uct_md_h md, uct_iface_config_t *cfg, const char *dev)
{
    seq_t at_c = { 0 }, at_d = { 0 };
    side_t c, d;
    uct_ep_h ep_cd, ep_dc;
    int base;

    base = count_sockets();
    if (open_side(md, cfg, dev, &c) < 0 || open_side(md, cfg, dev, &d) < 0) {
        check(0, "two eps at once: open two more ifaces");
        return;
    }
    base = count_sockets();
    uct_iface_set_am_handler(c.iface, SEQ_ID, seq_cb, &at_c, 0);
    uct_iface_set_am_handler(d.iface, SEQ_ID, seq_cb, &at_d, 0);
    ep_cd = make_ep(&c, &d);
    ep_dc = make_ep(&d, &c);
    check(ep_cd != NULL && ep_dc != NULL, "two eps at once: both created");
    if (ep_cd != NULL && ep_dc != NULL) {
        /* the streams straddle the moment one end's ep moves over */
        check(send_seq(ep_cd, 0, SEQ_N) == 0 && send_seq(ep_dc, 0, SEQ_N) == 0 &&
              wait_seq(&at_d, SEQ_N) == 0 && wait_seq(&at_c, SEQ_N) == 0 &&
              at_c.bad == 0 && at_d.bad == 0,
              "two eps at once: 2 x 2000 AMs arrive, each stream in order");
        check_sockets(wait_sockets(base + 2) == 0,
                      "two eps at once: the pair ends on one connection (two sockets)");
        check(send_seq(ep_cd, SEQ_N, 10) == 0 && send_seq(ep_dc, SEQ_N, 10) == 0 &&
              wait_seq(&at_d, SEQ_N + 10) == 0 && wait_seq(&at_c, SEQ_N + 10) == 0 &&
              at_c.bad == 0 && at_d.bad == 0 && flush_ep(ep_cd) == UCS_OK &&
              flush_ep(ep_dc) == UCS_OK,
              "two eps at once: both still send and flush after the merge");
    }
    if (ep_cd != NULL) {
        uct_ep_destroy(ep_cd);
    }
    if (ep_dc != NULL) {
        uct_ep_destroy(ep_dc);
    }
    close_side(&c);
    close_side(&d);
}

/* H (the higher address) opened the pair's first connection; L's first ep
 * took it, and L's second ep, finding it taken, opened the twin.  H's ep
 * then moves to the twin, which L opened: the connection it leaves must
 * stay for L's first ep (its sends, its flush), and close when that ep
 * goes */
static void test_crossed(uct_md_h md, uct_iface_config_t *cfg, const char *dev)
{
    seq_t at_h = { 0 }, at_h2 = { 0 }, at_l = { 0 };
    side_t c, d, *h, *l;
    uct_ep_h ep_hl = NULL, ep_lh1 = NULL, ep_lh2 = NULL;
    int base, ok;

    if (open_side(md, cfg, dev, &c) < 0 || open_side(md, cfg, dev, &d) < 0) {
        check(0, "crossed eps: open two more ifaces");
        return;
    }
    h = (addr_rank(&c) > addr_rank(&d)) ? &c : &d;
    l = (h == &c) ? &d : &c;
    base = count_sockets();
    uct_iface_set_am_handler(h->iface, SEQ_ID, seq_cb, &at_h, 0);
    uct_iface_set_am_handler(h->iface, SEQ_ID + 1, seq_cb, &at_h2, 0);
    uct_iface_set_am_handler(l->iface, SEQ_ID, seq_cb, &at_l, 0);

    ep_hl = make_ep(h, l);
    ok = ep_hl != NULL && send_seq(ep_hl, 0, 10) == 0 && wait_seq(&at_l, 10) == 0;
    if (ok) {
        ep_lh1 = make_ep(l, h);                 /* takes H's connection */
        ok = ep_lh1 != NULL && send_seq(ep_lh1, 0, 10) == 0 && wait_seq(&at_h, 10) == 0;
    }
    if (ok) {
        ep_lh2 = make_ep(l, h);                 /* opens the twin */
        ok = ep_lh2 != NULL;
    }
    check(ok, "crossed eps: H's ep, then L's on H's connection, then L's second on a new one");
    if (ok) {
        /* H's stream straddles its move; L's first ep sends on what H left */
        check(send_seq_id(ep_lh2, SEQ_ID + 1, 0, 10) == 0 && wait_seq(&at_h2, 10) == 0 &&
              send_seq(ep_hl, 10, SEQ_N) == 0 && wait_seq(&at_l, SEQ_N + 10) == 0 &&
              at_l.bad == 0, "crossed eps: H's 2000 AMs arrive in order across its move");
        check(send_seq(ep_lh1, 10, SEQ_N) == 0 && wait_seq(&at_h, SEQ_N + 10) == 0 &&
              at_h.bad == 0 && flush_ep(ep_lh1) == UCS_OK,
              "crossed eps: L's first ep still sends and flushes on the connection H left");
        check(send_seq_id(ep_lh2, SEQ_ID + 1, 10, 100) == 0 && wait_seq(&at_h2, 110) == 0 && at_h2.bad == 0 &&
              flush_ep(ep_lh2) == UCS_OK && flush_ep(ep_hl) == UCS_OK,
              "crossed eps: L's second ep and H's ep send and flush on the twin");
        check_sockets(count_sockets() == base + 4,
                      "crossed eps: both connections stay while L's first ep is on H's");
        uct_ep_destroy(ep_lh1);
        ep_lh1 = NULL;
        check_sockets(wait_sockets(base + 2) == 0,
                      "crossed eps: L's first ep gone, the connection H left closes");
        check(send_seq(ep_hl, SEQ_N + 10, 10) == 0 && wait_seq(&at_l, SEQ_N + 20) == 0 &&
              at_l.bad == 0 && flush_ep(ep_hl) == UCS_OK && flush_ep(ep_lh2) == UCS_OK,
              "crossed eps: after that close, H's ep and L's second still send and flush");
    }
    if (ep_hl != NULL) {
        uct_ep_destroy(ep_hl);
    }
    if (ep_lh1 != NULL) {
        uct_ep_destroy(ep_lh1);
    }
    if (ep_lh2 != NULL) {
        uct_ep_destroy(ep_lh2);
    }
    close_side(&c);
    close_side(&d);
}

void test_conn(uct_md_h md, uct_iface_config_t *cfg, const char *dev, side_t *a, side_t *b,
               uct_ep_h ep_ab, region_t *src, region_t *dst)
{
    seq_t at_a = { 0 }, at_b = { 0 };

    sockets_count = soft_backend();
    uct_iface_set_am_handler(a->iface, SEQ_ID, seq_cb, &at_a, 0);
    uct_iface_set_am_handler(b->iface, SEQ_ID, seq_cb, &at_b, 0);
    test_reverse(a, b, ep_ab, &at_a, &at_b);
    test_left_in_flight(a, b, ep_ab, &at_a, &at_b, src, dst);
    test_simultaneous(md, cfg, dev);
    test_crossed(md, cfg, dev);
}
