/*
 * uct_check.c - the siwarp UCT transport through UCX's public UCT API: two
 * ifaces of one worker on a loopback device, an ep from A to B, and for
 * each operation a check of the bytes or values it left at the other end.
 * Then strangers: libsiwarp QPs of this process that connect to B's
 * listener without going through UCT, as a process that was never given
 * B's address would (or one that recorded a request); then how eps of
 * both ends share one connection (uct_check_conn.c).
 * Prints TAP.  Needs the module loaded (LD_PRELOAD=.../libuct_siwarp.so.0,
 * as test/uct/run-uct-tests.sh runs it).  Usage: uct_check [device]
 */
#include <siwarp/siwarp.h>
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <arpa/inet.h>


#include "uct_check.h"

static struct {
    unsigned count;
    size_t   len;
    uint8_t  data[65536];
} rx;

static int err_seen;
static int ntest, nfail;
uct_worker_h worker;

void check(int cond, const char *what)
{
    ntest++;
    if (!cond) {
        nfail++;
    }
    printf("%sok %d - %s\n", cond ? "" : "not ", ntest, what);
    fflush(stdout);
}

/* TAP: a check that cannot be made here, and why */
void skip_check(const char *what, const char *why)
{
    ntest++;
    printf("ok %d - %s # SKIP %s\n", ntest, what, why);
    fflush(stdout);
}

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ucs_status_t am_cb(void *arg UCS_V_UNUSED, void *data, size_t length,
                          unsigned flags UCS_V_UNUSED)
{
    rx.count++;
    rx.len = length;
    memcpy(rx.data, data, length < sizeof(rx.data) ? length : sizeof(rx.data));
    return UCS_OK;
}

static ucs_status_t err_cb(void *arg UCS_V_UNUSED, uct_ep_h ep UCS_V_UNUSED,
                           ucs_status_t status UCS_V_UNUSED)
{
    err_seen = 1;
    return UCS_OK;
}

typedef struct {
    uct_completion_t super;
    ucs_status_t status;
    int done;
} comp_t;

static void comp_cb(uct_completion_t *self)
{
    comp_t *c = ucs_container_of(self, comp_t, super);
    c->status = self->status;
    c->done   = 1;
}

static void comp_init(comp_t *c)
{
    c->super.func   = comp_cb;
    c->super.count  = 1;
    c->super.status = UCS_OK;
    c->done         = 0;
}

/* progress until *flag or the deadline; 0 if it came */
static int wait_for(volatile int *flag)
{
    double end = now() + WAIT_SEC;
    while (!*flag && now() < end) {
        uct_worker_progress(worker);
    }
    return *flag ? 0 : -1;
}

/* complete an op: UCS_OK now, or INPROGRESS and a completion.  A
 * completion that does not come in WAIT_SEC ends the run: the caller's
 * comp_t lives on its stack, and a completion arriving after the caller
 * returned would write into (and call through) whatever lies there then. */
static ucs_status_t finish(ucs_status_t st, comp_t *c)
{
    if (st == UCS_INPROGRESS) {
        if (wait_for(&c->done) < 0) {
            printf("Bail out! an operation's completion did not come within %d s\n",
                   WAIT_SEC);
            fflush(stdout);
            _exit(1);
        }
        return c->status;
    }
    return st;
}

ucs_status_t flush_ep(uct_ep_h ep)
{
    comp_t c;
    ucs_status_t st;

    comp_init(&c);
    RETRY(st, uct_ep_flush(ep, 0, &c.super));
    return finish(st, &c);
}

