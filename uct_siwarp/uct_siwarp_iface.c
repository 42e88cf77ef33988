/*
 * uct_siwarp_iface.c - the siwarp interface: its configuration table (the
 * UCX_SIWARP_* variables), devices (the host's IPv4 interfaces, as UCX's
 * tcp transport lists them), capabilities, progress and event fd.
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <ifaddrs.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <unistd.h>

#define UCT_SIWARP_MAX_HDR   128     /* am_zcopy header, copied into the op */
#define UCT_SIWARP_MAX_ZCOPY (1ul << 30)
#define UCT_SIWARP_POLL      16

static ucs_config_field_t uct_siwarp_iface_config_table[] = {
    {"", "MAX_NUM_EPS=inf", NULL, ucs_offsetof(uct_siwarp_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    /* 16 KiB of payload and 128 octets for UCP's and our headers, x 128
     * buffers (2 MiB an accepted connection, as 8 KiB x 256 before): a 16
     * KiB message is one Send instead of three, each a syscall --
     * ucx_perftest tag_bw 16 KiB 632 -> 1358 MB/s, tag_lat 16 KiB 20.0 ->
     * 10.0 us, 8 B-1 MiB otherwise unchanged (alternating rounds, medians,
     * contrib/PERFORMANCE.md) */
    {"SEG_SIZE", "16512",
     "Largest active message (short, bcopy, zcopy with its header), and the size\n"
     "of each receive buffer an accepted connection posts",
     ucs_offsetof(uct_siwarp_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"RX_QUEUE_LEN", "128",
     "Receive buffers posted per accepted connection: the active messages a peer\n"
     "may have in flight (iWARP has no receiver-not-ready retry: RFC 5041 7.2)",
     ucs_offsetof(uct_siwarp_iface_config_t, rx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"TX_QUEUE_LEN", "256",
     "Send queue depth of each endpoint's queue pair",
     ucs_offsetof(uct_siwarp_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"MAX_IOV", "8",
     "Largest iovcnt of a zero-copy operation",
     ucs_offsetof(uct_siwarp_iface_config_t, max_iov), UCS_CONFIG_TYPE_UINT},

    {"ATOMICS", "y",
     "Offer RFC 7306 atomics (a siwarp peer on the software backend executes them)",
     ucs_offsetof(uct_siwarp_iface_config_t, atomics), UCS_CONFIG_TYPE_BOOL},

    {"PROGRESS_THREAD", "y",
     "Run libsiwarp's progress thread, which places puts, answers gets and executes\n"
     "atomics of remote peers while this process computes outside UCX (software\n"
     "backend; it sleeps while the process itself progresses the worker)",
     ucs_offsetof(uct_siwarp_iface_config_t, progress_thread), UCS_CONFIG_TYPE_BOOL},

    /* libsiwarp's send coalescing: the second and later sends posted between
     * two progress calls go out in one sendmsg, up to this many (on loopback
     * a sendmsg also runs the receiver's TCP input, so one per message is
     * mostly overhead): ucx_perftest tag_bw 16 KiB 1.5-1.9 -> 3.7-4.1 GB/s,
     * tag_lat unchanged (contrib/PERFORMANCE.md).  A held send waits for
     * the next progress call; only the progress thread bounds that wait
     * for a process that leaves UCX to compute, hence auto. */
    {"TX_COALESCE", "auto",
     "Sends posted between two progress calls that may wait to leave in one\n"
     "sendmsg (0: each leaves at once; auto: " UCS_PP_MAKE_STRING(UCT_SIWARP_TX_COALESCE_AUTO)
     " with the progress thread, else 0).\n"
     "A held send leaves at the next progress call of the worker or of the\n"
     "progress thread, which runs once the process has been away 200 us",
     ucs_offsetof(uct_siwarp_iface_config_t, tx_coalesce), UCS_CONFIG_TYPE_ULUNITS},

    /* RFC 5044 7.1: CRC is used when either end asks, so both must say n.
     * Off on loopback, libsiwarp's 1 MiB Write stream ran 4.7-5.1 GB/s
     * with CRC against 6.4 without (contrib/PERFORMANCE.md, CRC) */
    {"CRC", "y",
     "Ask for MPA's CRC32c on each connection (it is used when either end asks).\n"
     "n on every process of a job whose links already protect the data (loopback,\n"
     "a fabric with its own link CRC) saves its cost on large messages",
     ucs_offsetof(uct_siwarp_iface_config_t, crc), UCS_CONFIG_TYPE_BOOL},

    {"LLP_TIMEOUT", "30s",
     "A connected peer that stops answering fails its endpoint after this long\n"
     "(TCP keepalive and TCP_USER_TIMEOUT, siwarp_conn_param.llp_timeout_ms)",
     ucs_offsetof(uct_siwarp_iface_config_t, llp_timeout), UCS_CONFIG_TYPE_TIME},

    {"STALL_TIMEOUT", "300s",
     "A peer whose TCP connection lives but that stopped inside a message it\n"
     "began, or that connected and still owes its first message (the proof of\n"
     "the iface key), is cut off after this long.  A process that computes\n"
     "outside UCX right after its first send to a peer looks the same: keep it\n"
     "above the application's longest pause between UCX calls (as the BTL's\n"
     "btl_siwarp_stall_timeout)",
     ucs_offsetof(uct_siwarp_iface_config_t, stall_timeout), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

/* ---- work request bookkeeping ------------------------------------------ */

uct_siwarp_op_t *uct_siwarp_op_get(uct_siwarp_iface_t *iface, uct_siwarp_ep_t *ep,
                                   unsigned kind, uct_completion_t *comp)
{
    uct_siwarp_op_t *op       = iface->free_ops;
    uct_siwarp_pool_t *pool   = NULL;

    if (op != NULL) {
        iface->free_ops = op->next;
    } else {
        op = ucs_malloc(iface->op_size, "uct_siwarp_op");
        if (op == NULL) {
            return NULL;
        }
    }
    op->slot   = NULL;
    op->bounce = NULL;
    if ((kind == UCT_SIWARP_OP_AMO) || (kind == UCT_SIWARP_OP_AMO_POST) ||
        (kind == UCT_SIWARP_OP_FLUSH)) {
        pool = &iface->slots;
    } else if (kind == UCT_SIWARP_OP_GET_BCOPY) {
        pool = &iface->bounces;
    }
    if (pool != NULL) {
        if (pool->count == 0) {
            op->next = iface->free_ops;
            iface->free_ops = op;
            return NULL;
        }
        if (pool == &iface->slots) {
            op->slot   = pool->free[--pool->count];
        } else {
            op->bounce = pool->free[--pool->count];
        }
    }
    op->ep     = ep;
    op->ep_gen = ep->gen;
    op->kind   = kind;
    op->live   = 1;
    op->comp   = comp;
    op->result = NULL;
    op->shift  = 0;
    op->is32   = 0;
    op->xor.active = 0;
    op->xor.counted = 0;
    return op;
}

void uct_siwarp_op_put(uct_siwarp_iface_t *iface, uct_siwarp_op_t *op)
{
    op->live = 0;
    if (op->slot != NULL) {
        iface->slots.free[iface->slots.count++] = op->slot;
    }
    if (op->bounce != NULL) {
        iface->bounces.free[iface->bounces.count++] = op->bounce;
    }
    op->next        = iface->free_ops;
    iface->free_ops = op;
}

/* ---- devices and addresses --------------------------------------------- */

static int uct_siwarp_if_addr(const char *name, struct sockaddr_in *sin, int *loopback)
{
    struct ifaddrs *ifa, *i;
    int found = 0;

    if (getifaddrs(&ifa) < 0) {
        return -errno;
    }
    for (i = ifa; i != NULL; i = i->ifa_next) {
        if ((i->ifa_addr != NULL) && (i->ifa_addr->sa_family == AF_INET) &&
            (i->ifa_flags & IFF_UP) && !strcmp(i->ifa_name, name)) {
            memcpy(sin, i->ifa_addr, sizeof(*sin));
            *loopback = !!(i->ifa_flags & IFF_LOOPBACK);
            found = 1;
            break;
        }
    }
    freeifaddrs(ifa);
    return found ? 0 : -ENODEV;
}

/* The interface's speed in bytes/s from /sys/class/net/<if>/speed (Mb/s);
 * 1 GB/s where the kernel does not know it (-1, or no such file). */
static double uct_siwarp_link_bw(const char *name)
{
    char path[96];
    long mbps = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", name);
    f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%ld", &mbps) != 1) {
            mbps = -1;
        }
        fclose(f);
    }
    return (mbps > 0) ? mbps * 1e6 / 8 : 1e9;
}

/* On a verbs device (SIWARP_DEVICE=siw0, cxgb4_0, ...) only the interfaces
 * whose address the device serves: rdma_cm binds a listener only to an
 * address of an RDMA device, and libsiwarp refuses one of another device
 * (-EADDRNOTAVAIL), so a listener on it, made and closed at once, tells.
 * A loopback address is the exception: rdma_cm binds it without a device,
 * and a connect to it then fails (-EINVAL, kernel siw0 on eth0), so it is
 * left out.  Kernel siw0 on eth0 thus lists eth0 alone. */
static int uct_siwarp_md_serves(uct_siwarp_md_t *md, const struct ifaddrs *ifa)
{
    struct siwarp_conn_param p;
    struct siwarp_listener *l;
    struct sockaddr_in sin;

    if (uct_siwarp_md_is_soft(md)) {
        return 1;
    }
    if (ifa->ifa_flags & IFF_LOOPBACK) {
        return 0;
    }
    memcpy(&sin, ifa->ifa_addr, sizeof(sin));
    sin.sin_port = 0;
    siwarp_conn_param_default(&p);
    if (siwarp_listen(md->ctx, (struct sockaddr*)&sin, sizeof(sin), &p, &l) < 0) {
        return 0;
    }
    siwarp_listener_destroy(l);
    return 1;
}

static ucs_status_t uct_siwarp_query_devices(uct_md_h tl_md, uct_tl_device_resource_t **devices_p,
                                             unsigned *num_devices_p)
{
    uct_siwarp_md_t *md = ucs_derived_of(tl_md, uct_siwarp_md_t);
    uct_tl_device_resource_t *devices = NULL, *tmp;
    struct ifaddrs *ifa, *i;
    unsigned n = 0, k;

    if (getifaddrs(&ifa) < 0) {
        ucs_error("siwarp: getifaddrs: %m");
        return UCS_ERR_IO_ERROR;
    }
    for (i = ifa; i != NULL; i = i->ifa_next) {
        if ((i->ifa_addr == NULL) || (i->ifa_addr->sa_family != AF_INET) ||
            !(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING)) {
            continue;
        }
        for (k = 0; k < n; k++) {              /* an alias: listed once */
            if (!strcmp(devices[k].name, i->ifa_name)) {
                break;
            }
        }
        if ((k < n) || !uct_siwarp_md_serves(md, i)) {
            continue;
        }
        tmp = ucs_realloc(devices, sizeof(*devices) * (n + 1), "siwarp devices");
        if (tmp == NULL) {
            ucs_free(devices);
            freeifaddrs(ifa);
            return UCS_ERR_NO_MEMORY;
        }
        devices = tmp;
        ucs_strncpy_zero(devices[n].name, i->ifa_name, sizeof(devices[n].name));
        devices[n].type       = UCT_DEVICE_TYPE_NET;
        devices[n].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        n++;
    }
    freeifaddrs(ifa);
    *devices_p     = devices;
    *num_devices_p = n;
    return UCS_OK;
}

static ucs_status_t uct_siwarp_iface_get_device_address(uct_iface_h tl_iface,
                                                        uct_device_addr_t *addr)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);

    ((uct_siwarp_dev_addr_t*)addr)->ipv4 = iface->addr.sin_addr.s_addr;
    return UCS_OK;
}

static ucs_status_t uct_siwarp_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    uct_siwarp_iface_t *iface    = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    uct_siwarp_iface_addr_t *ia  = (uct_siwarp_iface_addr_t*)addr;

    ia->port     = iface->addr.sin_port;
    ia->rx_depth = (uint16_t)iface->config.rx_depth;
    ia->flags    = uct_siwarp_md_is_soft(iface->md) ? UCT_SIWARP_IFACE_F_SOFT : 0;
    memcpy(ia->secret, iface->secret, sizeof(ia->secret));
    return UCS_OK;
}

/* A loopback address reaches only a loopback device (of this host, as UCX's
 * tcp transport assumes); any other IPv4 address is tried by TCP. */
static int uct_siwarp_iface_is_reachable(const uct_iface_h tl_iface,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_iface_addr_t *iface_addr)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    uint32_t ip;

    if (dev_addr == NULL) {
        return 0;
    }
    ip = ntohl(((const uct_siwarp_dev_addr_t*)dev_addr)->ipv4);
    return ((ip >> 24) == 127) == iface->is_loopback;
}

/* ---- capabilities -------------------------------------------------------- */

static ucs_status_t uct_siwarp_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    size_t am_max             = iface->config.seg_size - sizeof(uct_siwarp_am_hdr_t);

    uct_base_iface_query(&iface->super, attr);

    attr->device_addr_len = sizeof(uct_siwarp_dev_addr_t);
    attr->iface_addr_len  = sizeof(uct_siwarp_iface_addr_t);
    attr->ep_addr_len     = 0;
    /* Connect to iface: an iWARP connection is a TCP connection to a
     * listening port followed by the MPA exchange (RFC 5044 7), so the
     * listener's IP and port are all an initiator needs, as for UCX's tcp
     * transport.  UCT's connect-to-ep would need both ends to exchange ep
     * addresses and then still have one side listen and one connect. */
    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_AM_SHORT |
                      UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY |
                      UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                      UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
                      UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_FD;

    attr->cap.am.max_short       = am_max;
    attr->cap.am.max_bcopy       = am_max;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = am_max;
    attr->cap.am.max_hdr         = ucs_min(UCT_SIWARP_MAX_HDR, am_max);
    attr->cap.am.max_iov         = iface->config.max_iov - 1;   /* one SGE: prefix + header */
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;

    attr->cap.put.max_short       = iface->config.seg_size;
    attr->cap.put.max_bcopy       = iface->config.seg_size;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = UCT_SIWARP_MAX_ZCOPY;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.put.max_iov         = iface->config.max_iov;

    attr->cap.get.max_bcopy       = UCT_SIWARP_GET_BCOPY_MAX;
    attr->cap.get.min_zcopy       = 1;
    attr->cap.get.max_zcopy       = UCT_SIWARP_MAX_ZCOPY;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;
    /* libsiwarp's verbs backend scatters a Read into one SGE only */
    attr->cap.get.max_iov         = uct_siwarp_md_is_soft(iface->md) ?
                                    iface->config.max_iov : 1;

    if (!uct_siwarp_md_is_soft(iface->md)) {
        /* a verbs device: an AM zcopy header in unregistered memory cannot
         * go out (SIWARP_SEND_UNREGISTERED is software only), and an RNIC
         * has no RFC 7306 through libsiwarp */
        attr->cap.flags &= ~UCT_IFACE_FLAG_AM_ZCOPY;
    } else if (iface->config.atomics) {
        /* The responder executes RFC 7306 atomics with the CPU's atomic
         * instructions (common/qp_ext.c), so they are atomic against its own
         * CPU atomics and against every other QP's atomics. */
        attr->cap.flags          |= UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_ATOMIC_DEVICE;
        attr->cap.atomic32.op_flags  = UCT_SIWARP_AMO_OPS;
        attr->cap.atomic32.fop_flags = UCT_SIWARP_AMO_FOPS;
        attr->cap.atomic64.op_flags  = UCT_SIWARP_AMO_OPS;
        attr->cap.atomic64.fop_flags = UCT_SIWARP_AMO_FOPS;
    }

    /* UCP derives its protocol thresholds from these: on loopback what
     * ucx_perftest measures (one-way 4-6 us, 5-6 GB/s); elsewhere the
     * link's speed as the kernel reports it */
    attr->latency             = ucs_linear_func_make(iface->is_loopback ? 4e-6 : 20e-6, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = iface->is_loopback ? 6e9 : iface->link_bw;
    attr->overhead            = 2e-6;
    attr->priority            = 0;
    return UCS_OK;
}

/* ---- progress and events -------------------------------------------------- */

static unsigned uct_siwarp_iface_progress(uct_iface_h tl_iface)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    struct siwarp_wc wc[UCT_SIWARP_POLL];
    uct_siwarp_ep_t *ep, *tmp;
    uct_siwarp_conn_t *conn;
    unsigned count = 0;
    int n, i;

    n = siwarp_poll_cq(iface->cq, UCT_SIWARP_POLL, wc);
    if (n < 0) {
        ucs_error("siwarp: siwarp_poll_cq: %s", strerror(-n));
        n = 0;
    }
    for (i = 0; i < n; i++) {
        conn = siwarp_qp_get_context(wc[i].qp);
        if (conn != NULL) {
            count += uct_siwarp_conn_handle(conn, &wc[i]);
        }
    }
    uct_siwarp_conn_reap(iface);
    count += uct_siwarp_accept_progress(iface);
    if (iface->verified != iface->verified_seen) {
        /* a peer's connection came up: an ep of ours may have a twin of it */
        iface->verified_seen = iface->verified;
        iface->eps_dirty     = 1;
        ucs_list_for_each(ep, &iface->eps, list) {
            if ((ep->merge_to == NULL) && (ep->state != UCT_SIWARP_EP_FAILED)) {
                ep->merge_to = uct_siwarp_conn_merge_target(ep->conn);
                if (ep->merge_to != NULL) {
                    ep->merge_to->ep = ep;     /* reserved */
                }
            }
        }
    }
    if (!iface->eps_dirty) {
        return count;
    }
    iface->eps_dirty = 0;
    ucs_list_for_each_safe(ep, tmp, &iface->eps, list) {
        if (ep->merge_to != NULL) {
            count += uct_siwarp_ep_merge_progress(ep);
        }
        if (ep->state == UCT_SIWARP_EP_CONNECTING) {
            uct_siwarp_ep_check_connected(ep);    /* a refused connect fails the ep */
        }
        if (!ucs_queue_is_empty(&ep->pending_q)) {
            count += uct_siwarp_ep_progress_pending(ep);
        }
        if (uct_siwarp_ep_needs_progress(ep)) {
            iface->eps_dirty = 1;
        }
    }
    if (uct_siwarp_ep_report_failures(iface)) {
        iface->eps_dirty = 1;     /* another may wait; the handler may have destroyed eps */
        count++;
    }
    return count;
}

