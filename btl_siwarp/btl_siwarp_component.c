/*
 * btl_siwarp_component.c - component open/close, init (interfaces,
 * listeners, modex) and progress.  Its MCA parameters are
 * btl_siwarp_params.c.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/argv.h"
#include "opal/util/if.h"
#include "opal/util/net.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/runtime/opal_params.h"

int mca_btl_siwarp_module_start_thread(mca_btl_siwarp_module_t *m);

static int siwarp_component_open(void);
static int siwarp_component_close(void);
static mca_btl_base_module_t **siwarp_component_init(int *num_btls, bool progress_threads,
                                                     bool mpi_threads);
static int siwarp_component_progress(void);

mca_btl_siwarp_component_t mca_btl_siwarp_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("siwarp"),
            .mca_open_component = siwarp_component_open,
            .mca_close_component = siwarp_component_close,
            .mca_register_component_params = mca_btl_siwarp_params_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = siwarp_component_init,
        .btl_progress = siwarp_component_progress,
    },
};

/* Our help file is not in Open MPI's pkgdatadir: add where it is installed,
 * the directory of this .so (and its parent, for the build tree). */
static void add_help_dirs(void)
{
    Dl_info info;

#ifdef SIWARP_HELP_DIR
    opal_show_help_add_dir(SIWARP_HELP_DIR);
#endif
#ifdef SIWARP_SRC_HELP_DIR
    opal_show_help_add_dir(SIWARP_SRC_HELP_DIR);
#endif
    if (dladdr((void *) &mca_btl_siwarp_component, &info) && info.dli_fname) {
        char *a = strdup(info.dli_fname), *b;
        if (a) {
            b = dirname(a);
            opal_show_help_add_dir(b);
            b = strdup(b);
            if (b) {
                opal_show_help_add_dir(dirname(b));
                free(b);
            }
            free(a);
        }
    }
}

static int siwarp_component_open(void)
{
    mca_btl_siwarp_component.module = NULL;
    add_help_dirs();
    return OPAL_SUCCESS;
}

static int siwarp_component_close(void)
{
    mca_btl_siwarp_auth_fini();
    return OPAL_SUCCESS;
}

/* ---- interfaces and listeners ------------------------------------------------- */

/* Does one interface address match an entry of btl_siwarp_if_include /
 * _exclude: an interface name, or a CIDR network (IPv4 or IPv6) compared
 * with this very address.  (opal_ifmatches compares a CIDR with the first
 * address of the device only, which misses IPv4 networks on a device whose
 * IPv6 address is listed first, and wants a kernel index.) */
static int if_entry_matches(const char *entry, const char *name,
                            const struct sockaddr_storage *ss)
{
    const char *slash = strchr(entry, '/');
    uint8_t net[16];
    const uint8_t *addr;
    char buf[64];
    int family, bits, max;

    if (NULL == slash) {
        return 0 == strcmp(entry, name);
    }
    if ((size_t) (slash - entry) >= sizeof(buf)) {
        return 0;
    }
    memcpy(buf, entry, (size_t) (slash - entry));
    buf[slash - entry] = '\0';
    family = strchr(buf, ':') ? AF_INET6 : AF_INET;
    if (family != ss->ss_family || 1 != inet_pton(family, buf, net)) {
        return 0;
    }
    max = AF_INET == family ? 32 : 128;
    bits = atoi(slash + 1);
    if (bits < 0 || bits > max) {
        return 0;
    }
    addr = AF_INET == family
        ? (const uint8_t *) &((const struct sockaddr_in *) ss)->sin_addr
        : (const uint8_t *) &((const struct sockaddr_in6 *) ss)->sin6_addr;
    return mca_btl_siwarp_prefix_match(addr, net, bits);
}

static int if_list_matches(char **list, const char *name, const struct sockaddr_storage *ss)
{
    for (int i = 0; list && list[i]; i++) {
        if (if_entry_matches(list[i], name, ss)) {
            return 1;
        }
    }
    return 0;
}

