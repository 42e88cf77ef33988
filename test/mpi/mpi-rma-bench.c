/*
 * mpi-rma-bench.c - one-sided latency and bandwidth between ranks 0 and 1,
 * in the loops of the OSU one-sided benchmarks' default (flush) mode:
 *
 *   put   osu_put_latency: MPI_Win_lock(SHARED, 1), then per iteration
 *         MPI_Put + MPI_Win_flush(1); the mean per iteration
 *   get   osu_get_latency: the same with MPI_Get
 *   acc   osu_acc_latency: MPI_Accumulate(MPI_SUM) of MPI_INTs + flush
 *   fop   osu_fop_latency: MPI_Fetch_and_op(MPI_SUM) of one MPI_LONG_LONG
 *   cas   osu_cas_latency: MPI_Compare_and_swap of one MPI_LONG_LONG
 *   putbw osu_put_bw: per iteration 32 MPI_Puts at consecutive offsets, then
 *         MPI_Win_flush(1); MB/s = size x 32 x iterations / time
 *   getbw osu_get_bw: the same with MPI_Get
 *
 * OSU's iteration counts: 10,000 after 100 untimed up to 8 KiB, 100 after
 * 10 above.  Rank 1 waits in MPI_Barrier meanwhile -- or, with -c MS,
 * computes for MS milliseconds without calling MPI first (the passive-
 * target case: only a progress thread serves the origin then); every
 * operation is timed then, none skipped, and a loop that outlasts the
 * computation says so on stderr.  The
 * window: MPI_Win_create (default, as the harness names it) or
 * MPI_Win_allocate (-a, OSU 5's default).
 *
 *   mpi-rma-bench [-t put,get,acc,fop,cas,putbw,getbw] [-n MIN] [-m MAX]
 *                 [-i ITER] [-a] [-c MS]
 *
 * Output, one line per (test, size):  put 8 12.34 us  /  putbw 65536 950.1 MB/s
 */
#include "mpi_common.h"

#include <getopt.h>
#include <time.h>

#define WINDOW_BW 32
#define LARGE     8192

static int rank, use_allocate, compute_ms, iters_opt;

static void iters_for(size_t size, int *skip, int *loop)
{
    *skip = size > LARGE ? 10 : 100;
    *loop = size > LARGE ? 100 : 10000;
    if (iters_opt > 0) {
        *loop = iters_opt;
    }
}