int open_side(uct_md_h md, uct_iface_config_t *cfg, const char *dev, side_t *s)
{
    uct_iface_params_t p;
    ucs_status_t st;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    p.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name  = "siwarp";
    p.mode.device.dev_name = dev;
    p.err_handler          = err_cb;
    p.err_handler_flags    = UCT_CB_FLAG_ASYNC;
    st = uct_iface_open(md, worker, &p, cfg, &s->iface);
    if (st != UCS_OK) {
        fprintf(stderr, "uct_iface_open(%s): %s\n", dev, ucs_status_string(st));
        return -1;
    }
    uct_iface_query(s->iface, &s->attr);
    s->dev_addr   = calloc(1, s->attr.device_addr_len);
    s->iface_addr = calloc(1, s->attr.iface_addr_len);
    uct_iface_get_device_address(s->iface, s->dev_addr);
    uct_iface_get_address(s->iface, s->iface_addr);
    uct_iface_progress_enable(s->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return 0;
}

static int region_init(uct_md_h md, uct_component_h comp, size_t len, region_t *r)
{
    uct_md_attr_t mattr;
    void *packed;

    r->len = len;
    if (posix_memalign(&r->buf, 64, len) != 0) {
        return -1;
    }
    memset(r->buf, 0, len);
    if (uct_md_mem_reg(md, r->buf, len, UCT_MD_MEM_ACCESS_ALL, &r->memh) != UCS_OK) {
        return -1;
    }
    uct_md_query(md, &mattr);
    packed = calloc(1, mattr.rkey_packed_size);
    if (uct_md_mkey_pack(md, r->memh, packed) != UCS_OK ||
        uct_rkey_unpack(comp, packed, &r->rkey) != UCS_OK) {
        return -1;
    }
    free(packed);
    return 0;
}

static void fill(void *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        ((uint8_t*)p)[i] = (uint8_t)(i * 31 + seed);
    }
}

typedef struct {
    void *dest;
    size_t len;                     /* what the transport handed over */
} unpack_t;

static void unpack_cb(void *arg, const void *data, size_t length)
{
    unpack_t *u = arg;

    memcpy(u->dest, data, length);
    u->len = length;
}

static size_t pack_cb(void *dest, void *arg)
{
    region_t *r = arg;
    memcpy(dest, r->buf, r->len);
    return r->len;
}

/* progress until rx.count reaches n; 0 if it did */
static int wait_rx(unsigned n)
{
    double end = now() + WAIT_SEC;
    while (rx.count < n && now() < end) {
        uct_worker_progress(worker);
    }
    return rx.count >= n ? 0 : -1;
}

static void test_am(uct_ep_h ep, const uct_iface_attr_t *a, region_t *src)
{
    const size_t sizes[] = {0, 1, 7, 8, 100, 4096, 100000};
    uint64_t hdr = 0x0123456789abcdefull;
    char what[160];
    ucs_status_t st;
    ssize_t sent;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i] < a->cap.am.max_short - 8 ? sizes[i] : a->cap.am.max_short - 8;
        unsigned before = rx.count;

        fill(src->buf, len, (unsigned)i);
        RETRY(st, uct_ep_am_short(ep, AM_ID, hdr, src->buf, (unsigned)len));
        snprintf(what, sizeof(what), "am_short: %zu B + 8 B header arrive intact", len);
        check(st == UCS_OK && wait_rx(before + 1) == 0 && rx.len == len + 8 &&
              !memcmp(rx.data, &hdr, 8) && !memcmp(rx.data + 8, src->buf, len), what);
    }
    for (size_t len = 1; len <= a->cap.am.max_bcopy; len = len * 5 + 3) {
        region_t r = { .buf = src->buf, .len = len };
        unsigned before = rx.count;

        fill(src->buf, len, (unsigned)len);
        RETRY(sent, uct_ep_am_bcopy(ep, AM_ID, pack_cb, &r, 0));
        snprintf(what, sizeof(what), "am_bcopy: %zu B arrive intact", len);
        check(sent == (ssize_t)len && wait_rx(before + 1) == 0 && rx.len == len &&
              !memcmp(rx.data, src->buf, len), what);
    }
    /* only what the iface offers (a verbs device: no am_zcopy) */
    if (a->cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) {
        /* header + two iov entries from registered memory */
        size_t half = (a->cap.am.max_zcopy - 16) / 2;
        uct_iov_t iov[2] = {
            { .buffer = src->buf, .length = half, .memh = src->memh, .count = 1 },
            { .buffer = (char*)src->buf + 2 * half, .length = half, .memh = src->memh,
              .count = 1 },
        };
        uint8_t expect[65536];
        unsigned before = rx.count;
        comp_t c;

        fill(src->buf, 3 * half, 7);
        memcpy(expect, &hdr, 8);
        memcpy(expect + 8, iov[0].buffer, half);
        memcpy(expect + 8 + half, iov[1].buffer, half);
        comp_init(&c);
        RETRY(st, uct_ep_am_zcopy(ep, AM_ID, &hdr, 8, iov, 2, 0, &c.super));
        st = finish(st, &c);
        snprintf(what, sizeof(what), "am_zcopy: 8 B header + 2 x %zu B iov arrive intact", half);
        check(st == UCS_OK && wait_rx(before + 1) == 0 && rx.len == 8 + 2 * half &&
              !memcmp(rx.data, expect, 8 + 2 * half), what);
    }
    {
        /* many more than the receiver's buffers, without waiting: the
         * credits must hold the sender back, never overrun the peer */
        unsigned before = rx.count, n = 2000, i;
        int ok = 1;

        for (i = 0; i < n && ok; i++) {
            uint64_t v = i;
            RETRY(st, uct_ep_am_short(ep, AM_ID, v, NULL, 0));
            ok = (st == UCS_OK);
        }
        check(ok && wait_rx(before + n) == 0 && rx.count == before + n &&
              !memcmp(rx.data, &(uint64_t){n - 1}, 8),
              "2000 am_short back to back: all arrive, in order (credit flow control)");
    }
}

