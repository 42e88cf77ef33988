/*
 * turnaround.c - how long a process spends in user space between a
 * message arriving and its reply leaving: the time from a recv()/readv()
 * that returned data to the next sendmsg()/send()/writev(), per reply.
 * In a ping-pong that is the transport's whole software cost per hop above
 * the kernel (parse, completion, MPI matching, the reply's headers); a raw
 * TCP ping-pong's is near zero.  Preloaded, so it measures any transport
 * that talks through these calls (siwarp, btl tcp, siwarp-perf --tcp).
 *
 *   cc -O2 -shared -fPIC -o /tmp/turnaround.so contrib/turnaround.c -ldl
 *   mpirun -np 2 -x LD_PRELOAD=/tmp/turnaround.so ... mpi-bench -t lat -n 8 -m 8 -i 100000
 *
 * At exit each process prints to stderr the 10th, 50th and 90th percentile
 * in TSC ticks and nanoseconds (ticks converted with the TSC rate measured
 * over the process's life).  Only turnarounds under 100,000 ticks count:
 * longer ones are the benchmark's own pauses, not a reply.  x86-64 only.
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
static uint32_t *samples;
static uint32_t nsamples;
static uint64_t tsc0;
static struct timespec ts0;

static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);

__attribute__((constructor)) static void turnaround_init(void)
{
    real_recv = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
    real_readv = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "readv");
    real_sendmsg = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
    real_send = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
    real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    samples = calloc(MAX_SAMPLES, sizeof(*samples));
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

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    going_out();
    return real_sendmsg(fd, msg, flags);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    going_out();
    return real_send(fd, buf, len, flags);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    going_out();
    return real_writev(fd, iov, n);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
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
    qsort(samples, nsamples, sizeof(*samples), cmp_u32);
    fprintf(stderr, "turnaround: %u replies, p10/p50/p90 %u/%u/%u ticks = %.0f/%.0f/%.0f ns\n",
            nsamples, samples[nsamples / 10], samples[nsamples / 2],
            samples[nsamples * 9 / 10], samples[nsamples / 10] * ns_per_tick,
            samples[nsamples / 2] * ns_per_tick, samples[nsamples * 9 / 10] * ns_per_tick);
}
