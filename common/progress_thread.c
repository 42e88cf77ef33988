/*
 * progress_thread.c - a thread that progresses a context while the
 * application does not (siwarp_ctx_start_progress_thread).
 *
 * Software iWARP does the responder's work in progress: an RDMA Write is
 * placed, a Read answered, an RFC 7306 atomic executed only when somebody
 * reads the socket.  A one-sided peer (MPI passive target, an OpenSHMEM
 * get, a UCX flush) of a process that computes waits for its next call.
 *
 * A thread that simply sleeps in epoll beside a busy-polling application
 * wakes on every segment and fights it for the lock and, on a host with as
 * many busy ranks as cores, for the core: measured with Open MPI's
 * passive-target put, 35 us idle with such a thread against 12 us without.
 * So this one watches the application instead.  Each progress call of the
 * application, on any context of the process that has a thread, notes the
 * time (swp_app_progress); while the last one is younger than away_ns the
 * thread sleeps, not in epoll, looking again at intervals that grow to
 * SWP_PT_YIELD_MAX_NS, and the application's busy poll may park its
 * sockets as without a thread.  Once the application has been away that long, the
 * thread sleeps in epoll and serves whatever arrives, then polls for
 * SWP_PT_SPIN_NS more: an origin's next operation comes one round trip
 * later, and waking from epoll onto a core the application keeps busy
 * cost 20-40 us here (Open MPI passive-target put with the target
 * computing, 2 ranks on 2 cores: 40-60 us sleeping after each, 20-22 us
 * with the spin, 13-15 us with the target idle in MPI).
 *
 * Contexts with a thread serve each other (swp_pt_serve_others): while
 * the application polls one of them in a loop that finds nothing, every
 * SWP_PT_SERVE_EVERY-th call also runs a pass over the others, whose
 * threads the activity clock keeps asleep.  Open MPI's pml ucx and osc ucx
 * each open a context; a rank waiting in a pml barrier polls the osc
 * worker only every 100th turn, so an origin's put + flush waited for that
 * turn (osu_put_latency through osc ucx 19-20 us, as over UCX's tcp).
 * Only contexts with a thread qualify: they have no receive handlers (which
 * need a single-thread context) and are already progressed by a foreign
 * thread, under their lock, which is only tried.
 *
 * Exported fd (siwarp_ctx_fd): an application may sleep on it (UCX's
 * ucp_worker_wait).  Whatever the thread takes off a socket no longer
 * makes that fd readable, so when its pass queued completions the thread
 * kicks the context's eventfd, and leaves the kick for the application's
 * own progress to drain (verbs.c swp_kick_drain).  While a kick waits the
 * thread cannot sleep in the set (the kick keeps it ready), so it polls
 * it every SWP_PT_POLL_NS until the application has drained it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* pthread_setaffinity_np */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "swp.h"

#define SWP_PT_AWAY_DEFAULT_US 200
#define SWP_PT_WAIT_MS         100          /* a sleep in epoll, then look at stop */
#define SWP_PT_POLL_NS         50000ull     /* a kick waits for the application */
#define SWP_PT_BACKOFF_MAX_NS  1000000ull   /* a set that reports work nobody can do */
#define SWP_PT_SLICE_NS        100000ull
#define SWP_PT_YIELD_MAX_NS    2000000ull   /* longest look-away from a busy application */
#define SWP_PT_SPIN_NS         50000ull     /* after work: the next op of a burst */

struct swp_pthread {
    pthread_t tid;
    bool stop;
    uint64_t away_ns;
    uint64_t backoff_ns;
    uint64_t last_work_ns;                  /* the last pass that moved octets */
    uint64_t yield_ns;                      /* the last look-away; doubles while busy */
    struct siwarp_progress_thread_stats st;
};

/* The application's last progress call on any context with a thread, for
 * the whole process: a rank that waits in one context (Open MPI's pml ucx
 * polls its own worker and the osc worker only every 100th turn) is in the
 * library, and a thread of another context that took the core from it
 * would only slow it down (osc ucx put with the target in a barrier, 2
 * ranks on 2 cores: 22 us without threads, 33 us with per-context clocks). */
static uint64_t swp_pt_seen_ns;

/* The contexts with a thread, for swp_pt_serve_others */
static struct swp_list swp_pt_all = { &swp_pt_all, &swp_pt_all };
static pthread_mutex_t swp_pt_all_lock = PTHREAD_MUTEX_INITIALIZER;

/* One pass over each other context with a thread whose lock is free,
 * from an application thread that holds no context lock.  Nothing here
 * waits: a registry or context another thread holds is skipped. */
