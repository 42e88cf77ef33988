/*
 * harness.h - a tiny TAP test harness.
 *
 *   #include "harness.h"
 *   TEST(crc_check_value) {
 *       ASSERT(x == y);            // any expression
 *       ASSERT_EQ(a, b);           // integers, both printed as long long
 *       ASSERT_MEM_EQ(p, q, n);    // first differing byte is printed
 *       ASSERT_OK(rc);             // rc == 0; a negative errno is decoded
 *       SKIP("no IPv6");           // printf-style reason
 *   }
 *   SWP_TEST_MAIN()
 *
 * Each TEST runs in its own fork()ed child (its own process group) with a
 * timeout: SWP_TEST_TIMEOUT seconds, default 120; on expiry the group is
 * killed with SIGKILL and the case fails as "timed out".  A child killed by
 * a signal fails naming the signal.  Output is TAP on stdout (1..N, ok /
 * not ok / # SKIP); anything a test prints on stdout goes to stderr so it
 * cannot corrupt the TAP stream.  argv[1], if given, is a substring filter
 * on case names.  The exit status is 0 iff no case failed.
 *
 * Assertions may be used from helper functions and from processes the test
 * forks itself: they end the calling process.
 */
#ifndef SWP_TEST_HARNESS_H
#define SWP_TEST_HARNESS_H

#include <stddef.h>

struct swp_test {
    const char *name;
    void (*fn)(void);
    const char *file;
    int line;
};

void swp_test_register(struct swp_test *t);
int  swp_test_main(int argc, char **argv);

void swp_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void swp_test_skip(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
void swp_test_fail_eq(const char *file, int line, const char *expr_a,
                      const char *expr_b, long long a, long long b)
    __attribute__((noreturn));
void swp_test_check_mem(const char *file, int line, const char *expr_a,
                       const char *expr_b, const void *a, const void *b, size_t n);
void swp_test_fail_ok(const char *file, int line, const char *expr, long long rc)
    __attribute__((noreturn));

/* Name of the running case (for log messages), NULL outside a case. */
const char *swp_test_current(void);

#define TEST(name)                                                          \
    static void swp_test_fn_##name(void);                                   \
    static struct swp_test swp_test_rec_##name = {                          \
        #name, swp_test_fn_##name, __FILE__, __LINE__ };                    \
    __attribute__((constructor)) static void swp_test_reg_##name(void)      \
    {                                                                       \
        swp_test_register(&swp_test_rec_##name);                            \
    }                                                                       \
    static void swp_test_fn_##name(void)

#define ASSERT(expr)                                                        \
    do {                                                                    \
        if (!(expr))                                                        \
            swp_test_fail(__FILE__, __LINE__, "ASSERT(%s) failed", #expr);  \
    } while (0)

#define ASSERT_EQ(a, b)                                                     \
    do {                                                                    \
        long long swp_a_ = (long long)(a), swp_b_ = (long long)(b);         \
        if (swp_a_ != swp_b_)                                               \
            swp_test_fail_eq(__FILE__, __LINE__, #a, #b, swp_a_, swp_b_);   \
    } while (0)

#define ASSERT_MEM_EQ(a, b, n)                                              \
    swp_test_check_mem(__FILE__, __LINE__, #a, #b, (a), (b), (size_t)(n))

#define ASSERT_OK(rc)                                                       \
    do {                                                                    \
        long long swp_rc_ = (long long)(rc);                                \
        if (swp_rc_ != 0)                                                   \
            swp_test_fail_ok(__FILE__, __LINE__, #rc, swp_rc_);             \
    } while (0)

#define FAIL(...)  swp_test_fail(__FILE__, __LINE__, __VA_ARGS__)
#define SKIP(...)  swp_test_skip(__VA_ARGS__)

#define SWP_TEST_MAIN()                                                     \
    int main(int argc, char **argv) { return swp_test_main(argc, argv); }

#endif /* SWP_TEST_HARNESS_H */