static int if_selected(const char *name, const struct sockaddr_storage *ss, char **include,
                       char **exclude)
{
    if (include) {
        return if_list_matches(include, name, ss);
    }
    if (exclude) {
        return !if_list_matches(exclude, name, ss);
    }
    return 1;
}

static int set_port(struct sockaddr_storage *ss, int port)
{
    if (AF_INET == ss->ss_family) {
        ((struct sockaddr_in *) ss)->sin_port = htons((uint16_t) port);
        return sizeof(struct sockaddr_in);
    }
    ((struct sockaddr_in6 *) ss)->sin6_port = htons((uint16_t) port);
    return sizeof(struct sockaddr_in6);
}

static uint16_t get_port_be(const struct sockaddr_storage *ss)
{
    return AF_INET == ss->ss_family ? ((const struct sockaddr_in *) ss)->sin_port
                                    : ((const struct sockaddr_in6 *) ss)->sin6_port;
}

/* Returns 0, or the error of the last port tried. */
static int tcp_listen_on(struct sockaddr_storage *ss, int *fd_out)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int tries = c->port_min ? c->port_range : 1;
    int rc = -EADDRINUSE;

    for (int i = 0; i < tries; i++) {
        int one = 1;
        int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        socklen_t len = (socklen_t) set_port(ss, c->port_min ? c->port_min + i : 0);
        if (fd < 0) {
            return -errno;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (AF_INET6 == ss->ss_family) {
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        }
        if (0 == bind(fd, (struct sockaddr *) ss, len) && 0 == listen(fd, 128)) {
            len = sizeof(*ss);
            getsockname(fd, (struct sockaddr *) ss, &len);
            *fd_out = fd;
            return 0;
        }
        rc = -errno;
        close(fd);
    }
    return rc;
}

/* A selected interface got no listener: say which, on which ports and
 * why, since the job otherwise only learns that no BTL reaches the peer
 * ("BTLs attempted: self").  With btl_siwarp_port_min_v4 set, the usual
 * cause is a range that other sockets (often the kernel's ephemeral ports)
 * already hold. */
static void listen_failed(const char *ifname, const struct sockaddr_storage *ss,
                          const char *what, int err)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    char ports[96];

    if (c->port_min) {
        snprintf(ports, sizeof(ports), "%d-%d (btl_siwarp_port_min_v4, _port_range_v4)",
                 c->port_min, c->port_min + c->port_range - 1);
    } else {
        snprintf(ports, sizeof(ports), "any (the kernel's choice)");
    }
    /* also as a verbose line: ORTE's relay of help messages loses one
     * now and then ("Data unpack would read past end of buffer") */
    BTL_VERBOSE(("no %s listener on %s, ports %s: %s", what, ifname, ports, strerror(-err)));
    opal_show_help("help-mpi-btl-siwarp.txt", "no listener", true,
                   opal_process_info.nodename ? opal_process_info.nodename : "?", ifname,
                   opal_net_get_hostname((const struct sockaddr *) ss), what, ports,
                   strerror(-err));
}

static int iwarp_listen_on(mca_btl_siwarp_module_t *m, struct sockaddr_storage *ss,
                           struct siwarp_listener **l)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    struct siwarp_conn_param p;
    int tries = c->port_min ? c->port_range : 1;
    int rc = -EADDRINUSE;

    mca_btl_siwarp_conn_param(&p);
    for (int i = 0; i < tries; i++) {
        socklen_t len = (socklen_t) set_port(ss, c->port_min ? c->port_min + i : 0);
        rc = siwarp_listen(m->ctx, (struct sockaddr *) ss, len, &p, l);
        if (0 == rc) {
            siwarp_listener_addr(*l, ss);
            return 0;
        }
    }
    return rc;
}

/* listen[num_listen]'s network (for the order of a peer's addresses) and
 * how near its interface is to this rank's cores. */
