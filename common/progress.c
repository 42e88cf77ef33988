/*
 * progress.c - the poll/event loop of a context: one epoll set holding every
 * TCP socket (listeners and QPs) plus an eventfd used to wake pollers when a
 * completion is queued outside of progress, and a list of one-shot timers
 * used by the connection manager.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "read_hint.h"
#include "swp.h"

int swp_debug;

void swp_log(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "siwarp[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

uint64_t swp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int swp_poll_add(struct siwarp_ctx *ctx, struct swp_pollable *p, int fd,
                 uint32_t events, swp_poll_fn fn)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };

    p->fd = fd;
    p->fn = fn;
    p->events = events;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    p->added = true;
    return 0;
}

int swp_poll_mod(struct siwarp_ctx *ctx, struct swp_pollable *p, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };

    if (p->events == events)
        return 0;
    if (p->parked) {
        /* kept for the unpark; a blocked sender (EPOLLOUT) makes the next
         * progress call take the epoll path, which unparks first */
        p->events = events;
        return 0;
    }
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, p->fd, &ev) < 0)
        return -errno;
    p->events = events;
    return 0;
}

void swp_poll_del(struct siwarp_ctx *ctx, struct swp_pollable *p)
{
    /* a connection request leaves the set when read, and again as it is
     * freed: the second would be a syscall answering ENOENT */
    if (p->fd >= 0 && p->added)
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, p->fd, NULL);
    if (p->parked)
        ctx->parked--;
    p->added = false;
    p->parked = false;
    p->events = 0;
}

/* ---- parking: busy-polled sockets out of the epoll set ------------------------ */

/* A socket in an epoll set pays for it on every segment that arrives: the
 * kernel runs the set's wake-up callback under the socket's locks, whether
 * or not anyone ever waits on the set (a busy-polled C ping-pong over
 * loopback reads 2-4% slower with its sockets merely registered, and in
 * siwarp's profile the socket-lock slow path took 0.47 us a round trip
 * against raw TCP's 0.08).  While the fast path below reads a QP's socket
 * directly on every call, nothing needs epoll to watch it, so the periodic
 * epoll pass takes it out ("parks" it).  It goes back before anything
 * waits in epoll or relies on it: a sleep (siwarp_wait, the idle wait), a
 * blocked sender (EPOLLOUT), a timer, a connection in set-up, more QPs
 * than the fast path serves; and nothing parks while another thread
 * sleeps in the set.  A context whose fd was handed out
 * (siwarp_ctx_fd, siwarp_cq_fd) never parks: its owner may poll that fd
 * without calling us first.  epoll reports a socket added with data
 * already queued, so nothing arriving while parked is missed. */
static int swp_poll_park(struct siwarp_ctx *ctx, struct swp_pollable *p)
{
    if (!p->added || p->parked)
        return 0;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, p->fd, NULL) < 0)
        return -errno;
    p->added = false;
    p->parked = true;
    ctx->parked++;
    return 0;
}

int swp_ctx_unpark(struct siwarp_ctx *ctx)
{
    for (struct swp_list *l = ctx->qps.next; ctx->parked && l != &ctx->qps; l = l->next) {
        struct siwarp_qp *qp = swp_container_of(l, struct siwarp_qp, link);
        struct swp_pollable *p = &qp->pl;
        struct epoll_event ev = { .events = p->events, .data.ptr = p };

        if (!p->parked)
            continue;
        if (p->fd < 0) {            /* closed without swp_poll_del: nothing to add */
            p->parked = false;
            ctx->parked--;
            continue;
        }
        if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, p->fd, &ev) < 0)
            return -errno;
        p->parked = false;
        p->added = true;
        ctx->parked--;
    }
    return 0;
}

int swp_ctx_export_fd(struct siwarp_ctx *ctx)
{
    int rc;

    swp_lock(ctx);
    ctx->fd_exported = true;
    rc = swp_ctx_unpark(ctx);
    swp_unlock(ctx);
    return rc < 0 ? rc : ctx->epfd;
}

void swp_timer_arm(struct siwarp_ctx *ctx, struct swp_timer *t, uint64_t after_ms,
                   swp_timer_fn fn)
{
    if (t->armed)
        swp_list_del(&t->link);
    t->deadline_ns = swp_now_ns() + after_ms * 1000000ull;
    t->fn = fn;
    t->armed = true;
    swp_list_add_tail(&ctx->timers, &t->link);
}

