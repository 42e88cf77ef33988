/*
 * backend.c - which backend a context uses: the software iWARP stack, or a
 * verbs device through rdma-core (hw_verbs.c, hw_cm.c; hw_stub.c when
 * built without it).  siwarp_ctx_create takes its default from the
 * SIWARP_DEVICE environment variable (unset: software, as always).
 */
#include <stdlib.h>
#include <string.h>

#include "swp.h"

/* set while siwarp_ctx_create_dev builds a software context through
 * siwarp_ctx_create, so SIWARP_DEVICE does not send it back here */
static __thread int swp_in_create_dev;

const char *swp_ctx_env_dev(void)
{
    const char *d = getenv("SIWARP_DEVICE");

    if (swp_in_create_dev || !d || !*d || !strcmp(d, "soft"))
        return NULL;
    return d;
}

int siwarp_ctx_create_dev(const char *dev, struct siwarp_ctx **ctx)
{
    bool automatic = !dev || !strcmp(dev, "auto");
    int rc;

    if (!ctx || (dev && !*dev))
        return -EINVAL;
    swp_debug = getenv("SIWARP_DEBUG") != NULL;
    if (!dev || strcmp(dev, "soft")) {
        rc = swp_hw_ctx_create(automatic ? NULL : dev, ctx);
        if (rc == 0 || !automatic)
            return rc;
        SWP_DBG("no iWARP verbs device: software backend");
    }
    swp_in_create_dev = 1;
    rc = siwarp_ctx_create(ctx);
    swp_in_create_dev = 0;
    return rc;
}

const char *siwarp_ctx_backend(const struct siwarp_ctx *ctx)
{
    if (!ctx)
        return NULL;
    return ctx->hw ? swp_hw_ctx_name(ctx) : "soft";
}