/* Each iface hands out an epoll set of its own that holds the context's fd.
 * The md's ifaces share one libsiwarp context, so its fd would be the same
 * for all of them, and UCP keys its event handlers by fd: the second iface
 * failed with "failed to set event handler on siwarp/eth0 fd N: Element
 * already exists", and pml ucx could not start on a host with two
 * interfaces unless UCX_NET_DEVICES named one.  A nested epoll set is
 * readable while the context's is, so each iface wakes for every socket of
 * the context, as a progress call serves them all. */
static ucs_status_t uct_siwarp_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    struct epoll_event ev = {.events = EPOLLIN};
    int ctx_fd, efd;

    if (iface->event_fd < 0) {
        ctx_fd = siwarp_ctx_fd(iface->md->ctx);
        if (ctx_fd < 0) {
            ucs_error("siwarp: siwarp_ctx_fd: %s", strerror(-ctx_fd));
            return uct_siwarp_status(ctx_fd);
        }
        efd = epoll_create1(EPOLL_CLOEXEC);
        if (efd < 0) {
            ucs_error("siwarp: iface %s: epoll_create1: %m", iface->if_name);
            return UCS_ERR_IO_ERROR;
        }
        ev.data.fd = ctx_fd;
        if (epoll_ctl(efd, EPOLL_CTL_ADD, ctx_fd, &ev) < 0) {
            ucs_error("siwarp: iface %s: epoll_ctl(ADD, context fd %d): %m", iface->if_name,
                      ctx_fd);
            close(efd);
            return UCS_ERR_IO_ERROR;
        }
        iface->event_fd = efd;
    }
    *fd_p = iface->event_fd;
    return UCS_OK;
}