void swp_timer_cancel(struct swp_timer *t)
{
    if (t->armed) {
        swp_list_del(&t->link);
        t->armed = false;
    }
}

/* Fire expired timers.  A timer callback may cancel or arm other timers or
 * free the object owning one, so restart the scan after every callback. */
static int swp_timers_run(struct siwarp_ctx *ctx)
{
    int fired = 0;
    uint64_t now = swp_now_ns();
    bool again = true;

    while (again) {
        again = false;
        for (struct swp_list *l = ctx->timers.next; l != &ctx->timers; l = l->next) {
            struct swp_timer *t = swp_container_of(l, struct swp_timer, link);
            if (t->deadline_ns <= now) {
                swp_list_del(&t->link);
                t->armed = false;
                t->fn(t);
                fired++;
                again = true;
                break;
            }
        }
    }
    return fired;
}

static int swp_timers_next_ms(struct siwarp_ctx *ctx, int timeout_ms)
{
    uint64_t now = swp_now_ns();

    for (struct swp_list *l = ctx->timers.next; l != &ctx->timers; l = l->next) {
        struct swp_timer *t = swp_container_of(l, struct swp_timer, link);
        int ms = t->deadline_ns <= now ? 0 : (int)((t->deadline_ns - now) / 1000000ull) + 1;
        if (timeout_ms < 0 || ms < timeout_ms)
            timeout_ms = ms;
    }
    return timeout_ms;
}

/* Make the context's fd readable.  Once is enough until the next drain:
 * 8 ranks connecting all to all wrote the eventfd 84 times, mostly into
 * an already readable one. */
void swp_ctx_kick(struct siwarp_ctx *ctx)
{
    uint64_t one = 1;
    ssize_t rc;

    if (ctx->kicked)
        return;
    rc = write(ctx->kickfd, &one, sizeof(one));
    (void)rc;   /* eventfd saturation is harmless: it is already readable */
    ctx->kicked = true;
}


/* Busy-poll fast path: with few connections, reading each socket directly
 * costs one syscall where epoll_wait + recv cost two.  epoll still runs
 * every SWP_EPOLL_EVERY polls for listeners and connection set-up (blocked
 * senders and timers always take the epoll path); rarely, because an
 * epoll_wait that lands between a message and its reply delays the reply
 * by a syscall.  Returns -1 when epoll must run now with every socket in
 * the set, SWP_DIRECT_PERIODIC when only the periodic pass is due (the
 * sockets read here may stay parked). */
#define SWP_DIRECT_MAX_QPS 4
#define SWP_EPOLL_EVERY    64
#define SWP_DIRECT_PERIODIC (-2)

SWP_HOT
static int swp_progress_direct(struct siwarp_ctx *ctx, bool *moved)
{
    struct siwarp_qp *qps[SWP_DIRECT_MAX_QPS];
    int n = 0;

    bool periodic = ++ctx->polls % SWP_EPOLL_EVERY == 0;

    if (!swp_list_empty(&ctx->timers))
        return -1;
    for (struct swp_list *l = ctx->qps.next; l != &ctx->qps; l = l->next) {
        struct siwarp_qp *qp = swp_container_of(l, struct siwarp_qp, link);
        if (qp->pl.fd < 0)
            continue;
        if (qp->state != SIWARP_QPS_RTS || (qp->pl.events & EPOLLOUT) ||
            n == SWP_DIRECT_MAX_QPS)
            return -1;
        qps[n++] = qp;
    }
    if (n == 0)
        return -1;
    if (periodic) {
        /* not while another thread sleeps in the set (a progress thread):
         * it would sleep on without the sockets it came to watch */
        for (int i = 0; i < n && !ctx->fd_exported && !ctx->sleepers; i++)
            if (swp_poll_park(ctx, &qps[i]->pl) < 0)
                break;          /* it stays in the set: only slower */
        return SWP_DIRECT_PERIODIC;
    }
    for (int i = 0; i < n; i++) {
        uint64_t before = qps[i]->rx.stream_off + qps[i]->tx.written;
        swp_rx_progress(qps[i]);
        if (qps[i]->pl.fd >= 0 && qps[i]->state == SIWARP_QPS_RTS && swp_tx_has_work(qps[i]))
            swp_tx_progress(qps[i]);
        if (qps[i]->rx.stream_off + qps[i]->tx.written != before)
            *moved = true;
    }
    return n;
}

/* ---- spin, then sleep (siwarp_ctx_set_idle_wait) ------------------------------- */