static void test_put_get(uct_ep_h ep, const uct_iface_attr_t *a, region_t *src, region_t *dst)
{
    char what[160];
    ucs_status_t st;
    ssize_t sent;
    comp_t c;

    memset(dst->buf, 0, dst->len);
    fill(src->buf, a->cap.put.max_short, 11);
    RETRY(st, uct_ep_put_short(ep, src->buf, (unsigned)a->cap.put.max_short,
                               (uintptr_t)dst->buf + 8, dst->rkey.rkey));
    check(st == UCS_OK && flush_ep(ep) == UCS_OK &&
          !memcmp((char*)dst->buf + 8, src->buf, a->cap.put.max_short) &&
          ((uint64_t*)dst->buf)[0] == 0,
          "put_short of max_short bytes: placed at the remote offset after flush");

    {
        region_t r = { .buf = src->buf, .len = 1000 };
        fill(src->buf, 1000, 12);
        RETRY(sent, uct_ep_put_bcopy(ep, pack_cb, &r, (uintptr_t)dst->buf + 3, dst->rkey.rkey));
        check(sent == 1000 && flush_ep(ep) == UCS_OK &&
              !memcmp((char*)dst->buf + 3, src->buf, 1000),
              "put_bcopy 1000 B at an odd remote address: placed after flush");
    }
    for (size_t len = 1; len <= BIG; len *= 16) {
        uct_iov_t iov[3];
        size_t part = len / 3, off = 0;
        int k;

        fill(src->buf, len, (unsigned)len + 1);
        memset(dst->buf, 0, len);
        for (k = 0; k < 3; k++) {
            size_t l = (k < 2) ? part : len - 2 * part;
            iov[k] = (uct_iov_t){ .buffer = (char*)src->buf + off, .length = l,
                                  .memh = src->memh, .count = 1 };
            off += l;
        }
        comp_init(&c);
        RETRY(st, uct_ep_put_zcopy(ep, iov, 3, (uintptr_t)dst->buf, dst->rkey.rkey, &c.super));
        st = finish(st, &c);
        snprintf(what, sizeof(what), "put_zcopy %zu B in 3 iov: placed after flush", len);
        check(st == UCS_OK && flush_ep(ep) == UCS_OK && !memcmp(dst->buf, src->buf, len), what);
    }
    for (size_t len = 1; len <= BIG; len *= 16) {
        uct_iov_t iov = { .buffer = src->buf, .length = len, .memh = src->memh, .count = 1 };

        fill(dst->buf, len, (unsigned)len + 5);
        memset(src->buf, 0, len);
        comp_init(&c);
        RETRY(st, uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)dst->buf, dst->rkey.rkey, &c.super));
        st = finish(st, &c);
        snprintf(what, sizeof(what), "get_zcopy %zu B: the remote bytes on completion", len);
        check(st == UCS_OK && !memcmp(dst->buf, src->buf, len), what);
    }
    {
        /* a flush behind a get (osc ucx flushes after each): it waits for
         * the get's Read, and completes after it, never before; a put
         * behind the flush is then covered by the next flush's own Read */
        uct_iov_t iov = { .buffer = src->buf, .length = 4096, .memh = src->memh, .count = 1 };
        comp_t fc;
        ucs_status_t fst;
        int get_first;

        fill(dst->buf, 4096, 77);
        memset(src->buf, 0, 4096);
        comp_init(&c);
        comp_init(&fc);
        RETRY(st, uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)dst->buf, dst->rkey.rkey, &c.super));
        RETRY(fst, uct_ep_flush(ep, 0, &fc.super));
        if (fst == UCS_INPROGRESS) {
            double end = now() + WAIT_SEC;
            while (!fc.done && now() < end) {
                uct_worker_progress(worker);
            }
            fst = fc.done ? fc.status : UCS_ERR_TIMED_OUT;
        }
        get_first = c.done || st == UCS_OK;
        st = finish(st, &c);
        check(fst == UCS_OK && get_first && st == UCS_OK && !memcmp(dst->buf, src->buf, 4096),
              "flush behind a get: completes once the get has, with its bytes there");
        memset(dst->buf, 0, 8);
        RETRY(st, uct_ep_put_short(ep, "\x11\x22\x33\x44\x55\x66\x77\x88", 8,
                                   (uintptr_t)dst->buf, dst->rkey.rkey));
        check(st == UCS_OK && flush_ep(ep) == UCS_OK &&
              !memcmp(dst->buf, "\x11\x22\x33\x44\x55\x66\x77\x88", 8),
              "a put after that: placed by the next flush");
    }
    /* get_bcopy: what UCP's small gets use (its "rma" lane needs it) */
    check((a->cap.flags & UCT_IFACE_FLAG_GET_BCOPY) && (a->cap.get.max_bcopy >= 8),
          "get_bcopy offered");
    for (size_t len = 1; len <= a->cap.get.max_bcopy; len *= 8) {
        unpack_t u = { .dest = src->buf, .len = 0 };

        fill((char*)dst->buf + 5, len, (unsigned)len + 9);
        memset(src->buf, 0, len);
        comp_init(&c);
        RETRY(st, uct_ep_get_bcopy(ep, unpack_cb, &u, len, (uintptr_t)dst->buf + 5,
                                   dst->rkey.rkey, &c.super));
        st = finish(st, &c);
        snprintf(what, sizeof(what), "get_bcopy %zu B at an odd remote address: unpacked on "
                 "completion", len);
        check(st == UCS_OK && u.len == len && !memcmp((char*)dst->buf + 5, src->buf, len),
              what);
    }
}

