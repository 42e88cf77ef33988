/*
 * btl_siwarp_component.c - MCA parameters, component init (interfaces,
 * listeners, modex) and progress.
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
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/argv.h"
#include "opal/util/if.h"
#include "opal/util/net.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/runtime/opal_params.h"

extern const mca_btl_base_module_t mca_btl_siwarp_module_template;
int mca_btl_siwarp_module_start_thread(mca_btl_siwarp_module_t *m);

static int siwarp_component_register(void);
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
            .mca_register_component_params = siwarp_component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = siwarp_component_init,
        .btl_progress = siwarp_component_progress,
    },
};

/* ---- parameters --------------------------------------------------------------- */

static mca_base_var_enum_value_t rtr_values[] = {
    {0, "none"},
    {SIWARP_RTR_SEND, "send"},
    {SIWARP_RTR_WRITE, "write"},
    {SIWARP_RTR_READ, "read"},
    {0, NULL},
};

static mca_base_var_enum_value_t fallback_values[] = {
    {MCA_BTL_SIWARP_FALLBACK_TCP, "tcp"},
    {MCA_BTL_SIWARP_FALLBACK_ERROR, "error"},
    {0, NULL},
};

static int reg_int(const char *name, const char *help, int *storage, int level)
{
    return mca_base_component_var_register(&mca_btl_siwarp_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int reg_bool(const char *name, const char *help, int *storage, int level)
{
    /* stored as int: MCA bools are C bools, so register through a bool */
    return mca_base_component_var_register(&mca_btl_siwarp_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int reg_string(const char *name, const char *help, char **storage, int level)
{
    return mca_base_component_var_register(&mca_btl_siwarp_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int reg_enum(const char *name, const char *help, mca_base_var_enum_value_t *values,
                    int *storage, int level)
{
    mca_base_var_enum_t *e = NULL;
    int rc = mca_base_var_enum_create(name, values, &e);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = mca_base_component_var_register(&mca_btl_siwarp_component.super.btl_version, name,
                                         help, MCA_BASE_VAR_TYPE_INT, e, 0, 0, level,
                                         MCA_BASE_VAR_SCOPE_READONLY, storage);
    OBJ_RELEASE(e);
    return rc;
}

static mca_btl_base_module_t param_module;   /* base params land here first */

static int siwarp_component_register(void)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;

    c->if_include = NULL;
    reg_string("if_include", "Comma-separated list of interface names or CIDR networks "
               "(e.g. eth0,192.168.0.0/16) to use.  Mutually exclusive with "
               "btl_siwarp_if_exclude.  Default: all interfaces, loopback included "
               "(loopback is only used between processes on one node).",
               &c->if_include, OPAL_INFO_LVL_1);
    c->if_exclude = NULL;
    reg_string("if_exclude", "Comma-separated list of interface names or CIDR networks "
               "not to use.  Mutually exclusive with btl_siwarp_if_include.",
               &c->if_exclude, OPAL_INFO_LVL_1);
    c->tcp_congestion = "cubic,reno";
    reg_string("tcp_congestion", "TCP congestion control for siwarp's connections: names "
               "tried in order on each socket, the first the kernel takes wins (one it lacks, "
               "or one net.ipv4.tcp_allowed_congestion_control keeps from an unprivileged "
               "process, is skipped; if none is taken the socket keeps the system default).  "
               "Empty: the system default.  BBR, a common default, paces a connection at its "
               "estimated rate, and MPI's bursts keep that low: 64 KiB bandwidth across a veth "
               "pair 1.4 GB/s against 4.7-4.9 with CUBIC",
               &c->tcp_congestion, OPAL_INFO_LVL_4);
    c->port_min = 0;
    reg_int("port_min_v4", "First TCP port tried for the iWARP and fallback listeners "
            "(0: let the kernel choose)", &c->port_min, OPAL_INFO_LVL_2);
    c->port_range = 64;
    reg_int("port_range_v4", "Number of ports tried from btl_siwarp_port_min_v4 "
            "(1-65535)", &c->port_range, OPAL_INFO_LVL_2);
    c->rq_depth = 64;
    reg_int("rq_depth", "Most Send credits one peer gets (1-4096): its share of the shared "
            "receive queue is capped at this; with btl_siwarp_srq_size=0 this many receive "
            "buffers of btl_siwarp_max_send_size bytes are posted per peer",
            &c->rq_depth, OPAL_INFO_LVL_4);
    c->srq_size = 16;
    reg_int("srq_size", "Eager receive buffers shared by all peers through one shared "
            "receive queue, divided among the job's other processes as their Send "
            "credits (each peer gets between btl_siwarp_srq_min_credits and "
            "btl_siwarp_rq_depth, plus one control credit; the pool grows when the minimum "
            "needs more).  Each buffer is btl_siwarp_max_send_size bytes.  0: "
            "btl_siwarp_rq_depth buffers per peer instead (always so on a verbs device, "
            "where libsiwarp has no shared receive queue).  0-65536",
            &c->srq_size, OPAL_INFO_LVL_4);
    c->srq_min_credits = 1;
    reg_int("srq_min_credits", "Send credits every peer gets from the shared receive queue "
            "however many peers share it (1 to btl_siwarp_rq_depth)",
            &c->srq_min_credits, OPAL_INFO_LVL_5);
    c->srq_max = 256;
    reg_int("srq_max", "Eager receive buffers the shared receive queue may grow to for "
            "peers that stream one way (their credits double, up to btl_siwarp_rq_depth, "
            "while the pool stays within this; the minimum credits of every peer come on "
            "top).  btl_siwarp_srq_size to 65536",
            &c->srq_max, OPAL_INFO_LVL_5);
    c->credit_threshold = 0;
    reg_int("credit_threshold", "Return credits in an explicit message once this many are "
            "owed and no Send carries them (0: half of btl_siwarp_rq_depth; never more than half "
            "of the credits a peer was granted)",
            &c->credit_threshold, OPAL_INFO_LVL_5);
    c->sq_depth = 512;
    reg_int("sq_depth", "Send queue depth per connection (Sends, RDMA Writes and Reads "
            "outstanding; 4-65536)", &c->sq_depth, OPAL_INFO_LVL_5);
    c->tx_coalesce = 16;
    reg_int("tx_coalesce", "Sends posted to one peer between two progress calls that may wait "
            "for the next progress call and leave in one sendmsg (the first always leaves at "
            "once; 0: every send leaves at once; 1-1024)", &c->tx_coalesce, OPAL_INFO_LVL_5);
    c->idle_spin_us = 20;
    reg_int("idle_spin_us", "Microseconds of progress calls that move no data, while a large "
            "transfer waits on its socket, before progress sleeps instead of spinning "
            "(0-1000000; see btl_siwarp_idle_wait_us)", &c->idle_spin_us, OPAL_INFO_LVL_5);
    c->idle_wait_us = 0;
    reg_int("idle_wait_us", "Longest sleep of one progress call once btl_siwarp_idle_spin_us "
            "passed idle with a transfer in flight; a socket becoming ready ends it at once "
            "(0: always spin; 0-1000000)", &c->idle_wait_us, OPAL_INFO_LVL_5);
    c->max_inline = 64;
    reg_int("max_inline", "Bytes copied into the send queue at post time (0-1024)",
            &c->max_inline, OPAL_INFO_LVL_6);
    c->free_list_num = 64;
    reg_int("free_list_num", "Initial number of eager buffers", &c->free_list_num,
            OPAL_INFO_LVL_5);
    c->free_list_max = -1;
    reg_int("free_list_max", "Maximum number of eager buffers (-1: unlimited)",
            &c->free_list_max, OPAL_INFO_LVL_5);
    c->free_list_inc = 64;
    reg_int("free_list_inc", "Eager buffers added when the list runs dry",
            &c->free_list_inc, OPAL_INFO_LVL_5);
    c->mpa = 1;
    reg_bool("mpa", "Speak iWARP (MPA/DDP/RDMAP) on this node (1) or only the plain-TCP "
             "fallback (0)", &c->mpa, OPAL_INFO_LVL_3);
    c->mpa_rev = 2;
    reg_int("mpa_rev", "MPA revision offered: 2 (RFC 6581 enhanced) or 1 (RFC 5044)",
            &c->mpa_rev, OPAL_INFO_LVL_4);
    c->crc = 1;
    reg_bool("crc", "Ask for MPA CRC32c on every FPDU (0 or 1; used if either side asks)",
             &c->crc, OPAL_INFO_LVL_4);
    c->markers = 0;
    reg_bool("markers", "Ask for MPA markers every 512 octets (0 or 1)", &c->markers,
             OPAL_INFO_LVL_4);
    c->p2p = 1;
    reg_bool("p2p", "Use RFC 6581 peer-to-peer mode (0 or 1)", &c->p2p, OPAL_INFO_LVL_4);
    /* Read: the only RTR with an answer, what Chelsio and irdma expect, and
     * the one that survives stock siw 6.1's passive-side race */
    c->rtr = SIWARP_RTR_READ;
    reg_enum("rtr", "Peer-to-peer ready-to-receive message type: none, send, write, read",
             rtr_values, &c->rtr, OPAL_INFO_LVL_4);
    c->mulpdu = 0;
    reg_int("mulpdu", "Largest DDP segment payload (0: derived from the path MSS; "
            "otherwise 64-65535)", &c->mulpdu, OPAL_INFO_LVL_5);
    c->ird_ord = 16;
    reg_int("ird_ord", "Inbound / outbound RDMA Read depth negotiated per connection "
            "(1-1024)", &c->ird_ord, OPAL_INFO_LVL_5);
    c->llp_timeout = 30000;
    reg_int("llp_timeout", "Milliseconds after which a connection whose peer stopped answering "
            "(dead node, link down) is declared lost: TCP keepalive and TCP_USER_TIMEOUT "
            "(1000-600000)", &c->llp_timeout, OPAL_INFO_LVL_4);
    c->big_fpdu = -1;
    reg_int("big_fpdu", "Largest FPDU payload toward a peer that is siwarp too, agreed in "
            "the MPA exchange (-1: auto, 65535 toward peers whose modex says they run "
            "siwarp's software stack, MSS-sized toward everyone else; 0: off; 2048-65535: "
            "offered to every peer, in reserved MPA flag bits that strict RNICs may refuse)",
            &c->big_fpdu, OPAL_INFO_LVL_5);
    c->connect_timeout = 10000;
    reg_int("connect_timeout", "Milliseconds allowed for each connection step: the MPA "
            "exchange, the TCP-fallback handshake, and the wait for the peer's own "
            "connection after losing a simultaneous connect; a peer that misses it is "
            "reported and failed (100-600000)",
            &c->connect_timeout, OPAL_INFO_LVL_5);
    c->progress_thread = 0;
    reg_bool("progress_thread", "Run a thread that progresses libsiwarp (serves incoming "
             "RDMA Reads and Write placement while the application computes)",
             &c->progress_thread, OPAL_INFO_LVL_3);
    c->fallback = MCA_BTL_SIWARP_FALLBACK_TCP;
    reg_enum("fallback", "What to do with a peer that cannot speak iWARP: tcp (carry its "
             "traffic over framed TCP and warn once) or error (treat it as unreachable)",
             fallback_values, &c->fallback, OPAL_INFO_LVL_3);

    param_module = mca_btl_siwarp_module_template;
    return mca_btl_base_param_register(&c->super.btl_version, &param_module);
}

/* Refuse bad values with one clear message each; returns OPAL_SUCCESS or
 * OPAL_ERR_BAD_PARAM. */
static int bad(const char *name, long value, const char *want)
{
    char v[32];
    snprintf(v, sizeof(v), "%ld", value);
    opal_show_help("help-mpi-btl-siwarp.txt", "bad mca value", true,
                   opal_process_info.nodename ? opal_process_info.nodename : "?", name, v, want);
    /* and one plain line: Open MPI 4.1's help relay can drop the text above
     * when the job ends right after it */
    BTL_ERROR(("cannot use %s = %s (allowed: %s); the siwarp BTL is disabled", name, v, want));
    return OPAL_ERR_BAD_PARAM;
}

static int bad_str(const char *name, const char *value, const char *want)
{
    opal_show_help("help-mpi-btl-siwarp.txt", "bad mca value", true,
                   opal_process_info.nodename ? opal_process_info.nodename : "?", name, value,
                   want);
    BTL_ERROR(("cannot use %s = %s (allowed: %s); the siwarp BTL is disabled", name, value,
               want));
    return OPAL_ERR_BAD_PARAM;
}

/* btl_siwarp_tcp_congestion: well formed, and (where the kernel says what
 * it has) naming at least one congestion control this kernel runs. */
static int verify_tcp_congestion(const char *list)
{
    char have[256], want[300];
    FILE *f;
    size_t n;

    if (NULL == list || '\0' == list[0]) {
        return OPAL_SUCCESS;
    }
    if (siwarp_tcp_congestion_check(list) < 0) {
        return bad_str("btl_siwarp_tcp_congestion", list,
                       "empty, or congestion control names separated by commas (each 1-15 "
                       "of A-Z a-z 0-9 _ -, 63 characters in all)");
    }
    f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");
    if (NULL == f) {
        return OPAL_SUCCESS;        /* cannot tell: each socket finds out */
    }
    n = fread(have, 1, sizeof(have) - 1, f);
    fclose(f);
    have[n] = '\0';
    for (const char *p = list; p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t) (e - p) : strlen(p);
        for (const char *h = have; *h;) {
            size_t hl = strcspn(h, " \t\n");
            if (hl == len && 0 == strncmp(h, p, len)) {
                return OPAL_SUCCESS;
            }
            h += hl;
            h += strspn(h, " \t\n");
        }
        p = e ? e + 1 : NULL;
    }
    have[strcspn(have, "\n")] = '\0';
    snprintf(want, sizeof(want), "empty, or a list naming one this kernel has (%.200s)", have);
    return bad_str("btl_siwarp_tcp_congestion", list, want);
}

static int siwarp_verify_params(void)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    mca_btl_base_module_t *b = &param_module;
    size_t hdr = sizeof(mca_btl_siwarp_hdr_t);
    int rc;

    if (c->if_include && c->if_include[0] && c->if_exclude && c->if_exclude[0]) {
        opal_show_help("help-mpi-btl-siwarp.txt", "include exclude", true,
                       opal_process_info.nodename ? opal_process_info.nodename : "?",
                       c->if_include, c->if_exclude);
        return OPAL_ERR_BAD_PARAM;
    }
    if (c->port_min < 0 || c->port_min > 65535) {
        return bad("btl_siwarp_port_min_v4", c->port_min, "0 to 65535");
    }
    if (c->port_range < 1 || c->port_min + c->port_range - 1 > 65535) {
        return bad("btl_siwarp_port_range_v4", c->port_range,
                   "1 or more, with port_min + port_range - 1 <= 65535");
    }
    if (c->rq_depth < 1 || c->rq_depth > 4096) {
        return bad("btl_siwarp_rq_depth", c->rq_depth, "1 to 4096");
    }
    if (c->srq_size < 0 || c->srq_size > 65536) {
        return bad("btl_siwarp_srq_size", c->srq_size, "0 (off) to 65536");
    }
    if (c->srq_min_credits < 1 || c->srq_min_credits > c->rq_depth) {
        return bad("btl_siwarp_srq_min_credits", c->srq_min_credits,
                   "1 to btl_siwarp_rq_depth");
    }
    if (c->srq_max < c->srq_size || c->srq_max > 65536) {
        return bad("btl_siwarp_srq_max", c->srq_max, "btl_siwarp_srq_size to 65536");
    }
    if (c->credit_threshold < 0 || c->credit_threshold > c->rq_depth) {
        return bad("btl_siwarp_credit_threshold", c->credit_threshold,
                   "0 (auto) to btl_siwarp_rq_depth");
    }
    if (OPAL_SUCCESS != (rc = verify_tcp_congestion(c->tcp_congestion))) {
        return rc;
    }
    if (c->sq_depth < 4 || c->sq_depth > 65536) {
        return bad("btl_siwarp_sq_depth", c->sq_depth, "4 to 65536");
    }
    if (c->tx_coalesce < 0 || c->tx_coalesce > 1024) {
        return bad("btl_siwarp_tx_coalesce", c->tx_coalesce, "0 to 1024");
    }
    if (c->idle_spin_us < 0 || c->idle_spin_us > 1000000) {
        return bad("btl_siwarp_idle_spin_us", c->idle_spin_us, "0 to 1000000");
    }
    if (c->idle_wait_us < 0 || c->idle_wait_us > 1000000) {
        return bad("btl_siwarp_idle_wait_us", c->idle_wait_us, "0 to 1000000");
    }
    if (c->max_inline < 0 || c->max_inline > 1024) {
        return bad("btl_siwarp_max_inline", c->max_inline, "0 to 1024");
    }
    if (c->free_list_num < 1 || c->free_list_inc < 1 ||
        (c->free_list_max != -1 && c->free_list_max < c->free_list_num)) {
        return bad("btl_siwarp_free_list_num/_max/_inc", c->free_list_max,
                   "num >= 1, inc >= 1, max = -1 or >= num");
    }
    if (c->mpa != 0 && c->mpa != 1) {
        return bad("btl_siwarp_mpa", c->mpa, "0 or 1");
    }
    if (c->mpa_rev != 1 && c->mpa_rev != 2) {
        return bad("btl_siwarp_mpa_rev", c->mpa_rev, "1 or 2");
    }
    if ((c->crc | c->markers | c->p2p | c->progress_thread) & ~1) {
        return bad("btl_siwarp_crc/markers/p2p/progress_thread",
                   c->crc | c->markers | c->p2p | c->progress_thread, "0 or 1");
    }
    if (c->mulpdu != 0 && (c->mulpdu < 64 || c->mulpdu > 65535)) {
        return bad("btl_siwarp_mulpdu", c->mulpdu, "0 (auto) or 64 to 65535");
    }
    if (c->ird_ord < 1 || c->ird_ord > 1024) {
        return bad("btl_siwarp_ird_ord", c->ird_ord, "1 to 1024");
    }
    if (c->connect_timeout < 100 || c->connect_timeout > 600000) {
        return bad("btl_siwarp_connect_timeout", c->connect_timeout, "100 to 600000");
    }
    if (c->llp_timeout < 1000 || c->llp_timeout > 600000) {
        return bad("btl_siwarp_llp_timeout", c->llp_timeout, "1000 to 600000");
    }
    if (c->big_fpdu != 0 && c->big_fpdu != -1 && (c->big_fpdu < 2048 || c->big_fpdu > 65535)) {
        return bad("btl_siwarp_big_fpdu", c->big_fpdu, "0 (off) or 2048 to 65535");
    }
    if (b->btl_max_send_size < 1024 || b->btl_max_send_size > 16 * 1024 * 1024) {
        return bad("btl_siwarp_max_send_size", (long) b->btl_max_send_size,
                   "1024 to 16777216 bytes");
    }
    if (b->btl_eager_limit < 64 || b->btl_eager_limit > b->btl_max_send_size) {
        return bad("btl_siwarp_eager_limit", (long) b->btl_eager_limit,
                   "64 bytes to btl_siwarp_max_send_size");
    }
    if (b->btl_rndv_eager_limit > b->btl_eager_limit) {
        return bad("btl_siwarp_rndv_eager_limit", (long) b->btl_rndv_eager_limit,
                   "at most btl_siwarp_eager_limit");
    }
    if (b->btl_put_limit == 0 || b->btl_put_limit > UINT32_MAX ||
        b->btl_get_limit == 0 || b->btl_get_limit > UINT32_MAX) {
        return bad("btl_siwarp_put_limit/get_limit", (long) b->btl_put_limit,
                   "1 to 4294967295 bytes (one RDMA Write/Read)");
    }
    if (b->btl_rdma_pipeline_frag_size == 0) {
        return bad("btl_siwarp_rdma_pipeline_frag_size", 0, "more than 0");
    }
    (void) hdr;
    if (0 == c->credit_threshold) {
        c->credit_threshold = c->rq_depth / 2 > 0 ? c->rq_depth / 2 : 1;
    }
    return OPAL_SUCCESS;
}

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
    for (int i = 0; bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t) (0xff << (8 - bits));
        if ((addr[i] ^ net[i]) & mask) {
            return 0;
        }
    }
    return 1;
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

static int tcp_listen_on(struct sockaddr_storage *ss, int *fd_out)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int tries = c->port_min ? c->port_range : 1;

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
        close(fd);
    }
    return -EADDRINUSE;
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
                BTL_VERBOSE(("siwarp_listen on %s: %s", name, strerror(-r)));
                L->listener = NULL;
            } else {
                x->flags |= MCA_BTL_SIWARP_ADDR_F_IWARP;
                if (0 == strcmp(siwarp_ctx_backend(m->ctx), "soft")) {
                    x->flags |= MCA_BTL_SIWARP_ADDR_F_SOFT;
                }
                x->iwarp_port = get_port_be(&s2);
            }
        }
        if (tcp_listen_on(&L->addr, &L->tcp_fd) < 0) {
            BTL_VERBOSE(("fallback listener on %s failed", name));
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
        BTL_VERBOSE(("using %s (%s), iwarp port %u, tcp port %u", name,
                     opal_net_get_hostname((struct sockaddr *) &ss), ntohs(x->iwarp_port),
                     ntohs(x->tcp_port)));
        m->num_listen++;
    }
    opal_argv_free(include);
    opal_argv_free(exclude);
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

    memcpy(&m->super, &param_module, sizeof(m->super));
    OBJ_CONSTRUCT(&m->endpoints, opal_list_t);
    OBJ_CONSTRUCT(&m->active, opal_list_t);
    OBJ_CONSTRUCT(&m->graveyard, opal_list_t);
    OBJ_CONSTRUCT(&m->eager_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&m->rdma_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&m->lock, opal_recursive_mutex_t);
    m->frag_size = sizeof(mca_btl_siwarp_hdr_t) + m->super.btl_max_send_size;

    rc = siwarp_ctx_create(&m->ctx);
    if (rc < 0) {
        BTL_VERBOSE(("siwarp_ctx_create: %s", strerror(-rc)));
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    /* ob1 then hands contiguous send data by pointer (prepare_src) */
    if (0 == strcmp(siwarp_ctx_backend(m->ctx), "soft")) {
        m->inplace = 1;
        (void) siwarp_ctx_set_idle_wait(m->ctx, (uint32_t) c->idle_spin_us,
                                        (uint32_t) c->idle_wait_us);
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
    (void) mpi_threads;

    *num_btls = 0;
    if (OPAL_SUCCESS != siwarp_verify_params() ||
        OPAL_SUCCESS != mca_btl_base_param_verify(&param_module)) {
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
    if (OPAL_SUCCESS != rc) {
        m->super.btl_finalize(&m->super);
        free(btls);
        return NULL;
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

int mca_btl_siwarp_progress_module(mca_btl_siwarp_module_t *m)
{
    struct siwarp_wc wc[16];
    int count = 0, n;

    OPAL_THREAD_LOCK(&m->lock);
    /* Listeners are looked at every 128th call: each look costs a progress
     * pass and a poll() whose answer is almost always "nothing" (about a
     * microsecond here), and ob1 calls this in a tight loop while it waits
     * for a message: a look that lands between a message and its reply
     * delays the reply.  A connection waits at most 128 polls -- unless
     * the node is oversubscribed: then opal_progress yields the core after
     * every call that found nothing, a call can last a scheduler time
     * slice, and 128 of them kept peers' connections waiting for hundreds
     * of milliseconds (8 ranks on 2 cores across veth: time to first
     * message 1.3x btl tcp's).  Look every call then; a look costs little
     * next to a yield. */
    int look = 0 == (m->polls++ & 127) || opal_progress_yield_when_idle;
    for (int i = 0; look && i < m->num_listen; i++) {
        struct siwarp_conn_req *req;
        if (m->listen[i].listener) {
            while (0 == siwarp_get_conn_request(m->listen[i].listener, &req)) {
                mca_btl_siwarp_ep_handle_conn_req(m, req);
                count++;
            }
        }
        if (m->listen[i].tcp_fd >= 0) {
            /* accept4() allocates a socket even when it then says EAGAIN
             * (Linux): ask poll() first, which costs a tenth of that */
            struct pollfd pf = { .fd = m->listen[i].tcp_fd, .events = POLLIN };
            if (poll(&pf, 1, 0) > 0) {
                mca_btl_siwarp_tcp_accept(m, m->listen[i].tcp_fd);
            }
        }
    }
    {
        opal_list_item_t *it = opal_list_get_first(&m->active);
        while (it != opal_list_get_end(&m->active)) {
            opal_list_item_t *nx = opal_list_get_next(it);
            mca_btl_siwarp_endpoint_t *e = (mca_btl_siwarp_endpoint_t *)
                ((char *) it - offsetof(mca_btl_siwarp_endpoint_t, active_item));
            if (MCA_BTL_SIWARP_EP_CONNECTING == e->state) {
                count += mca_btl_siwarp_ep_progress_connect(e);
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
    OPAL_THREAD_UNLOCK(&m->lock);
    return count;
}

static int siwarp_component_progress(void)
{
    mca_btl_siwarp_module_t *m = mca_btl_siwarp_component.module;
    return m ? mca_btl_siwarp_progress_module(m) : 0;
}