/* Is some transfer waiting on the kernel, so that a socket becoming ready
 * is sure to end a sleep?  A blocked sender waits for EPOLLOUT; an
 * outstanding Read, or an FPDU half received, for EPOLLIN.  A peer that is
 * merely quiet is not in flight: the next small message must find us
 * spinning. */
static bool swp_in_flight(struct siwarp_ctx *ctx)
{
    for (struct swp_list *l = ctx->qps.next; l != &ctx->qps; l = l->next) {
        struct siwarp_qp *qp = swp_container_of(l, struct siwarp_qp, link);
        if (qp->pl.fd < 0 || qp->state != SIWARP_QPS_RTS)
            continue;
        if ((qp->pl.events & EPOLLOUT) || swp_ring_count(&qp->orqr) ||
            qp->rx.state != SWP_RX_HDR || qp->rx.hdr_got)
            return true;
    }
    return false;
}

static void swp_idle_note(struct siwarp_ctx *ctx, bool moved)
{
    if (moved)
        ctx->idle_since_ns = 0;
    else if (!ctx->idle_since_ns)
        ctx->idle_since_ns = swp_now_ns();
}

static bool swp_idle_should_sleep(struct siwarp_ctx *ctx)
{
    return ctx->idle_since_ns && swp_list_empty(&ctx->timers) &&
           swp_now_ns() - ctx->idle_since_ns >= ctx->idle_spin_ns &&
           (ctx->idle_quiet || swp_in_flight(ctx));
}

int siwarp_ctx_set_idle_wait(struct siwarp_ctx *ctx, uint32_t spin_us, uint32_t wait_us)
{
    if (!ctx || ctx->hw || wait_us > 60000000)
        return -EINVAL;
    swp_lock(ctx);
    ctx->idle_spin_ns = (uint64_t)spin_us * 1000;
    ctx->idle_wait_ns = (uint64_t)wait_us * 1000;
    ctx->idle_since_ns = 0;
    swp_unlock(ctx);
    return 0;
}

int siwarp_ctx_set_idle_quiet(struct siwarp_ctx *ctx, bool on)
{
    if (!ctx || ctx->hw)
        return -EINVAL;
    swp_lock(ctx);
    ctx->idle_quiet = on;
    ctx->idle_since_ns = 0;
    swp_unlock(ctx);
    return 0;
}

static int swp_dispatch(struct epoll_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        struct swp_pollable *p = ev[i].data.ptr;
        p->fn(p, ev[i].events);
    }
    return n;
}

/* One bounded sleep in epoll, then the events it reported. */
static int swp_progress_sleep(struct siwarp_ctx *ctx)
{
    struct epoll_event ev[64];
    struct timespec ts = { .tv_sec = (time_t)(ctx->idle_wait_ns / 1000000000ull),
                           .tv_nsec = (long)(ctx->idle_wait_ns % 1000000000ull) };
    int n;

    ctx->idle_sleeps++;
    if ((n = swp_ctx_unpark(ctx)) < 0)
        return n;
    ctx->sleepers++;
    swp_unlock(ctx);
    n = epoll_pwait2(ctx->epfd, ev, 64, &ts, NULL);
    swp_lock(ctx);
    ctx->sleepers--;
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    if (n == 0)
        return 0;               /* still idle: the next call may sleep again */
    ctx->idle_since_ns = 0;
    /* as in swp_progress_locked: ev[] may name objects freed meanwhile */
    n = epoll_wait(ctx->epfd, ev, 64, 0);
    return n < 0 ? (errno == EINTR ? 0 : -errno) : swp_dispatch(ev, n);
}

/* Locked progress: one epoll_wait, dispatch, timers.  Returns events
 * handled.  direct_ok lets a non-blocking pass take the busy-poll fast
 * path (swp_progress_direct), which looks at listeners only every
 * SWP_EPOLL_EVERY passes. */