/* The context's fd is an epoll set over every socket, level-triggered: what
 * arrives after this check wakes the fd.  What libsiwarp already took from
 * the sockets sits in the CQ (its fd tells) or the listener's queue. */
static ucs_status_t uct_siwarp_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    struct pollfd pfd;
    int rc;

    rc = siwarp_progress(iface->md->ctx);
    if (rc < 0) {
        return uct_siwarp_status(rc);
    }
    if (rc > 0) {
        return UCS_ERR_BUSY;
    }
    pfd.fd      = siwarp_cq_fd(iface->cq);
    pfd.events  = POLLIN;
    pfd.revents = 0;
    if ((pfd.fd >= 0) && (poll(&pfd, 1, 0) > 0)) {
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

static ucs_status_t uct_siwarp_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                           uct_completion_t *comp)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    ucs_status_t status, ret = UCS_OK;
    uct_siwarp_ep_t *ep;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_list_for_each(ep, &iface->eps, list) {
        status = uct_siwarp_ep_flush(&ep->super.super, flags, NULL);
        if (status == UCS_INPROGRESS || status == UCS_ERR_NO_RESOURCE) {
            ret = UCS_INPROGRESS;
        } else if (status != UCS_OK) {
            return status;
        }
    }
    return ret;
}

static ucs_status_t uct_siwarp_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(tl_iface, uct_siwarp_iface_t);
    uct_siwarp_ep_t *ep;

    ucs_list_for_each(ep, &iface->eps, list) {
        uct_siwarp_ep_fence(&ep->super.super, flags);
    }
    return UCS_OK;
}

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_siwarp_iface_t, uct_iface_t);