void swp_pt_serve_others(struct siwarp_ctx *self)
{
    if (pthread_mutex_trylock(&swp_pt_all_lock) != 0)
        return;
    for (struct swp_list *l = swp_pt_all.next; l != &swp_pt_all; l = l->next) {
        struct siwarp_ctx *c = swp_container_of(l, struct siwarp_ctx, pt_link);
        uint64_t pushes;

        if (c == self || pthread_mutex_trylock(&c->lock) != 0)
            continue;
        /* in the registry, c has its thread (swp_pt_stop leaves it first) */
        pushes = c->cq_pushes;
        (void)swp_progress_all_locked(c);   /* its owner sees errors itself */
        /* what this pass took off a socket no longer makes the context's
         * fd readable: kick it for an owner asleep on it */
        if (c->cq_pushes != pushes && c->fd_exported)
            swp_ctx_kick(c);
        c->pt->st.served_by_others++;
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&swp_pt_all_lock);
}

void swp_pt_app_seen(void)
{
    __atomic_store_n(&swp_pt_seen_ns, swp_now_ns(), __ATOMIC_RELAXED);
}

bool swp_pt_is_self(const struct siwarp_ctx *ctx)
{
    return ctx->pt && pthread_equal(pthread_self(), ctx->pt->tid);
}

static inline void swp_pt_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The next of a series of waits: first, then twice the last, at most max. */
static uint64_t swp_pt_grow(uint64_t last, uint64_t first, uint64_t max)
{
    uint64_t next = last ? last * 2 : first;

    return next < max ? next : max;
}

static void swp_pt_sleep(struct siwarp_ctx *ctx, uint64_t ns)
{
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
                           .tv_nsec = (long)(ns % 1000000000ull) };

    swp_unlock(ctx);
    (void)nanosleep(&ts, NULL);
    swp_lock(ctx);
}

/* Octets that moved on any connection, and completions queued: a pass
 * that reports events but moves nothing (a socket ready with nothing this
 * thread may do about it) must not turn the thread into a spinner.  A
 * counter of the context's, not a walk of its QPs: the thread looks twice
 * a pass, and a process of a large job holds tens of thousands of QPs. */
static uint64_t swp_pt_moved(const struct siwarp_ctx *ctx)
{
    return ctx->cq_pushes + ctx->moved;
}

/* Linux's EEVDF scheduler (6.6+) lets a woken task preempt the one on
 * its core sooner the shorter its requested slice (PREEMPT_SHORT, 6.12+):
 * a bound MPI rank computing on the thread's only core otherwise keeps it
 * waiting.  SCHED_OTHER with a 100 us slice needs no privilege; older
 * kernels ignore or refuse it (then nothing changes). */
struct swp_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

static void swp_pt_short_slice(void)
{
#ifdef SYS_sched_setattr
    struct swp_sched_attr a = { .size = sizeof(a), .policy = SCHED_OTHER,
                                .runtime = SWP_PT_SLICE_NS };

    (void)syscall(SYS_sched_setattr, 0, &a, 0);
#endif
}

static void *swp_pt_main(void *arg)
{
    struct siwarp_ctx *ctx = arg;
    struct swp_pthread *pt = ctx->pt;

    /* the default 50 us slack would stretch every short sleep below */
    (void)prctl(PR_SET_TIMERSLACK, 1000ul);
    swp_pt_short_slice();
    swp_lock(ctx);
    while (!pt->stop) {
        uint64_t now = swp_now_ns();
        uint64_t since = now - __atomic_load_n(&swp_pt_seen_ns, __ATOMIC_RELAXED);
        uint64_t pushes = ctx->cq_pushes, before = swp_pt_moved(ctx);
        bool polling = ctx->fd_exported && ctx->kicked, spinning, moved;
        int rc;

        if (since < pt->away_ns) {
            /* Each look costs the application's core a wake-up (20 us in a
             * VM): while it stays busy, look half as often each time, up
             * to every SWP_PT_YIELD_MAX_NS -- how late the thread may
             * notice that the application left. */
            pt->yield_ns = swp_pt_grow(pt->yield_ns, pt->away_ns, SWP_PT_YIELD_MAX_NS);
            pt->st.yields++;
            swp_pt_sleep(ctx, pt->yield_ns > pt->away_ns - since ? pt->yield_ns
                                                                   : pt->away_ns - since);
            continue;
        }
        pt->yield_ns = 0;
        /* Right after it served something the thread spins a little: an
         * origin's next put, get or atomic comes one round trip later, and
         * a wake-up from epoll costs more than that on a busy core (20 us
         * a hop in a VM here: contrib/probes/wait-pingpong.c). */
        spinning = now - pt->last_work_ns < SWP_PT_SPIN_NS;
        rc = polling || spinning ? swp_progress_all_locked(ctx)
                                 : swp_progress_locked(ctx, SWP_PT_WAIT_MS);
        pt->st.passes++;
        if (rc > 0)
            pt->st.served += (uint64_t)rc;
        if (ctx->cq_pushes != pushes && ctx->fd_exported)
            swp_ctx_kick(ctx);
        moved = swp_pt_moved(ctx) != before;
        if (moved)
            pt->last_work_ns = swp_now_ns();
        if (polling && now - pt->last_work_ns >= SWP_PT_SPIN_NS) {
            swp_pt_sleep(ctx, SWP_PT_POLL_NS);
        } else if (spinning || polling) {
            /* let a caller of the application in between passes */
            swp_unlock(ctx);
            swp_pt_relax();
            swp_lock(ctx);
        } else if (rc != 0 && !moved) {
            /* an error, or events that moved nothing: back off, up to 1 ms */
            pt->backoff_ns = swp_pt_grow(pt->backoff_ns, 10000, SWP_PT_BACKOFF_MAX_NS);
            swp_pt_sleep(ctx, pt->backoff_ns);
        } else {
            pt->backoff_ns = 0;
        }
    }
    swp_unlock(ctx);
    return NULL;
}

