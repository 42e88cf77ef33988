/*
 * uct-idle-progress.c - what one uct_worker_progress call costs when
 * nothing arrives, as the eps of an iface grow.  uct_siwarp's progress used
 * to walk every ep (merges, connects, pending requests, failures) and every
 * connection on each call; now it walks them only while one of them needs
 * it (uct_siwarp_iface_progress, eps_dirty / conns_dirty).  A UCP worker
 * of a job with thousands of peers calls it in every wait loop.
 *
 * Two ifaces on "lo" in this process; N eps from A to B, each on its own
 * connection (an ep takes a connection no other ep sends on), one AM each
 * so that every connection is up; then 3 x 200,000 idle progress calls.
 *
 *   cc -O2 -o uct-idle-progress contrib/probes/uct-idle-progress.c -luct -lucs
 *   LD_PRELOAD=uct_siwarp/.libs/libuct_siwarp.so.0 UCX_SIWARP_PROGRESS_THREAD=n \
 *       ./uct-idle-progress N          (N eps; 2N sockets plus listeners)
 */
#include <uct/api/uct.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uct_iface_h iface;
    void *dev_addr, *iface_addr;
} side_t;

static uct_worker_h worker;

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static ucs_status_t count_am(void *arg, void *data, size_t length, unsigned flags)
{
    (void)data;
    (void)length;
    (void)flags;
    (*(int*)arg)++;
    return UCS_OK;
}

static int open_side(uct_md_h md, uct_iface_config_t *cfg, side_t *s)
{
    uct_iface_params_t p;
    uct_iface_attr_t a;

    memset(&p, 0, sizeof(p));
    p.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    p.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name  = "siwarp";
    p.mode.device.dev_name = "lo";
    if (uct_iface_open(md, worker, &p, cfg, &s->iface) != UCS_OK ||
        uct_iface_query(s->iface, &a) != UCS_OK) {
        return -1;
    }
    s->dev_addr   = malloc(a.device_addr_len);
    s->iface_addr = malloc(a.iface_addr_len);
    if (s->dev_addr == NULL || s->iface_addr == NULL ||
        uct_iface_get_device_address(s->iface, s->dev_addr) != UCS_OK ||
        uct_iface_get_address(s->iface, s->iface_addr) != UCS_OK) {
        return -1;
    }
    uct_iface_progress_enable(s->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return 0;
}

int main(int argc, char **argv)
{
    int n = (argc > 1) ? atoi(argv[1]) : 64, got = 0;
    uct_component_h *comps, comp = NULL;
    ucs_async_context_t *async;
    uct_md_config_t *mcfg;
    uct_iface_config_t *icfg;
    uct_md_h md;
    uct_ep_h *eps;
    unsigned ncomps;
    side_t a, b;
    double end;

    if (n < 1 || uct_query_components(&comps, &ncomps) != UCS_OK) {
        return 1;
    }
    for (unsigned i = 0; i < ncomps; i++) {
        uct_component_attr_t ca = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };

        if (uct_component_query(comps[i], &ca) == UCS_OK && !strcmp(ca.name, "siwarp")) {
            comp = comps[i];
        }
    }
    if (comp == NULL) {
        fprintf(stderr, "no siwarp UCT component: LD_PRELOAD the module\n");
        return 1;
    }
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK ||
        uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK ||
        uct_md_config_read(comp, NULL, NULL, &mcfg) != UCS_OK ||
        uct_md_open(comp, "siwarp", mcfg, &md) != UCS_OK ||
        uct_md_iface_config_read(md, "siwarp", NULL, NULL, &icfg) != UCS_OK ||
        open_side(md, icfg, &a) < 0 || open_side(md, icfg, &b) < 0) {
        fprintf(stderr, "opening the md and two ifaces on lo failed\n");
        return 1;
    }
    uct_iface_set_am_handler(b.iface, 3, count_am, &got, 0);
    eps = calloc((size_t)n, sizeof(*eps));
    for (int i = 0; i < n; i++) {
        uct_ep_params_t p;

        memset(&p, 0, sizeof(p));
        p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                       UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface      = a.iface;
        p.dev_addr   = b.dev_addr;
        p.iface_addr = b.iface_addr;
        if (eps == NULL || uct_ep_create(&p, &eps[i]) != UCS_OK) {
            fprintf(stderr, "ep %d: create failed\n", i);
            return 1;
        }
    }
    end = now() + 30;
    for (int i = 0; i < n; i++) {
        while (uct_ep_am_short(eps[i], 3, (uint64_t)i, NULL, 0) == UCS_ERR_NO_RESOURCE &&
               now() < end) {
            uct_worker_progress(worker);
        }
    }
    while (got < n && now() < end) {
        uct_worker_progress(worker);
    }
    if (got < n) {
        fprintf(stderr, "only %d of %d AMs arrived\n", got, n);
        return 1;
    }
    for (int k = 0; k < 3; k++) {
        double t0 = now();

        for (int i = 0; i < 200000; i++) {
            uct_worker_progress(worker);
        }
        printf("%d eps: %.1f ns per idle progress call\n", n, (now() - t0) / 200000 * 1e9);
    }
    return 0;
}