static uct_iface_ops_t uct_siwarp_iface_ops = {
    .ep_am_short              = uct_siwarp_ep_am_short,
    .ep_am_short_iov          = uct_siwarp_ep_am_short_iov,
    .ep_am_bcopy              = uct_siwarp_ep_am_bcopy,
    .ep_am_zcopy              = uct_siwarp_ep_am_zcopy,
    .ep_put_short             = uct_siwarp_ep_put_short,
    .ep_put_bcopy             = uct_siwarp_ep_put_bcopy,
    .ep_put_zcopy             = uct_siwarp_ep_put_zcopy,
    .ep_get_bcopy             = uct_siwarp_ep_get_bcopy,
    .ep_get_zcopy             = uct_siwarp_ep_get_zcopy,
    .ep_atomic_cswap64        = uct_siwarp_ep_atomic_cswap64,
    .ep_atomic_cswap32        = uct_siwarp_ep_atomic_cswap32,
    .ep_atomic64_post         = uct_siwarp_ep_atomic64_post,
    .ep_atomic32_post         = uct_siwarp_ep_atomic32_post,
    .ep_atomic64_fetch        = uct_siwarp_ep_atomic64_fetch,
    .ep_atomic32_fetch        = uct_siwarp_ep_atomic32_fetch,
    .ep_pending_add           = uct_siwarp_ep_pending_add,
    .ep_pending_purge         = uct_siwarp_ep_pending_purge,
    .ep_flush                 = uct_siwarp_ep_flush,
    .ep_fence                 = uct_siwarp_ep_fence,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_siwarp_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_siwarp_ep_t),
    .iface_flush              = uct_siwarp_iface_flush,
    .iface_fence              = uct_siwarp_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_siwarp_iface_progress,
    .iface_event_fd_get       = uct_siwarp_iface_event_fd_get,
    .iface_event_arm          = uct_siwarp_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_siwarp_iface_t),
    .iface_query              = uct_siwarp_iface_query,
    .iface_get_address        = uct_siwarp_iface_get_address,
    .iface_get_device_address = uct_siwarp_iface_get_device_address,
    .iface_is_reachable       = uct_siwarp_iface_is_reachable
};