static void if_network(mca_btl_siwarp_module_t *m, int idx, const char *name,
                       const mca_btl_siwarp_modex_addr_t *x)
{
    mca_btl_siwarp_ifnear_net_t *n = &m->nets[m->num_listen];
    uint32_t prefix = 0;

    snprintf(m->listen[m->num_listen].name, sizeof(m->listen[0].name), "%s", name);
    n->family = x->family;
    memcpy(n->addr, x->addr, sizeof(n->addr));
    /* opal keeps the mask as a prefix length; without one the address
     * holds only itself */
    n->prefix = OPAL_SUCCESS == opal_ifindextomask(idx, &prefix, sizeof(prefix))
                    ? (int) prefix : (4 == x->family ? 32 : 128);
    n->near = -1;
#ifdef SIWARP_HAVE_HWLOC
    if (mca_btl_siwarp_component.if_near) {
        n->near = mca_btl_siwarp_topo_if_near(name);
    }
#endif
}

/* Publish the interfaces nearest to this rank's cores first: a peer tries
 * our addresses in the order we publish them (btl_siwarp_ifnear.c). */
static void order_by_nearness(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_listen_t listen[MCA_BTL_SIWARP_MAX_ADDRS];
    mca_btl_siwarp_modex_addr_t modex[MCA_BTL_SIWARP_MAX_ADDRS];
    mca_btl_siwarp_ifnear_net_t nets[MCA_BTL_SIWARP_MAX_ADDRS];
    int key[MCA_BTL_SIWARP_MAX_ADDRS] = { 0 }, perm[MCA_BTL_SIWARP_MAX_ADDRS];
    int n = m->num_listen;

    for (int i = 0; i < n; i++) {
        key[i] = m->nets[i].near < 0 ? 0 : m->nets[i].near;    /* unknown: as the machine */
    }
    mca_btl_siwarp_ifnear_sort(key, n, perm);
    memcpy(listen, m->listen, sizeof(listen));
    memcpy(modex, m->modex, sizeof(modex));
    memcpy(nets, m->nets, sizeof(nets));
    for (int i = 0; i < n; i++) {
        m->listen[i] = listen[perm[i]];
        m->modex[i] = modex[perm[i]];
        m->nets[i] = nets[perm[i]];
        BTL_VERBOSE(("interface %d: %s (%s/%d), nearness %d%s", i, m->listen[i].name,
                     opal_net_get_hostname((struct sockaddr *) &m->listen[i].addr),
                     m->nets[i].prefix, m->nets[i].near,
                     m->nets[i].near < 0 ? " (not in the topology)" : ""));
    }
}

