/*
 * shmem_check.c - OpenSHMEM over spml ucx, every answer checked: puts and
 * gets around a ring (8 B .. 1 MiB), fetch-add and compare-swap contention
 * on one counter of PE 0, non-fetching atomic adds, barriers, a broadcast
 * and a sum reduction.  Prints "shmem: ok on N PEs" or the first failure
 * and exits 1.  (test/uct/run-uct-tests.sh runs it with the siwarp
 * transport.)
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 200
#define MAXB  (1 << 20)

static int me, npes;

#define CHECK(c, ...) do { if (!(c)) { \
    fprintf(stderr, "[pe %d] %s:%d: check failed: %s: ", me, __FILE__, __LINE__, #c); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 8];
static long long counter, cas_counter, post_counter;
static long long bval[4], red_src[4], red_dst[4];

int main(void)
{
    int right, left;
    uint8_t *src, *dst;

    shmem_init();
    me    = shmem_my_pe();
    npes  = shmem_n_pes();
    right = (me + 1) % npes;
    left  = (me + npes - 1) % npes;
    src   = shmem_malloc(MAXB);
    dst   = shmem_malloc(MAXB);
    CHECK(src && dst, "shmem_malloc");

    for (size_t len = 8; len <= MAXB; len *= 8) {
        for (size_t i = 0; i < len; i++) {
            src[i] = (uint8_t)(i * 7 + me + len);
        }
        memset(dst, 0, len);
        shmem_barrier_all();
        shmem_putmem(dst, src, len, right);          /* I write my right's dst */
        shmem_quiet();
        shmem_barrier_all();
        for (size_t i = 0; i < len; i++) {
            CHECK(dst[i] == (uint8_t)(i * 7 + left + len), "put %zu B: byte %zu", len, i);
        }
        memset(src, 0, len);
        shmem_getmem(src, dst, len, left);           /* left's dst holds what left-1 put */
        for (size_t i = 0; i < len; i++) {
            CHECK(src[i] == (uint8_t)(i * 7 + (left + npes - 1) % npes + len),
                  "get %zu B: byte %zu", len, i);
        }
        shmem_barrier_all();
    }

    /* fetch-add contention: the values fetched by all PEs are 0..N*P-1 */
    {
        long long got[ITERS];
        for (int i = 0; i < ITERS; i++) {
            got[i] = shmem_longlong_atomic_fetch_add(&counter, 1, 0);
            CHECK(got[i] >= 0 && got[i] < (long long)ITERS * npes, "fetch-add value %lld", got[i]);
            CHECK(i == 0 || got[i] > got[i - 1], "fetch-add not increasing");
        }
        shmem_barrier_all();
        if (me == 0) {
            CHECK(counter == (long long)ITERS * npes, "counter %lld", counter);
        }
    }
    /* compare-and-swap increment loop */
    for (int i = 0; i < ITERS; i++) {
        long long old = shmem_longlong_atomic_fetch(&cas_counter, 0), seen;
        while ((seen = shmem_longlong_atomic_compare_swap(&cas_counter, old, old + 1, 0)) != old) {
            old = seen;
        }
    }
    for (int i = 0; i < ITERS; i++) {
        shmem_longlong_atomic_add(&post_counter, 2, 0);
    }
    shmem_quiet();
    shmem_barrier_all();
    if (me == 0) {
        CHECK(cas_counter == (long long)ITERS * npes, "cas counter %lld", cas_counter);
        CHECK(post_counter == 2LL * ITERS * npes, "atomic add counter %lld", post_counter);
    }

    /* broadcast and reduction */
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) {
        pSync[i] = SHMEM_SYNC_VALUE;
    }
    for (int i = 0; i < 4; i++) {
        bval[i]    = (me == 0) ? 1000 + i : -1;
        red_src[i] = me + i;
    }
    shmem_barrier_all();
    shmem_broadcast64(bval, bval, 4, 0, 0, 0, npes, pSync);
    shmem_barrier_all();
    if (me != 0) {
        for (int i = 0; i < 4; i++) {
            CHECK(bval[i] == 1000 + i, "broadcast element %d is %lld", i, bval[i]);
        }
    }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) {
        pSync[i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all();
    shmem_longlong_sum_to_all(red_dst, red_src, 4, 0, 0, npes, (long long*)pWrk, pSync);
    for (int i = 0; i < 4; i++) {
        CHECK(red_dst[i] == (long long)npes * (npes - 1) / 2 + (long long)i * npes,
              "sum element %d is %lld", i, red_dst[i]);
    }
    shmem_barrier_all();
    shmem_free(src);
    shmem_free(dst);
    if (me == 0) {
        printf("shmem: ok on %d PEs\n", npes);
    }
    shmem_finalize();
    return 0;
}