/* The flush word (remote side of every flush Read), then one 8-octet slot
 * per fetching atomic or flush in flight: a registered region because an
 * RFC 7306 response and a Read Response are placed into an SGE with an lkey. */
/* Every piece of an area of n pieces of size octets, free. */
static ucs_status_t uct_siwarp_pool_init(uct_siwarp_pool_t *pool, void *area, size_t size,
                                         unsigned n)
{
    unsigned i;

    pool->free = ucs_calloc(n, sizeof(void*), "siwarp pool");
    if (pool->free == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < n; i++) {
        pool->free[i] = (char*)area + i * size;
    }
    pool->count = n;
    return UCS_OK;
}

static ucs_status_t uct_siwarp_iface_words_init(uct_siwarp_iface_t *self)
{
    size_t bounce_len = UCT_SIWARP_BOUNCE_COUNT * UCT_SIWARP_GET_BCOPY_MAX;
    int rc;

    self->num_slots = self->config.tx_depth * 4;
    self->words = ucs_calloc(self->num_slots + 1, sizeof(uint64_t), "siwarp words");
    self->bounce = ucs_malloc(bounce_len, "siwarp bounce");
    if ((self->words == NULL) || (self->bounce == NULL) ||
        (uct_siwarp_pool_init(&self->slots, &self->words[1], sizeof(uint64_t),
                              self->num_slots) != UCS_OK) ||
        (uct_siwarp_pool_init(&self->bounces, self->bounce, UCT_SIWARP_GET_BCOPY_MAX,
                              UCT_SIWARP_BOUNCE_COUNT) != UCS_OK)) {
        return UCS_ERR_NO_MEMORY;
    }
    rc = siwarp_reg_mr(self->md->pd, self->words, (self->num_slots + 1) * sizeof(uint64_t),
                       SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_READ, &self->words_mr);
    if (rc < 0) {
        ucs_error("siwarp: registering the flush word: %s", strerror(-rc));
        return uct_siwarp_status(rc);
    }
    rc = siwarp_reg_mr(self->md->pd, self->bounce, bounce_len, SIWARP_ACCESS_LOCAL_WRITE,
                       &self->bounce_mr);
    if (rc < 0) {
        ucs_error("siwarp: registering the get_bcopy buffers: %s", strerror(-rc));
        return uct_siwarp_status(rc);
    }
    return UCS_OK;
}