static int setup_interfaces(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    char **include = NULL, **exclude = NULL;
    int rc = OPAL_SUCCESS;

    if (c->if_include && c->if_include[0]) {
        include = opal_argv_split(c->if_include, ',');
    } else if (c->if_exclude && c->if_exclude[0]) {
        exclude = opal_argv_split(c->if_exclude, ',');
    }
    for (int idx = opal_ifbegin(); idx >= 0 && m->num_listen < MCA_BTL_SIWARP_MAX_ADDRS;
         idx = opal_ifnext(idx)) {
        struct sockaddr_storage ss;
        mca_btl_siwarp_listen_t *L = &m->listen[m->num_listen];
        mca_btl_siwarp_modex_addr_t *x = &m->modex[m->num_listen];
        char name[IF_NAMESIZE] = "";

        if (OPAL_SUCCESS != opal_ifindextoaddr(idx, (struct sockaddr *) &ss, sizeof(ss))) {
            continue;
        }
        if (AF_INET != ss.ss_family && AF_INET6 != ss.ss_family) {
            continue;
        }
        if (AF_INET6 == ss.ss_family &&
            IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *) &ss)->sin6_addr)) {
            continue;       /* would need a scope id per peer */
        }
        opal_ifindextoname(idx, name, sizeof(name));
        if (!if_selected(name, &ss, include, exclude)) {
            continue;
        }
        memset(L, 0, sizeof(*L));
        memset(x, 0, sizeof(*x));
        L->addr = ss;
        L->tcp_fd = -1;
        L->listener = NULL;
        if (c->mpa) {
            struct sockaddr_storage s2 = ss;
            int r = iwarp_listen_on(m, &s2, &L->listener);
            if (r < 0) {
                listen_failed(name, &ss, "iWARP (MPA)", r);
                L->listener = NULL;
            } else {
                x->flags |= MCA_BTL_SIWARP_ADDR_F_IWARP;
                if (0 == strcmp(siwarp_ctx_backend(m->ctx), "soft")) {
                    x->flags |= MCA_BTL_SIWARP_ADDR_F_SOFT;
                }
                x->iwarp_port = get_port_be(&s2);
            }
        }
        int r = tcp_listen_on(&L->addr, &L->tcp_fd);
        if (r < 0) {
            listen_failed(name, &ss, "TCP fallback", r);
            if (L->listener) {
                siwarp_listener_destroy(L->listener);
            }
            continue;
        }
        x->tcp_port = get_port_be(&L->addr);
        x->loopback = opal_ifisloopback(idx) ? 1 : 0;
        if (AF_INET == ss.ss_family) {
            x->family = 4;
            memcpy(x->addr, &((struct sockaddr_in *) &ss)->sin_addr, 4);
        } else {
            x->family = 6;
            memcpy(x->addr, &((struct sockaddr_in6 *) &ss)->sin6_addr, 16);
        }
        if_network(m, idx, name, x);
        BTL_VERBOSE(("using %s (%s), iwarp port %u, tcp port %u", name,
                     opal_net_get_hostname((struct sockaddr *) &ss), ntohs(x->iwarp_port),
                     ntohs(x->tcp_port)));
        m->num_listen++;
    }
    opal_argv_free(include);
    opal_argv_free(exclude);
    if (c->if_near) {
        order_by_nearness(m);
    }
    if (0 == m->num_listen) {
        rc = OPAL_ERR_NOT_AVAILABLE;
    }
    return rc;
}

/* ---- init ------------------------------------------------------------------------ */