SWP_HOT
static int swp_progress_pass(struct siwarp_ctx *ctx, int timeout_ms, bool direct_ok)
{
    struct epoll_event ev[64];
    int n, handled = 0;
    bool moved = false;

    /* inside a receive handler the staging buffer holds the message it is
     * reading: no socket is read until it returns */
    if (ctx->in_recv_handler)
        return 0;
    ctx->epoch++;
    if (!swp_list_empty(&ctx->tx_held))
        swp_tx_flush_held(ctx);
    if (timeout_ms == 0 && ctx->idle_wait_ns && swp_idle_should_sleep(ctx))
        return swp_progress_sleep(ctx);
    n = timeout_ms == 0 && ctx->direct_poll && direct_ok ? swp_progress_direct(ctx, &moved) : -1;
    if (n >= 0) {
        if (ctx->idle_wait_ns)
            swp_idle_note(ctx, moved);
        if (!moved && !swp_list_empty(&ctx->hints))
            swp_read_hint_step(ctx);
        return n;
    }
    if (n != SWP_DIRECT_PERIODIC && ctx->parked && (n = swp_ctx_unpark(ctx)) < 0)
        return n;

    if (!swp_list_empty(&ctx->timers))
        timeout_ms = swp_timers_next_ms(ctx, timeout_ms);
    if (timeout_ms != 0) {
        /* never sleep holding the lock: other threads must be able to post */
        ctx->sleepers++;
        swp_unlock(ctx);
        n = epoll_wait(ctx->epfd, ev, 64, timeout_ms);
        swp_lock(ctx);
        ctx->sleepers--;
        /* Pointers in ev[] may have been freed while we slept unlocked:
         * only use them to learn that something is ready, then poll again. */
        if (n > 0)
            n = epoll_wait(ctx->epfd, ev, 64, 0);
    } else {
        n = epoll_wait(ctx->epfd, ev, 64, 0);
    }
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    handled = swp_dispatch(ev, n);
    if (!swp_list_empty(&ctx->timers))
        handled += swp_timers_run(ctx);
    /* peers stalled inside an FPDU: every 64th pass, or a waiting one */
    if (timeout_ms != 0 || (ctx->epoch & 63) == 0)
        swp_qp_stall_sweep(ctx);
    if (ctx->idle_wait_ns)
        swp_idle_note(ctx, handled > 0);
    /* a pass that found nothing: time for an announced Read's CRCs */
    if (handled == 0 && !swp_list_empty(&ctx->hints))
        swp_read_hint_step(ctx);
    return handled;
}

SWP_HOT
int swp_progress_locked(struct siwarp_ctx *ctx, int timeout_ms)
{
    return swp_progress_pass(ctx, timeout_ms, true);
}

SWP_HOT
int swp_progress_all_locked(struct siwarp_ctx *ctx)
{
    return swp_progress_pass(ctx, 0, false);
}

int swp_progress_until(struct siwarp_ctx *ctx, int timeout_ms, bool (*done)(void *arg), void *arg)
{
    uint64_t deadline = swp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;

    /* what it waits for could only come after the handler returns */
    if (ctx->in_recv_handler && !done(arg))
        return -EDEADLK;
    while (!done(arg)) {
        int left = -1, rc;

        if (timeout_ms >= 0) {
            uint64_t now = swp_now_ns();
            if (now >= deadline)
                return -ETIMEDOUT;
            left = (int)((deadline - now + 999999) / 1000000ull);
        }
        rc = swp_progress_locked(ctx, left);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* siwarp_progress and siwarp_progress_all: one non-blocking pass. */
static int swp_progress_once(struct siwarp_ctx *ctx, bool direct_ok)
{
    int rc;

    if (!ctx)
        return -EINVAL;
    if (ctx->hw) return swp_hw_progress(ctx, 0);
    swp_lock(ctx);
    swp_app_progress(ctx);
    rc = swp_progress_pass(ctx, 0, direct_ok);
    swp_unlock(ctx);
    swp_app_idle(ctx, rc == 0);
    return rc;
}

int siwarp_progress(struct siwarp_ctx *ctx)
{
    return swp_progress_once(ctx, true);
}

int siwarp_progress_all(struct siwarp_ctx *ctx)
{
    return swp_progress_once(ctx, false);
}

int siwarp_wait(struct siwarp_ctx *ctx, int timeout_ms)
{
    int rc;

    if (!ctx)
        return -EINVAL;
    if (ctx->hw) return swp_hw_progress(ctx, timeout_ms);
    swp_lock(ctx);
    swp_app_progress(ctx);
    rc = swp_progress_locked(ctx, timeout_ms);
    swp_unlock(ctx);
    return rc;
}

int siwarp_ctx_fd(struct siwarp_ctx *ctx)
{
    return ctx ? swp_ctx_export_fd(ctx) : -EINVAL;
}

uint32_t swp_rand32(struct siwarp_ctx *ctx)
{
    /* xorshift64*: STag keys need unpredictability against blind guessing,
     * not cryptographic strength; seeded from getrandom-quality entropy. */
    uint64_t x = ctx->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ctx->rng = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}