/* Software iWARP does a responder's work in progress: without the thread a
 * get, a flush or an atomic aimed at a process that computes waits for its
 * next UCX call.  One thread per context (the md's), shared by its ifaces. */
static ucs_status_t uct_siwarp_iface_thread_start(uct_siwarp_iface_t *self,
                                                  const uct_siwarp_iface_config_t *config)
{
    int rc;

    if (!config->progress_thread || !uct_siwarp_md_is_soft(self->md)) {
        return UCS_OK;          /* an RNIC answers its peers itself */
    }
    if (self->md->pt_users == 0) {
        rc = siwarp_ctx_start_progress_thread(self->md->ctx, 0);
        if (rc < 0) {
            ucs_error("siwarp: UCX_SIWARP_PROGRESS_THREAD=y: no thread: %s", strerror(-rc));
            return uct_siwarp_status(rc);
        }
    }
    self->md->pt_users++;
    self->pt_user = 1;
    return UCS_OK;
}

/* A verbs device takes at most its max_sge per WR (siw: 6), and libsiwarp
 * refuses a QP that asks for more (-EINVAL): UCX_SIWARP_MAX_IOV is cut to
 * what the device takes, found by creating QPs that are never connected
 * (on a verbs device one is only memory until rdma_cm connects it). */
static ucs_status_t uct_siwarp_iface_fit_iov(uct_siwarp_iface_t *self)
{
    struct siwarp_qp_init_attr attr = {
        .send_cq     = self->cq,
        .recv_cq     = self->cq,
        .max_send_wr = self->config.tx_depth,
        .max_recv_wr = 1,
    };
    struct siwarp_qp *qp;
    int rc = -EINVAL;

    if (uct_siwarp_md_is_soft(self->md)) {
        return UCS_OK;
    }
    for (attr.max_sge = self->config.max_iov; attr.max_sge >= 2; attr.max_sge--) {
        rc = siwarp_create_qp(self->md->pd, &attr, &qp);
        if (rc != -EINVAL) {
            break;
        }
    }
    if (rc < 0) {
        ucs_error("siwarp: %s takes no QP of %u send WRs with 2 SGEs: %s",
                  siwarp_ctx_backend(self->md->ctx), self->config.tx_depth, strerror(-rc));
        return uct_siwarp_status(rc);
    }
    siwarp_destroy_qp(qp);
    if (attr.max_sge < self->config.max_iov) {
        ucs_debug("siwarp: UCX_SIWARP_MAX_IOV=%u cut to %u, the SGEs a WR of %s takes",
                  self->config.max_iov, attr.max_sge, siwarp_ctx_backend(self->md->ctx));
        self->config.max_iov = attr.max_sge;
    }
    return UCS_OK;
}

