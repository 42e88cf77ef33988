/*
 * test_qpn_map.c - the verbs backend's QP number -> QP map (qpn_map.c):
 * what was put is found, what was deleted is not, a number given again
 * (siw reuses a destroyed QP's number at once) finds its new QP, and the
 * table stays right through growth and through tombstones piling up.
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "qpn_map.h"

static void *val_of(uint32_t qpn, unsigned gen)
{
    return (void *)(uintptr_t)(((uint64_t)gen << 32) | qpn | 1u << 31);
}

TEST(put_get_del)
{
    struct swp_qpn_map m = { 0 };
    int x, y;

    ASSERT(swp_qpn_map_get(&m, 7) == NULL);       /* empty, never allocated */
    swp_qpn_map_del(&m, 7);
    ASSERT_OK(swp_qpn_map_put(&m, 7, &x));
    ASSERT(swp_qpn_map_get(&m, 7) == &x);
    ASSERT(swp_qpn_map_get(&m, 8) == NULL);
    ASSERT_OK(swp_qpn_map_put(&m, 7, &y));        /* same number: new value */
    ASSERT(swp_qpn_map_get(&m, 7) == &y);
    ASSERT_EQ(m.live, 1);
    swp_qpn_map_del(&m, 7);
    ASSERT(swp_qpn_map_get(&m, 7) == NULL);
    ASSERT_EQ(m.live, 0);
    swp_qpn_map_free(&m);
}

/* a table near half full (7 numbers in 16 slots, so that probe paths
 * cross): deleting any one keeps every other findable, and the deleted
 * one comes back with its new QP */
TEST(deleting_any_one_keeps_the_others)
{
    static const uint32_t qpns[] = { 1, 2, 3, 17, 33, 4096, 65537 };
    enum { K = sizeof(qpns) / sizeof(qpns[0]) };
    struct swp_qpn_map m = { 0 };

    for (int i = 0; i < K; i++)
        ASSERT_OK(swp_qpn_map_put(&m, qpns[i], val_of(qpns[i], 0)));
    ASSERT_EQ(m.cap, 16);
    for (int d = 0; d < K; d++) {
        swp_qpn_map_del(&m, qpns[d]);
        for (int i = 0; i < K; i++)
            ASSERT(swp_qpn_map_get(&m, qpns[i]) ==
                   (i == d ? NULL : val_of(qpns[i], i < d ? i + 1 : 0)));
        ASSERT_OK(swp_qpn_map_put(&m, qpns[d], val_of(qpns[d], d + 1)));
        ASSERT_EQ(m.live, K);
    }
    swp_qpn_map_free(&m);
}

/* 20,000 QPs come and go in generations, numbers reused as a device
 * does; a shadow array says what must be there */
TEST(churn_against_a_shadow)
{
    enum { N = 20000, ROUNDS = 8 };
    struct swp_qpn_map m = { 0 };
    unsigned *gen = calloc(N, sizeof(*gen));     /* 0: absent, else 1 + generation */
    uint32_t peak = 0;

    ASSERT(gen != NULL);
    srand(5);
    for (int r = 0; r < ROUNDS; r++) {
        for (uint32_t i = 0; i < N; i++) {
            uint32_t q = (uint32_t)rand() % N;

            if (gen[q] && (rand() & 1)) {
                swp_qpn_map_del(&m, q);
                gen[q] = 0;
            } else {
                unsigned g = (unsigned)(r * N + i) + 1;
                ASSERT_OK(swp_qpn_map_put(&m, q, val_of(q, g)));
                gen[q] = g;
            }
        }
        for (uint32_t q = 0; q < N; q++)
            ASSERT(swp_qpn_map_get(&m, q) == (gen[q] ? val_of(q, gen[q]) : NULL));
        if (m.cap > peak)
            peak = m.cap;
    }
    /* grown for the live numbers only: at most 4 slots each (half full,
     * doubled), tombstones swept rather than grown for */
    ASSERT(peak <= 4 * N);
    ASSERT(m.taken * 2 <= m.cap);
    swp_qpn_map_free(&m);
    free(gen);
}

SWP_TEST_MAIN()
