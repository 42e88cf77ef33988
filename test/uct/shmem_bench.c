/*
 * shmem_bench.c - OpenSHMEM latency in the loops of the OSU OpenSHMEM
 * benchmarks, for contrib/bench-uct.sh: PE 0 times, PE 1 waits in
 * shmem_barrier_all (as OSU's target does).
 *   put   osu_oshm_put: shmem_putmem + shmem_quiet per iteration
 *   get   osu_oshm_get: shmem_getmem per iteration
 *   fadd  osu_oshm_atomics' fetch-add: shmem_long_atomic_fetch_add
 *   cswap its compare-and-swap: shmem_long_atomic_compare_swap
 * 1000 warm-up and 10000 timed iterations, 100 and 1000 above 8 KiB.
 * Prints "OP SIZE MICROSECONDS us" lines (the mean of the timed loop) and
 * checks the last value each op left, so a wrong answer fails (exit 1).
 *   shmem_bench [MAXSIZE]     (put and get at 8 B and every 16x to MAXSIZE,
 *                              default 65536)
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void fail(const char *what)
{
    fprintf(stderr, "[pe %d] shmem_bench: %s\n", me, what);
    exit(1);
}

enum op { PUT, GET, FADD, CSWAP };

/* OSU's loop on PE 0; the mean of the timed iterations in us */
static double timed(enum op op, char *sbuf, char *rbuf, size_t size, long *word)
{
    int skip = size > 8192 ? 100 : 1000, loop = size > 8192 ? 1000 : 10000;
    double t0 = 0;

    shmem_barrier_all();
    if (me == 0) {
        for (int i = 0; i < skip + loop; i++) {
            if (i == skip) {
                t0 = now_us();
            }
            switch (op) {
            case PUT:
                shmem_putmem(rbuf, sbuf, size, 1);
                shmem_quiet();
                break;
            case GET:
                shmem_getmem(rbuf, sbuf, size, 1);
                break;
            case FADD:
                (void)shmem_long_atomic_fetch_add(word, 1, 1);
                break;
            case CSWAP:
                (void)shmem_long_atomic_compare_swap(word, i, i + 1, 1);
                break;
            }
        }
        t0 = (now_us() - t0) / loop;
    }
    shmem_barrier_all();
    return t0;
}

int main(int argc, char **argv)
{
    static const char *names[] = { "put", "get", "fadd", "cswap" };
    size_t max = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
    char *sbuf, *rbuf;
    long *word;

    shmem_init();
    me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        fail("needs exactly 2 PEs");
    }
    sbuf = shmem_malloc(max);
    rbuf = shmem_malloc(max);
    word = shmem_malloc(sizeof(long));
    if (!sbuf || !rbuf || !word) {
        fail("shmem_malloc");
    }
    for (enum op op = PUT; op <= CSWAP; op++) {
        for (size_t size = 8; size <= (op <= GET ? max : 8); size *= 16) {
            double us;

            memset(sbuf, 'a' + me, max);
            memset(rbuf, 'z', max);
            *word = 0;
            shmem_barrier_all();
            us = timed(op, sbuf, rbuf, size, word);
            /* what the loop left: PE 1's rbuf holds PE 0's bytes (put), PE
             * 0's rbuf PE 1's (get), PE 1's word the 11000 increments (fadd;
             * cswap swaps i for i + 1) */
            if ((op == PUT && me == 1 && rbuf[size - 1] != 'a') ||
                (op == GET && me == 0 && rbuf[size - 1] != 'b') ||
                (op >= FADD && me == 1 && *word != 11000)) {
                fail("an operation left a wrong value");
            }
            if (me == 0) {
                printf("%s %zu %.3f us\n", names[op], size, us);
                fflush(stdout);
            }
        }
    }
    shmem_barrier_all();
    shmem_free(word);
    shmem_free(rbuf);
    shmem_free(sbuf);
    shmem_finalize();
    return 0;
}