/* fetching atomic through uct, then the expected old value and target */
static void amo64(uct_ep_h ep, region_t *dst, uct_atomic_op_t op, uint64_t init, uint64_t v,
                  uint64_t expect, const char *what)
{
    volatile uint64_t *t = dst->buf;
    uint64_t result = 0;
    ucs_status_t st;
    comp_t c;

    *t = init;
    comp_init(&c);
    RETRY(st, uct_ep_atomic64_fetch(ep, op, v, &result, (uintptr_t)t, dst->rkey.rkey, &c.super));
    st = finish(st, &c);
    check(st == UCS_OK && result == init && *t == expect, what);
}

static void amo32(uct_ep_h ep, region_t *dst, int hi, uct_atomic_op_t op, uint32_t init,
                  uint32_t v, uint32_t expect, const char *what)
{
    volatile uint32_t *w = dst->buf;   /* w[0], w[1]: one 64-bit word */
    uint32_t result = 0;
    ucs_status_t st;
    comp_t c;

    w[hi]  = init;
    w[!hi] = 0xa5a5a5a5u;
    comp_init(&c);
    RETRY(st, uct_ep_atomic32_fetch(ep, op, v, &result, (uintptr_t)&w[hi], dst->rkey.rkey,
                                    &c.super));
    st = finish(st, &c);
    check(st == UCS_OK && result == init && w[hi] == expect && w[!hi] == 0xa5a5a5a5u, what);
}