/* Bad values of UCX_SIWARP_* stop the iface with a message naming them. */
static ucs_status_t uct_siwarp_iface_config_verify(const uct_siwarp_iface_config_t *c)
{
    const struct {
        const char *name;
        size_t     value, min, max;
    } range[] = {
        {"SEG_SIZE",     c->seg_size,     64, 65536},
        {"RX_QUEUE_LEN", c->rx_queue_len, 2,  4096},   /* iface address: 16 bits */
        {"TX_QUEUE_LEN", c->tx_queue_len, 4,  16384},
        {"MAX_IOV",      c->max_iov,      2,  64},
        {"TX_COALESCE",  (c->tx_coalesce == UCS_ULUNITS_AUTO) ? 0 : c->tx_coalesce, 0, 1024},
    };
    size_t i;

    if ((c->stall_timeout < 1.0) || (c->stall_timeout > 3600.0)) {
        ucs_error("siwarp: UCX_SIWARP_STALL_TIMEOUT=%gs: must be 1s .. 3600s", c->stall_timeout);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < ucs_static_array_size(range); i++) {
        if ((range[i].value < range[i].min) || (range[i].value > range[i].max)) {
            ucs_error("siwarp: UCX_SIWARP_%s=%zu: must be %zu .. %zu", range[i].name,
                      range[i].value, range[i].min, range[i].max);
            return UCS_ERR_INVALID_PARAM;
        }
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_siwarp_iface_t, uct_md_h tl_md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_siwarp_iface_config_t *config = ucs_derived_of(tl_config, uct_siwarp_iface_config_t);
    ucs_status_t status;
    int rc;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("siwarp: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }
    status = uct_siwarp_iface_config_verify(config);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_siwarp_iface_ops,
                              &uct_base_iface_internal_ops, tl_md, worker, params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(params->mode.device.dev_name));

    /* UCS classes are not zeroed: everything the cleanup looks at first */
    memset((char*)self + sizeof(self->super), 0, sizeof(*self) - sizeof(self->super));
    self->md                    = ucs_derived_of(tl_md, uct_siwarp_md_t);
    self->config.seg_size       = config->seg_size;
    self->config.rx_depth       = config->rx_queue_len;
    self->config.tx_depth       = config->tx_queue_len;
    self->config.max_iov        = config->max_iov;
    self->config.atomics        = config->atomics;
    self->config.crc            = config->crc;
    self->config.llp_timeout_ms = (int)ucs_min(config->llp_timeout * 1000.0, (double)INT32_MAX);
    self->config.stall_timeout_ms = (int)ucs_min(config->stall_timeout * 1000.0,
                                                 (double)INT32_MAX);
    if (uct_siwarp_md_is_soft(self->md)) {
        /* the context's, shared by the md's ifaces: the last one opened sets it */
        (void)siwarp_ctx_set_rx_stall(self->md->ctx, self->config.stall_timeout_ms);
    }
    self->event_fd              = -1;
    self->op_size               = sizeof(uct_siwarp_op_t) + sizeof(uct_siwarp_am_hdr_t) +
                                  UCT_SIWARP_MAX_HDR;
    ucs_list_head_init(&self->eps);
    ucs_list_head_init(&self->conns);
    ucs_strncpy_zero(self->if_name, params->mode.device.dev_name, sizeof(self->if_name));

    rc = uct_siwarp_if_addr(self->if_name, &self->addr, &self->is_loopback);
    if (rc < 0) {
        ucs_error("siwarp: device %s has no IPv4 address", self->if_name);
        return UCS_ERR_NO_DEVICE;
    }
    self->link_bw = uct_siwarp_link_bw(self->if_name);
    self->tx_buf = ucs_malloc(self->config.seg_size, "siwarp tx_buf");
    if (self->tx_buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rc = siwarp_create_cq(self->md->ctx, 256, &self->cq);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_create_cq: %s", strerror(-rc));
        return uct_siwarp_status(rc);
    }
    status = uct_siwarp_iface_fit_iov(self);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_siwarp_iface_words_init(self);
    if (status != UCS_OK) {
        return status;
    }
    /* the key of this iface's connections, known only to the processes
     * given its address (uct_siwarp_auth.c) */
    rc = swp_auth_random(self->secret, sizeof(self->secret));
    if (rc < 0) {
        ucs_error("siwarp: getrandom for the iface's key: %s", strerror(-rc));
        return uct_siwarp_status(rc);
    }
    uct_siwarp_challenge_init(self);
    status = uct_siwarp_iface_thread_start(self, config);
    if (status != UCS_OK) {
        return status;
    }
    if (!uct_siwarp_md_is_soft(self->md)) {
        self->config.tx_coalesce = 0;      /* a device sends what is posted */
    } else if (config->tx_coalesce == UCS_ULUNITS_AUTO) {
        self->config.tx_coalesce = self->pt_user ? UCT_SIWARP_TX_COALESCE_AUTO : 0;
    } else {
        self->config.tx_coalesce = (unsigned)config->tx_coalesce;
    }
    return uct_siwarp_listen(self);
}

static UCS_CLASS_CLEANUP_FUNC(uct_siwarp_iface_t)
{
    uct_siwarp_conn_t *conn, *tmp;
    uct_siwarp_op_t *op;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (self->pt_user && (--self->md->pt_users == 0)) {
        (void)siwarp_ctx_stop_progress_thread(self->md->ctx);
    }
    ucs_list_for_each_safe(conn, tmp, &self->conns, list) {
        if (conn->ep != NULL) {
            ucs_warn("siwarp: iface %s closed before its ep to %s", self->if_name, conn->peer);
            conn->ep->conn = NULL;
            conn->ep       = NULL;
        }
        uct_siwarp_conn_destroy(conn);
    }
    if (self->listener != NULL) {
        siwarp_listener_destroy(self->listener);
    }
    if (self->words_mr != NULL) {
        siwarp_dereg_mr(self->words_mr);
    }
    if (self->bounce_mr != NULL) {
        siwarp_dereg_mr(self->bounce_mr);
    }
    if (self->cq != NULL) {
        siwarp_destroy_cq(self->cq);
    }
    while ((op = self->free_ops) != NULL) {
        self->free_ops = op->next;
        ucs_free(op);
    }
    ucs_free(self->words);
    ucs_free(self->slots.free);
    ucs_free(self->bounce);
    ucs_free(self->bounces.free);
    ucs_free(self->tx_buf);
    if (self->event_fd >= 0) {
        close(self->event_fd);
    }
}

UCS_CLASS_DEFINE(uct_siwarp_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_siwarp_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*, const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_siwarp_iface_t, uct_iface_t);

UCT_TL_DEFINE_ENTRY(&uct_siwarp_component, siwarp, uct_siwarp_query_devices,
                    uct_siwarp_iface_t, UCT_SIWARP_CONFIG_PREFIX,
                    uct_siwarp_iface_config_table, uct_siwarp_iface_config_t);

UCT_SINGLE_TL_INIT(&uct_siwarp_component, siwarp, ctor,,)