static int module_init(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int rc;

    memcpy(&m->super, &mca_btl_siwarp_param_module, sizeof(m->super));
    OBJ_CONSTRUCT(&m->endpoints, opal_list_t);
    OBJ_CONSTRUCT(&m->active, opal_list_t);
    OBJ_CONSTRUCT(&m->graveyard, opal_list_t);
    OBJ_CONSTRUCT(&m->eager_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&m->rdma_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&m->lock, opal_recursive_mutex_t);
    m->frag_size = sizeof(mca_btl_siwarp_hdr_t) + m->super.btl_max_send_size;
    if (0 != mca_btl_siwarp_eptab_init(&m->procs)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    rc = siwarp_ctx_create(&m->ctx);
    if (rc < 0) {
        BTL_VERBOSE(("siwarp_ctx_create: %s", strerror(-rc)));
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    /* ob1 then hands contiguous send data by pointer (prepare_src) */
    if (0 == strcmp(siwarp_ctx_backend(m->ctx), "soft")) {
        m->inplace = 1;
        (void) siwarp_ctx_set_idle_wait(m->ctx, (uint32_t) c->idle_spin_us,
                                        (uint32_t) (c->idle_wait_us > 0 ? c->idle_wait_us : 0));
        (void) siwarp_ctx_set_rx_stall(m->ctx, c->stall_timeout);
        (void) siwarp_ctx_set_tcp_congestion(m->ctx, c->tcp_congestion ? c->tcp_congestion : "");
        m->super.btl_flags |= MCA_BTL_FLAGS_SEND_INPLACE;
    }
    rc = siwarp_alloc_pd(m->ctx, &m->pd);
    if (rc < 0) {
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    rc = siwarp_create_cq(m->ctx, 4 * c->sq_depth + 4096, &m->cq);
    if (rc < 0) {
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    rc = mca_btl_siwarp_rcache_init(m);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = opal_free_list_init(&m->eager_frags, sizeof(mca_btl_siwarp_frag_t),
                             opal_cache_line_size, OBJ_CLASS(mca_btl_siwarp_frag_t),
                             m->frag_size, opal_cache_line_size, c->free_list_num,
                             c->free_list_max, c->free_list_inc, NULL, 0, m->rcache,
                             mca_btl_siwarp_frag_init, &m->eager_frags);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = opal_free_list_init(&m->rdma_frags, sizeof(mca_btl_siwarp_frag_t),
                             opal_cache_line_size, OBJ_CLASS(mca_btl_siwarp_frag_t), 0, 0,
                             64, -1, 64, NULL, 0, NULL, NULL, NULL);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = mca_btl_siwarp_srq_init(m);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return setup_interfaces(m);
}

static mca_btl_base_module_t **siwarp_component_init(int *num_btls, bool progress_threads,
                                                     bool mpi_threads)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    mca_btl_siwarp_module_t *m;
    mca_btl_base_module_t **btls;
    int rc;
    (void) progress_threads;

    *num_btls = 0;
    if (OPAL_SUCCESS != mca_btl_siwarp_params_verify() ||
        OPAL_SUCCESS != mca_btl_base_param_verify(&mca_btl_siwarp_param_module)) {
        return NULL;
    }
    m = calloc(1, sizeof(*m));
    btls = malloc(sizeof(*btls));
    if (NULL == m || NULL == btls) {
        free(m);
        free(btls);
        return NULL;
    }
    rc = module_init(m);
    if (OPAL_SUCCESS != rc) {
        BTL_VERBOSE(("module init failed: %d", rc));
        m->super.btl_finalize(&m->super);
        free(btls);
        return NULL;
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &c->super.btl_version, m->modex,
                    (size_t) m->num_listen * sizeof(m->modex[0]));
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_siwarp_stack_publish();
    }
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_siwarp_auth_init();     /* the secret: through the modex only */
    }
    if (OPAL_SUCCESS != rc) {
        m->super.btl_finalize(&m->super);
        free(btls);
        return NULL;
    }
    /* Without MPI_THREAD_MULTIPLE and without our progress thread every
     * call into libsiwarp comes from whichever thread is in MPI, one at a
     * time (the rcache defers deregistrations that free() triggers to the
     * next registration), so the context needs no lock: that saves 3-4
     * lock/unlock pairs a ping-pong hop. */
    if (!mpi_threads && !(c->progress_thread && c->mpa)) {
        rc = siwarp_ctx_set_single_thread(m->ctx, true);
        BTL_VERBOSE(("libsiwarp context: %s", 0 == rc ? "one thread at a time, no locks"
                                                      : "thread-safe (could not set single-thread)"));
        /* then small Sends can come to ob1 straight from where libsiwarp
         * read them (a hardware context says -EOPNOTSUPP: its receives
         * land in our buffers anyway) */
        if (0 == rc && c->rx_inline && NULL != m->cq &&
            NULL != (m->rx_align = malloc(m->frag_size))) {
            rc = siwarp_cq_set_recv_handler(m->cq, mca_btl_siwarp_recv_handler, m,
                                            (uint32_t) c->rx_inline);
            BTL_VERBOSE(("inline receives: %s", 0 == rc ? "on" : strerror(-rc)));
        }
    } else {
        BTL_VERBOSE(("libsiwarp context: thread-safe (%s)",
                     mpi_threads ? "MPI_THREAD_MULTIPLE" : "btl_siwarp_progress_thread"));
    }
    if (c->progress_thread && c->mpa &&
        OPAL_SUCCESS != mca_btl_siwarp_module_start_thread(m)) {
        BTL_ERROR(("siwarp: could not start the progress thread; continuing without"));
    }
    c->module = m;
    btls[0] = &m->super;
    *num_btls = 1;
    return btls;
}

/* ---- progress ------------------------------------------------------------------- */

/* The back-off of a shared core.  Open MPI decides that a node is
 * oversubscribed (more ranks than slots) and then sets mpi_yield_when_idle:
 * opal_progress calls sched_yield() after every pass that found nothing,
 * which on EEVDF puts the caller behind the other runnable tasks of its
 * core.  That is all btl tcp does, and by default all siwarp does.  With
 * btl_siwarp_idle_quiet a progress call that moved nothing for
 * btl_siwarp_idle_spin_us sleeps in epoll instead, up to
 * btl_siwarp_idle_wait_us (-1: MCA_BTL_SIWARP_OVERSUB_WAIT_US), and the
 * socket its message arrives on wakes it.  Off by default: on this
 * host's virtual cores a core whose ranks all sleep halts, and waking it
 * cost more than the spinning did (8 ranks on 2 cores: allreduce 2.35x
 * btl tcp's time with it, 0.98x without; contrib/PERFORMANCE.md).  Open
 * MPI sets the flag after the BTLs are initialized, so the first progress
 * call that sees it sets the context up. */
void mca_btl_siwarp_oversub_backoff(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int rc;

    m->oversub_seen = 1;
    if (0 == c->idle_quiet || NULL == m->ctx || !m->inplace) {
        return;             /* off, or a hardware context */
    }
    rc = siwarp_ctx_set_idle_wait(m->ctx, (uint32_t) c->idle_spin_us,
                                  (uint32_t) (c->idle_wait_us >= 0 ? c->idle_wait_us
                                              : MCA_BTL_SIWARP_OVERSUB_WAIT_US));
    if (0 == rc) {
        rc = siwarp_ctx_set_idle_quiet(m->ctx, true);
    }
    BTL_VERBOSE(("oversubscribed: progress sleeps after %d us idle: %s", c->idle_spin_us,
                 0 == rc ? "on" : strerror(-rc)));
}

/* Incoming connections: iWARP requests that the CQ poll just read off
 * the listeners' sockets, and the plain-TCP fallback listeners. */
int mca_btl_siwarp_progress_listeners(mca_btl_siwarp_module_t *m, int look_tcp)
{
    int count = 0;

    for (int i = 0; i < m->num_listen; i++) {
        struct siwarp_conn_req *req;
        if (m->listen[i].listener) {
            while (0 == siwarp_take_conn_request(m->listen[i].listener, &req)) {
                mca_btl_siwarp_ep_handle_conn_req(m, req);
                count++;
            }
        }
        if (look_tcp && m->listen[i].tcp_fd >= 0) {
            /* accept4() allocates a socket even when it then says EAGAIN
             * (Linux): ask poll() first, which costs a tenth of that */
            struct pollfd pf = { .fd = m->listen[i].tcp_fd, .events = POLLIN };
            if (poll(&pf, 1, 0) > 0) {
                mca_btl_siwarp_tcp_accept(m, m->listen[i].tcp_fd);
                count++;
            }
        }
    }
    return count;
}

SWP_HOT
int mca_btl_siwarp_progress_module(mca_btl_siwarp_module_t *m)
{
    struct siwarp_wc wc[16];
    int count = 0, n, look, look_tcp;

    OPAL_THREAD_LOCK(&m->lock);
    /* The CQ poll makes the one pass over the sockets that this call
     * makes: it also reads connection requests off the iWARP listeners,
     * which progress_listeners then takes without a second pass. */
    if (m->cq) {
        while ((n = siwarp_poll_cq(m->cq, 16, wc)) > 0) {
            for (int i = 0; i < n; i++) {
                count += mca_btl_siwarp_ep_handle_wc(m, &wc[i]);
            }
            if (n < 16) {
                break;
            }
        }
    }
    /* Listeners are looked at every 128th call: each look costs a poll()
     * whose answer is almost always "nothing" (about a microsecond here),
     * and ob1 calls this in a tight loop while it waits for a message: a
     * look that lands between a message and its reply delays the reply.
     * A connection waits at most 128 polls -- unless the node is
     * oversubscribed: then opal_progress yields the core after every call
     * that found nothing, a call can last a scheduler time slice, and 128
     * of them kept peers' connections waiting for hundreds of milliseconds
     * (8 ranks on 2 cores across veth: time to first message 1.3x btl
     * tcp's).  Look every call then for iWARP requests, which costs
     * nothing now, and every millisecond for plain TCP: a poll() every
     * call was 1,000 of the 4,700 syscalls 8 ranks made on the way to
     * their first message, and only a peer that cannot speak MPA uses
     * that listener. */
    look = 0 == (m->polls++ & 127);
    look_tcp = look;
    /* While a connection is being set up, its peer's request (or the
     * other peers' of an all-to-all start) is due: look every call.  The
     * iWARP look is a queue pop; the hot path of a connected job never
     * pays it. */
    look = look || m->connecting;
    if (opal_progress_yield_when_idle) {
        if (OPAL_UNLIKELY(!m->oversub_seen)) {
            mca_btl_siwarp_oversub_backoff(m);
        }
        uint64_t now = mca_btl_siwarp_now_coarse_ms();
        look = 1;
        look_tcp = look_tcp || now != m->tcp_looked_ms;
        m->tcp_looked_ms = now;
    }
    if (look) {
        count += mca_btl_siwarp_progress_listeners(m, look_tcp);
    }
    if (m->tcp_npending) {
        count += mca_btl_siwarp_tcp_accept_progress(m);
    }
    m->connecting = 0;
    if (__atomic_load_n(&m->auth_kicked, __ATOMIC_RELAXED)) {
        /* gets and puts held until a peer's proof (datapath.c iwarp_post):
         * only the endpoints kicked, not every one we know */
        mca_btl_siwarp_auth_kick_drain(m);
    }
    {
        opal_list_item_t *it = opal_list_get_first(&m->active);
        while (it != opal_list_get_end(&m->active)) {
            opal_list_item_t *nx = opal_list_get_next(it);
            mca_btl_siwarp_endpoint_t *e = (mca_btl_siwarp_endpoint_t *)
                ((char *) it - offsetof(mca_btl_siwarp_endpoint_t, active_item));
            if (MCA_BTL_SIWARP_EP_CONNECTING == e->state) {
                count += mca_btl_siwarp_ep_progress_connect(e);
                m->connecting |= MCA_BTL_SIWARP_EP_CONNECTING == e->state;
            }
            if (MCA_BTL_SIWARP_EP_CONNECTED == e->state &&
                MCA_BTL_SIWARP_TR_TCP == e->transport) {
                count += mca_btl_siwarp_tcp_progress(e);
            } else if (MCA_BTL_SIWARP_EP_CONNECTING != e->state) {
                opal_list_remove_item(&m->active, it);
                e->on_active = 0;
            }
            it = nx;
        }
    }
    /* Nothing posted during this call waits for the next one: ob1 may have
     * completed an MPI request on it (a receive whose FIN is among them),
     * and the process may not call MPI again for a long time, or block
     * outside MPI until the peer has it (the runtime's fence or connect).
     * What this call posted still leaves in one sendmsg per peer. */
    if (m->ctx) {
        (void) siwarp_flush_held(m->ctx);
    }
    if (m->tcp_held) {
        mca_btl_siwarp_tcp_flush_held(m);
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    return count;
}

SWP_HOT
static int siwarp_component_progress(void)
{
    mca_btl_siwarp_module_t *m = mca_btl_siwarp_component.module;
    return m ? mca_btl_siwarp_progress_module(m) : 0;
}