int siwarp_ctx_start_progress_thread(struct siwarp_ctx *ctx, uint32_t away_us)
{
    struct swp_pthread *pt;
    int rc;

    if (!ctx)
        return -EINVAL;
    if (ctx->hw)
        return -EOPNOTSUPP;
    pt = calloc(1, sizeof(*pt));
    if (!pt)
        return -ENOMEM;
    pt->away_ns = (uint64_t)(away_us ? away_us : SWP_PT_AWAY_DEFAULT_US) * 1000;
    swp_pt_app_seen();
    pthread_mutex_lock(&ctx->lock);
    if (ctx->single_thread) {
        rc = -EINVAL;
    } else if (ctx->pt) {
        rc = -EALREADY;
    } else {
        ctx->pt = pt;
        rc = -pthread_create(&pt->tid, NULL, swp_pt_main, ctx);
        if (rc)
            ctx->pt = NULL;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (rc) {
        free(pt);
        return rc;
    }
    pthread_mutex_lock(&swp_pt_all_lock);
    swp_list_add_tail(&swp_pt_all, &ctx->pt_link);
    pthread_mutex_unlock(&swp_pt_all_lock);
    return 0;
}

void swp_pt_stop(struct siwarp_ctx *ctx)
{
    struct swp_pthread *pt;

    /* no other context's application serves this one from now on (it
     * holds the registry while it does) */
    pthread_mutex_lock(&swp_pt_all_lock);
    swp_list_del(&ctx->pt_link);
    pthread_mutex_unlock(&swp_pt_all_lock);
    /* the real lock: a context with a thread is never single-thread */
    pthread_mutex_lock(&ctx->lock);
    pt = ctx->pt;
    if (pt) {
        pt->stop = true;
        swp_ctx_kick(ctx);      /* ends a sleep in epoll now, not in SWP_PT_WAIT_MS */
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!pt)
        return;
    pthread_join(pt->tid, NULL);
    pthread_mutex_lock(&ctx->lock);
    ctx->pt = NULL;
    pthread_mutex_unlock(&ctx->lock);
    free(pt);
}

int siwarp_ctx_stop_progress_thread(struct siwarp_ctx *ctx)
{
    if (!ctx || ctx->hw || !ctx->pt)
        return -EINVAL;
    swp_pt_stop(ctx);
    return 0;
}

/* Affinity is the caller's choice (the BTL asks Open MPI's topology for a
 * core its rank does not run on); without it the thread inherits the
 * creating thread's binding, which on a bound rank is the rank's own core. */
int siwarp_ctx_set_progress_thread_cpus(struct siwarp_ctx *ctx, const void *cpus, size_t size)
{
    int rc;

    if (!ctx || ctx->hw || !cpus || !size)
        return -EINVAL;
    pthread_mutex_lock(&ctx->lock);
    rc = ctx->pt ? -pthread_setaffinity_np(ctx->pt->tid, size, (const cpu_set_t *)cpus)
                 : -EINVAL;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int siwarp_ctx_progress_thread_stats(struct siwarp_ctx *ctx,
                                     struct siwarp_progress_thread_stats *st)
{
    int rc = 0;

    if (!ctx || !st || ctx->hw)
        return -EINVAL;
    swp_lock(ctx);
    if (ctx->pt)
        *st = ctx->pt->st;
    else
        rc = -EINVAL;
    swp_unlock(ctx);
    return rc;
}
