/*
 * hw_dl.c - loads rdma-core for the verbs backend on first use (hw_dl.h
 * says why and how).  The libraries stay loaded for the life of the
 * process: a provider may keep threads or state behind a closed device.
 */
#include <dlfcn.h>
#include <pthread.h>

#define SWP_HW_DL_NO_REDIRECT
#include "swp.h"
#include "hw_dl.h"

struct swp_rdma_core swp_rc;

static pthread_once_t swp_rc_once = PTHREAD_ONCE_INIT;
static int swp_rc_status;

/* the sonames Debian's libibverbs1 and librdmacm1 install */
static const char *const swp_rc_sonames[] = { "libibverbs.so.1", "librdmacm.so.1" };
enum { SWP_RC_ibverbs, SWP_RC_rdmacm };

static void swp_rdma_core_open(void)
{
    void *h[2];

    for (int i = 0; i < 2; i++) {
        h[i] = dlopen(swp_rc_sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (!h[i]) {
            SWP_DBG("verbs backend unavailable: %s", dlerror());
            swp_rc_status = -ENODEV;
            return;
        }
    }
#define SWP_RC_LOOKUP(lib, f)                                                   \
    if (!(*(void **)&swp_rc.f = dlsym(h[SWP_RC_##lib], #f))) {                  \
        SWP_DBG("verbs backend unavailable: %s has no %s", swp_rc_sonames[SWP_RC_##lib], #f); \
        swp_rc_status = -ENODEV;                                                \
        return;                                                                 \
    }
    SWP_RDMA_CORE_FUNCS(SWP_RC_LOOKUP)
#undef SWP_RC_LOOKUP
    swp_rc_status = 0;
}

int swp_rdma_core_load(void)
{
    pthread_once(&swp_rc_once, swp_rdma_core_open);
    return swp_rc_status;
}