static void test_amo(uct_ep_h ep, region_t *dst)
{
    volatile uint64_t *t = dst->buf;
    uint64_t result = 0;
    ucs_status_t st;
    comp_t c;

    amo64(ep, dst, UCT_ATOMIC_OP_ADD, 40, 2, 42, "atomic64 fetch-add");
    amo64(ep, dst, UCT_ATOMIC_OP_ADD, UINT64_MAX, 1, 0, "atomic64 fetch-add wraps");
    amo64(ep, dst, UCT_ATOMIC_OP_AND, 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull,
          0x0f000f000f000f00ull, "atomic64 fetch-and");
    amo64(ep, dst, UCT_ATOMIC_OP_OR, 0xf0, 0x0f00000000000001ull, 0x0f000000000000f1ull,
          "atomic64 fetch-or");
    amo64(ep, dst, UCT_ATOMIC_OP_SWAP, 7, 0xdeadbeefcafef00dull, 0xdeadbeefcafef00dull,
          "atomic64 swap");

    *t = 5;
    comp_init(&c);
    RETRY(st, uct_ep_atomic_cswap64(ep, 5, 9, (uintptr_t)t, dst->rkey.rkey, &result, &c.super));
    st = finish(st, &c);
    check(st == UCS_OK && result == 5 && *t == 9, "atomic64 cswap, equal: swapped");
    comp_init(&c);
    RETRY(st, uct_ep_atomic_cswap64(ep, 5, 1, (uintptr_t)t, dst->rkey.rkey, &result, &c.super));
    st = finish(st, &c);
    check(st == UCS_OK && result == 9 && *t == 9, "atomic64 cswap, different: unchanged");

    *t = 100;
    RETRY(st, uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 23, (uintptr_t)t, dst->rkey.rkey));
    check(st == UCS_OK && flush_ep(ep) == UCS_OK && *t == 123,
          "atomic64 post add: executed once flush completes");
    amo64(ep, dst, UCT_ATOMIC_OP_XOR, 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull,
          0xf0f0f0f0f0f0f0f0ull, "atomic64 fetch-xor (read, then compare-and-swap)");
    *t = 6;
    RETRY(st, uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_XOR, 3, (uintptr_t)t, dst->rkey.rkey));
    check(st == UCS_OK && flush_ep(ep) == UCS_OK && *t == 5,
          "atomic64 post xor: executed once flush completes");

    for (int hi = 0; hi < 2; hi++) {
        const char *h = hi ? "high half" : "low half";
        char what[128];

        snprintf(what, sizeof(what), "atomic32 fetch-add, %s: no carry into the other", h);
        amo32(ep, dst, hi, UCT_ATOMIC_OP_ADD, 0xffffffffu, 2, 1, what);
        snprintf(what, sizeof(what), "atomic32 fetch-and, %s", h);
        amo32(ep, dst, hi, UCT_ATOMIC_OP_AND, 0xf0f0f0f0u, 0xff00ff00u, 0xf000f000u, what);
        snprintf(what, sizeof(what), "atomic32 fetch-or, %s", h);
        amo32(ep, dst, hi, UCT_ATOMIC_OP_OR, 0x1u, 0x80000000u, 0x80000001u, what);
        snprintf(what, sizeof(what), "atomic32 fetch-xor, %s", h);
        amo32(ep, dst, hi, UCT_ATOMIC_OP_XOR, 0x0000ffffu, 0x00ff00ffu, 0x00ffff00u, what);
        snprintf(what, sizeof(what), "atomic32 swap, %s", h);
        amo32(ep, dst, hi, UCT_ATOMIC_OP_SWAP, 3, 0x12345678u, 0x12345678u, what);
    }
    {
        volatile uint32_t *w = dst->buf;
        uint32_t r32 = 0;

        w[0] = 77;
        w[1] = 78;
        comp_init(&c);
        RETRY(st, uct_ep_atomic_cswap32(ep, 78, 5, (uintptr_t)&w[1], dst->rkey.rkey, &r32,
                                        &c.super));
        st = finish(st, &c);
        check(st == UCS_OK && r32 == 78 && w[1] == 5 && w[0] == 77,
              "atomic32 cswap on the high half: swapped, low half untouched");
    }
}

/* Is this process's stack libsiwarp's software one?  A context of this
 * process picks the backend the md did (SIWARP_DEVICE); otherwise a verbs
 * device: kernel siw or an RNIC, whose connections are not sockets of
 * this process and whose Terminates the kernel takes. */
int soft_backend(void)
{
    struct siwarp_ctx *ctx;
    int soft = 0;

    if (siwarp_ctx_create(&ctx) == 0) {
        soft = !strcmp(siwarp_ctx_backend(ctx), "soft");
        siwarp_ctx_destroy(ctx);
    }
    return soft;
}

/* An RDMA Write to an STag the peer never registered: the peer answers
 * with a Terminate (RFC 5040 7.2) and closes, and the flush that follows
 * fails.  On the software stack the Terminate reaches uct_siwarp, and the
 * ep fails through the error handler.  On a verbs device the kernel takes
 * the Terminate: user space sees only the connection close, and a Write
 * completes once sent.  If the close is seen while nothing is outstanding
 * it reads as a peer that closed in order, which must not raise the error
 * handler (a peer process ending while this one shuts down,
 * uct_siwarp_ep_conn_failed); the failed flush is then what tells. */
