/*
 * test_backend.c - choosing the backend of a context: siwarp_ctx_create
 * stays software unless SIWARP_DEVICE says otherwise, a device that does
 * not exist fails cleanly with -ENODEV, "auto" falls back to software when
 * there is no iWARP verbs device, "soft" is software whatever the
 * environment says, and rdma-core is loaded only once a verbs device is
 * asked for.  (The verbs backend itself runs in the siw guest:
 * test/interop/run-hw.sh.)
 */
#include "config.h"     /* HAVE_VERBS */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "siwarp/siwarp.h"
#include "swp.h"        /* swp_hw_* */

TEST(default_is_soft)
{
    struct siwarp_ctx *ctx;

    unsetenv("SIWARP_DEVICE");
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT(!strcmp(siwarp_ctx_backend(ctx), "soft"));
    siwarp_ctx_destroy(ctx);
}

TEST(env_soft_and_empty)
{
    struct siwarp_ctx *ctx;

    setenv("SIWARP_DEVICE", "soft", 1);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT(!strcmp(siwarp_ctx_backend(ctx), "soft"));
    siwarp_ctx_destroy(ctx);
    setenv("SIWARP_DEVICE", "", 1);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT(!strcmp(siwarp_ctx_backend(ctx), "soft"));
    siwarp_ctx_destroy(ctx);
}

TEST(nonexistent_device_enodev)
{
    struct siwarp_ctx *ctx = NULL;

    unsetenv("SIWARP_DEVICE");
    ASSERT_EQ(siwarp_ctx_create_dev("nonexistent0", &ctx), -ENODEV);
    ASSERT(ctx == NULL);
    setenv("SIWARP_DEVICE", "nonexistent0", 1);
    ASSERT_EQ(siwarp_ctx_create(&ctx), -ENODEV);
    ASSERT(ctx == NULL);
}

TEST(soft_ignores_env)
{
    struct siwarp_ctx *ctx;

    setenv("SIWARP_DEVICE", "nonexistent0", 1);
    ASSERT_OK(siwarp_ctx_create_dev("soft", &ctx));
    ASSERT(!strcmp(siwarp_ctx_backend(ctx), "soft"));
    siwarp_ctx_destroy(ctx);
}

TEST(auto_falls_back)
{
    struct siwarp_ctx *ctx;
    const char *b;

    unsetenv("SIWARP_DEVICE");
    ASSERT_OK(siwarp_ctx_create_dev(NULL, &ctx));
    b = siwarp_ctx_backend(ctx);
    ASSERT(b && *b);
    siwarp_ctx_destroy(ctx);
    ASSERT_OK(siwarp_ctx_create_dev("auto", &ctx));
    ASSERT(!strcmp(siwarp_ctx_backend(ctx), b));
    siwarp_ctx_destroy(ctx);
    setenv("SIWARP_DEVICE", "auto", 1);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT(!strcmp(siwarp_ctx_backend(ctx), b));
    siwarp_ctx_destroy(ctx);
    if (strcmp(b, "soft"))
        SKIP("this machine has iWARP verbs device %s: no fallback to check", b);
}

/* Is a library whose file name contains name mapped into this process? */
static bool mapped(const char *name)
{
    char line[512];
    bool found = false;
    FILE *f = fopen("/proc/self/maps", "r");

    ASSERT(f != NULL);
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

/* A software context never loads rdma-core (hw_dl.h: it costs each MPI
 * rank milliseconds of start-up); looking for a verbs device does. */
TEST(rdma_core_loaded_only_for_a_verbs_device)
{
    struct siwarp_ctx *ctx;

    unsetenv("SIWARP_DEVICE");
    ASSERT(!mapped("libibverbs") && !mapped("librdmacm"));
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT(siwarp_progress(ctx) >= 0);
    siwarp_ctx_destroy(ctx);
    ASSERT(!mapped("libibverbs") && !mapped("librdmacm"));
    ASSERT_OK(siwarp_ctx_create_dev("auto", &ctx));   /* software here */
    siwarp_ctx_destroy(ctx);
#ifdef HAVE_VERBS
    ASSERT(mapped("libibverbs") && mapped("librdmacm"));
#endif
}

/* RFC 7306 is not offered by iWARP RNICs or siw (atomic_cap 0): the verbs
 * backend refuses atomics, Immediate Data and the atomic access right
 * before it touches the device, so a software QP and PD stand in for one. */
TEST(verbs_backend_refuses_rfc7306)
{
#ifdef HAVE_VERBS
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_mr *mr;
    static uint64_t word;
    struct siwarp_sge s = { &word, 8, 0 };

    ASSERT_OK(siwarp_ctx_create_dev("soft", &ctx));
    ASSERT_OK(siwarp_alloc_pd(ctx, &pd));
    ASSERT_OK(siwarp_create_cq(ctx, 8, &cq));
    struct siwarp_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .max_send_wr = 4,
                                     .max_recv_wr = 4, .max_sge = 1 };
    ASSERT_OK(siwarp_create_qp(pd, &a, &qp));
    for (int op = SIWARP_WR_ATOMIC_FETCH_ADD; op <= SIWARP_WR_IMM_DATA_SE; op++) {
        struct siwarp_send_wr wr = { .opcode = (enum siwarp_wr_opcode)op, .sg_list = &s,
                                     .num_sge = op <= SIWARP_WR_ATOMIC_MASKED_CMP_SWP };
        ASSERT_EQ(swp_hw_post_send(qp, &wr, NULL), -EOPNOTSUPP);
    }
    ASSERT_EQ(swp_hw_reg_mr(pd, &word, 8, SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_ATOMIC,
                            &mr), -EOPNOTSUPP);
    ASSERT_OK(siwarp_destroy_qp(qp));
    ASSERT_OK(siwarp_destroy_cq(cq));
    ASSERT_OK(siwarp_dealloc_pd(pd));
    siwarp_ctx_destroy(ctx);
#else
    SKIP("built without rdma-core: no verbs backend");
#endif
}

TEST(bad_arguments)
{
    struct siwarp_ctx *ctx;

    ASSERT_EQ(siwarp_ctx_create_dev("soft", NULL), -EINVAL);
    ASSERT_EQ(siwarp_ctx_create_dev("", &ctx), -EINVAL);
    ASSERT(siwarp_ctx_backend(NULL) == NULL);
}

SWP_TEST_MAIN()
