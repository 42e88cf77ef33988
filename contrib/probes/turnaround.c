/*
 * turnaround.c - how long a process spends in user space between a
 * message arriving and its reply leaving: the time from a recv()/readv()/
 * recvmsg() that returned data to the next sendmsg()/send()/writev(), per
 * reply.  In a ping-pong that is the transport's whole software cost per
 * hop above the kernel (parse, completion, MPI matching, the reply's
 * headers); a raw TCP ping-pong's is near zero.  Preloaded, so it measures
 * any transport that talks through these calls (siwarp, btl tcp,
 * siwarp-perf --tcp).
 *
 *   cc -O2 -shared -fPIC -o /tmp/turnaround.so contrib/probes/turnaround.c -ldl
 *   mpirun -np 2 -x LD_PRELOAD=/tmp/turnaround.so ... mpi-bench -t lat -n 8 -m 8 -i 100000
 *
 * At exit each process prints to stderr the 10th, 50th and 90th percentile
 * in TSC ticks and nanoseconds (ticks converted with the TSC rate measured
 * over the process's life), and the same for the time spent inside the
 * send calls themselves: on loopback and a veth pair a send also runs the
 * peer's TCP input, so the two lines together split a hop between the
 * transport's user space and the kernel.  Only samples under 100,000
 * ticks count: longer ones are the benchmark's own pauses, not a reply.
 * x86-64 only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <x86intrin.h>

#define MAX_SAMPLES (1u << 21)
#define MAX_TICKS   100000u

static uint64_t got_at;                 /* TSC when data last came in; 0: none */
static uint32_t *samples, *in_send;
static uint32_t nsamples, nin_send;
static uint64_t tsc0;
static struct timespec ts0;

static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);

__attribute__((constructor)) static void turnaround_init(void)
{
    real_recv = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
    real_readv = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "readv");
    real_recvmsg = (ssize_t (*)(int, struct msghdr *, int))dlsym(RTLD_NEXT, "recvmsg");
    real_sendmsg = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
    real_send = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
    real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    samples = calloc(MAX_SAMPLES, sizeof(*samples));
    in_send = calloc(MAX_SAMPLES, sizeof(*in_send));
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    tsc0 = __rdtsc();
}

static void came_in(ssize_t got)
{
    if (got > 0)
        got_at = __rdtsc();
}

/* a reply leaves: close the turnaround opened by the last arrival */
static void going_out(void)
{
    uint64_t dt = __rdtsc() - got_at;

    if (got_at && dt < MAX_TICKS && samples && nsamples < MAX_SAMPLES)
        samples[nsamples++] = (uint32_t)dt;
    got_at = 0;
}

/* a send call returned: how long the kernel kept us */
static ssize_t sent(uint64_t t0, ssize_t rc)
{
    uint64_t dt = __rdtsc() - t0;

    if (dt < MAX_TICKS && in_send && nin_send < MAX_SAMPLES)
        in_send[nin_send++] = (uint32_t)dt;
    return rc;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t got = real_recv(fd, buf, len, flags);
    came_in(got);
    return got;
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
    ssize_t got = real_readv(fd, iov, n);
    came_in(got);
    return got;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    ssize_t got = real_recvmsg(fd, msg, flags);
    came_in(got);
    return got;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    uint64_t t0;

    going_out();
    t0 = __rdtsc();
    return sent(t0, real_sendmsg(fd, msg, flags));
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    uint64_t t0;

    going_out();
    t0 = __rdtsc();
    return sent(t0, real_send(fd, buf, len, flags));
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    uint64_t t0;

    going_out();
    t0 = __rdtsc();
    return sent(t0, real_writev(fd, iov, n));
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, uint32_t *v, uint32_t n, double ns_per_tick)
{
    qsort(v, n, sizeof(*v), cmp_u32);
    fprintf(stderr, "turnaround: %u %s, p10/p50/p90 %u/%u/%u ticks = %.0f/%.0f/%.0f ns\n",
            n, what, v[n / 10], v[n / 2], v[n * 9 / 10], v[n / 10] * ns_per_tick,
            v[n / 2] * ns_per_tick, v[n * 9 / 10] * ns_per_tick);
}

__attribute__((destructor)) static void turnaround_report(void)
{
    struct timespec ts;
    double ns_per_tick;

    if (nsamples < 100)
        return;                         /* a launcher or helper, not a rank */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns_per_tick = ((double)(ts.tv_sec - ts0.tv_sec) * 1e9 + (double)(ts.tv_nsec - ts0.tv_nsec)) /
                  (double)(__rdtsc() - tsc0);
    report("replies", samples, nsamples, ns_per_tick);
    if (nin_send >= 100)
        report("send calls (time inside)", in_send, nin_send, ns_per_tick);
}