static void test_bad_rkey(uct_ep_h ep, region_t *src, region_t *dst)
{
    uct_iov_t iov = { .buffer = src->buf, .length = 64, .memh = src->memh, .count = 1 };
    ucs_status_t st, fst;
    comp_t c;

    comp_init(&c);
    RETRY(st, uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst->buf,
                               dst->rkey.rkey ^ 0x00ffff00u, &c.super));
    if (st == UCS_INPROGRESS) {
        st = finish(st, &c);
    }
    fst = flush_ep(ep);
    wait_for(&err_seen);
    if (fst == UCS_OK || !err_seen) {
        printf("# put status %s, flush %s, error handler %s\n", ucs_status_string(st),
               ucs_status_string(fst), err_seen ? "ran" : "did not run");
    }
    if (soft_backend()) {
        check(fst != UCS_OK && err_seen,
              "put to an STag the peer does not have: flush fails, the error handler runs");
    } else {
        printf("# verbs device: the error handler %s\n", err_seen ? "ran" : "did not run "
               "(the close was seen with nothing outstanding)");
        check(fst != UCS_OK,
              "put to an STag the peer does not have: flush fails");
    }
}

/* the job's own ep, beside the strangers B cut off */
static void test_still_works(uct_ep_h ep, region_t *dst)
{
    uint64_t v = 0x5eed5eed5eed5eedull;
    ucs_status_t st;

    RETRY(st, uct_ep_put_short(ep, &v, sizeof(v), (uintptr_t)dst->buf, dst->rkey.rkey));
    check(st == UCS_OK && flush_ep(ep) == UCS_OK && !memcmp(dst->buf, &v, sizeof(v)),
          "after the strangers: the job's own ep still puts into B");
}

int main(int argc, char **argv)
{
    const char *dev = (argc > 1) ? argv[1] : "lo";
    uct_component_h *comps, comp = NULL;
    unsigned ncomps, i;
    uct_md_config_t *mcfg;
    uct_iface_config_t *icfg;
    ucs_async_context_t *async;
    uct_md_h md;
    side_t a, b;
    uct_ep_params_t ep_params;
    uct_ep_h ep;
    region_t src, dst;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (uct_query_components(&comps, &ncomps) != UCS_OK) {
        printf("1..0 # SKIP uct_query_components failed\n");
        return 0;
    }
    for (i = 0; i < ncomps; i++) {
        uct_component_attr_t ca = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
        uct_component_query(comps[i], &ca);
        if (!strcmp(ca.name, "siwarp")) {
            comp = comps[i];
        }
    }
    if (comp == NULL) {
        printf("1..0 # SKIP no siwarp UCT component (LD_PRELOAD the module)\n");
        return 0;
    }
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK ||
        uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK ||
        uct_md_config_read(comp, NULL, NULL, &mcfg) != UCS_OK ||
        uct_md_open(comp, "siwarp", mcfg, &md) != UCS_OK ||
        uct_md_iface_config_read(md, "siwarp", NULL, NULL, &icfg) != UCS_OK ||
        open_side(md, icfg, dev, &a) < 0 || open_side(md, icfg, dev, &b) < 0 ||
        region_init(md, comp, BIG + 64, &src) < 0 || region_init(md, comp, BIG + 64, &dst) < 0) {
        printf("1..1\nnot ok 1 - open md, ifaces and registrations on %s\n", dev);
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0);
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = a.iface;
    ep_params.dev_addr   = b.dev_addr;
    ep_params.iface_addr = b.iface_addr;
    check(uct_iface_is_reachable(a.iface, b.dev_addr, b.iface_addr),
          "iface B is reachable from iface A");
    check(uct_ep_create(&ep_params, &ep) == UCS_OK, "ep create (connect to iface)");

    test_am(ep, &a.attr, &src);
    test_put_get(ep, &a.attr, &src, &dst);
    if (a.attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE) {
        test_amo(ep, &dst);
    }
    test_strangers(&b, &dst);
    test_still_works(ep, &dst);
    test_conn(md, icfg, dev, &a, &b, ep, &src, &dst);
    test_bad_rkey(ep, &src, &dst);

    uct_ep_destroy(ep);
    uct_rkey_release(comp, &src.rkey);
    uct_rkey_release(comp, &dst.rkey);
    uct_md_mem_dereg(md, src.memh);
    uct_md_mem_dereg(md, dst.memh);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    uct_md_close(md);
    uct_config_release(icfg);
    uct_config_release(mcfg);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    printf("1..%d\n", ntest);
    return nfail ? 1 : 0;
}