static void *make_window(size_t bytes, MPI_Win *win)
{
    void *base;
    if (use_allocate) {
        MPI_Win_allocate((MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, win);
    } else {
        base = bench_alloc(bytes);
        CHECK(NULL != base, "bench_alloc %zu", bytes);
        MPI_Win_create(base, (MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, win);
    }
    return base;
}

static void free_window(MPI_Win *win, void *base)
{
    MPI_Win_free(win);
    if (!use_allocate) {
        free(base);
    }
}

/* rank 1 while rank 0 measures: compute without MPI for compute_ms, then
 * wait in the barrier that ends the measurement */
static void target_side(void)
{
    if (1 == rank && compute_ms > 0) {
        struct timespec t0, t;
        volatile double x = 1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            for (int i = 0; i < 100000; i++) {
                x = x * 1.0000001 + 1e-9;
            }
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
                 compute_ms);
    }
}

typedef void (*rma_op_fn)(void *src, void *res, size_t size, MPI_Win win);

/* OSU's timed loop: rank 0 locks rank 1's window (`bytes`, buffers as
 * large) shared, and per iteration issues `op` on `size` and flushes.
 * Returns the seconds of the timed iterations on rank 0 (their count in
 * *loop_out), 0 on rank 1, which waits (or computes: target_side). */
static double timed_loop(const char *name, size_t size, size_t bytes, rma_op_fn op,
                         int *loop_out)
{
    char *src = bench_alloc(bytes), *res = bench_alloc(bytes);
    int skip, loop;
    double t0 = 0;
    MPI_Win win;
    void *base = make_window(bytes, &win);

    CHECK(src && res, "bench_alloc %zu", bytes);
    iters_for(size, &skip, &loop);
    if (compute_ms > 0) {
        skip = 0;   /* the first operations meet the computing target: time them */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (int i = 0; i < skip + loop; i++) {
            if (i == skip) {
                t0 = MPI_Wtime();
            }
            op(src, res, size, win);
            MPI_Win_flush(1, win);
        }
        t0 = MPI_Wtime() - t0;
        MPI_Win_unlock(1, win);
        if (compute_ms > 0 && t0 * 1000 >= compute_ms) {
            /* longer than the target computed: not all of it met a busy target */
            fprintf(stderr, "%s: %d operations took %.0f ms, the target computed %d ms\n",
                    name, loop, t0 * 1000, compute_ms);
        }
    } else {
        target_side();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free_window(&win, base);
    free(src);
    free(res);
    *loop_out = loop;
    return t0;
}

/* One latency test: `op` issues one operation of `size` bytes. */
static void latency(const char *name, size_t size, rma_op_fn op)
{
    int loop;
    double t = timed_loop(name, size, size < 8 ? 8 : size, op, &loop);

    if (0 == rank) {
        printf("%s %zu %.2f us\n", name, size, t * 1e6 / loop);
        fflush(stdout);
    }
}

static void op_put(void *src, void *res, size_t size, MPI_Win win)
{
    (void) res;
    MPI_Put(src, (int) size, MPI_CHAR, 1, 0, (int) size, MPI_CHAR, win);
}

static void op_get(void *src, void *res, size_t size, MPI_Win win)
{
    (void) src;
    MPI_Get(res, (int) size, MPI_CHAR, 1, 0, (int) size, MPI_CHAR, win);
}

static void op_acc(void *src, void *res, size_t size, MPI_Win win)
{
    int n = (int) (size / sizeof(int));
    (void) res;
    MPI_Accumulate(src, n, MPI_INT, 1, 0, n, MPI_INT, MPI_SUM, win);
}

static void op_fop(void *src, void *res, size_t size, MPI_Win win)
{
    (void) size;
    MPI_Fetch_and_op(src, res, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
}

static void op_cas(void *src, void *res, size_t size, MPI_Win win)
{
    long long cmp = 0;
    (void) size;
    MPI_Compare_and_swap(src, &cmp, res, MPI_LONG_LONG, 1, 0, win);
}

/* osu_put_bw / osu_get_bw's iteration: WINDOW_BW operations at consecutive
 * offsets of the buffers and the window */
static void op_putbw(void *src, void *res, size_t size, MPI_Win win)
{
    (void) res;
    for (int j = 0; j < WINDOW_BW; j++) {
        MPI_Put((char *) src + j * size, (int) size, MPI_CHAR, 1, (MPI_Aint) (j * size),
                (int) size, MPI_CHAR, win);
    }
}

static void op_getbw(void *src, void *res, size_t size, MPI_Win win)
{
    (void) src;
    for (int j = 0; j < WINDOW_BW; j++) {
        MPI_Get((char *) res + j * size, (int) size, MPI_CHAR, 1, (MPI_Aint) (j * size),
                (int) size, MPI_CHAR, win);
    }
}

static void bandwidth(const char *name, size_t size, rma_op_fn op)
{
    int loop;
    double t = timed_loop(name, size, size * WINDOW_BW, op, &loop);

    if (0 == rank) {
        printf("%s %zu %.1f MB/s\n", name, size, (double) size * WINDOW_BW * loop / t / 1e6);
        fflush(stdout);
    }
}

/* Is `name` one of the comma-separated words of `list`? */
static int has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (0 == strncmp(p, name, n) && (',' == p[n] || '\0' == p[n])) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *tests = "put,get,acc,fop,cas,putbw,getbw";
    size_t min = 8, max = 8;
    int size, c;

    while ((c = getopt(argc, argv, "t:n:m:i:ac:")) != -1) {
        switch (c) {
        case 't': tests = optarg; break;
        case 'n': min = strtoull(optarg, NULL, 0); break;
        case 'm': max = strtoull(optarg, NULL, 0); break;
        case 'i': iters_opt = atoi(optarg); break;
        case 'a': use_allocate = 1; break;
        case 'c': compute_ms = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: mpi-rma-bench [-t put,get,acc,fop,cas,putbw,getbw] "
                    "[-n min] [-m max] [-i iter] [-a] [-c ms]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks, got %d", size);
    if (has(tests, "fop")) {
        latency("fop", 8, op_fop);
    }
    if (has(tests, "cas")) {
        latency("cas", 8, op_cas);
    }
    for (size_t s = min < 1 ? 1 : min; s <= max; s *= 2) {
        if (has(tests, "put")) {
            latency("put", s, op_put);
        }
        if (has(tests, "get")) {
            latency("get", s, op_get);
        }
        if (has(tests, "acc") && s >= sizeof(int)) {
            latency("acc", s, op_acc);
        }
        if (has(tests, "putbw")) {
            bandwidth("putbw", s, op_putbw);
        }
        if (has(tests, "getbw")) {
            bandwidth("getbw", s, op_getbw);
        }
    }
    MPI_Finalize();
    return 0;
}
