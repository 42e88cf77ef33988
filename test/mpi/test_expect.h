/*
 * test_expect.h - the checks of the BTL's table tests (test_regtab,
 * test_eptab, test_ifnear): each failed check prints where and what it got,
 * counts in `failures`, and the test goes on, so one run shows all of them.
 */
#ifndef SIWARP_TEST_EXPECT_H
#define SIWARP_TEST_EXPECT_H

#include <stdio.h>

static int failures;

#define EXPECT(expr, want)                                                             \
    do {                                                                               \
        long got_ = (long) (expr);                                                     \
        if (got_ != (long) (want)) {                                                   \
            fprintf(stderr, "%s:%d: %s = %ld, want %ld\n", __FILE__, __LINE__, #expr,  \
                    got_, (long) (want));                                              \
            failures++;                                                                \
        }                                                                              \
    } while (0)

#define EXPECT_PTR(expr, want)                                                         \
    do {                                                                               \
        const void *got_ = (expr);                                                     \
        if (got_ != (const void *) (want)) {                                           \
            fprintf(stderr, "%s:%d: %s = %p, want %p\n", __FILE__, __LINE__, #expr,    \
                    got_, (const void *) (want));                                      \
            failures++;                                                                \
        }                                                                              \
    } while (0)

#endif
