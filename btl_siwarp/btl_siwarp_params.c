/*
 * btl_siwarp_params.c - the component's MCA parameters: registration with
 * their help texts and defaults, and the check of every value before the
 * component initializes (a wrong value is refused with a message naming
 * the parameter, the value and what is accepted).
 */
#include "btl_siwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/argv.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

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

/* Open MPI's base BTL parameters (eager limit, ...) land here first; each
 * module starts as a copy (component init). */
mca_btl_base_module_t mca_btl_siwarp_param_module;

int mca_btl_siwarp_params_register(void)
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
    c->if_near = 1;
    reg_bool("if_near", "Order addresses by nearness: publish this rank's interfaces nearest "
             "to the cores it is bound to first (Open MPI's hardware topology: the package "
             "or group a NIC's PCI device hangs from), so that peers connect to those, and "
             "try first the peer's addresses on the network of our nearest interface, then "
             "on any of our networks, then routed ones.  The other interfaces stay in use "
             "for peers only they reach.  0: the order the kernel lists interfaces in, and "
             "the peer's addresses in the order it published them",
             &c->if_near, OPAL_INFO_LVL_4);
    c->tcp_congestion = "reno,cubic";
    reg_string("tcp_congestion", "TCP congestion control for siwarp's connections: names "
               "tried in order on each socket, the first the kernel takes wins (one it lacks, "
               "or one net.ipv4.tcp_allowed_congestion_control keeps from an unprivileged "
               "process, is skipped; if none is taken the socket keeps the system default).  "
               "Empty: the system default.  BBR, a common default, paces a connection at its "
               "estimated rate, and MPI's bursts keep that low: 64 KiB bandwidth across a veth "
               "pair 1.4 GB/s against 4.7-4.9 with CUBIC.  Reno before CUBIC: the same "
               "bandwidth, and each ACK runs fewer of the kernel's congestion-control hooks "
               "(0.05-0.1 us less a message one way)",
               &c->tcp_congestion, OPAL_INFO_LVL_4);
    c->port_min = 0;
    reg_int("port_min_v4", "First TCP port tried for the iWARP and fallback listeners "
            "(0: let the kernel choose)", &c->port_min, OPAL_INFO_LVL_2);
    c->port_range = 64;
    reg_int("port_range_v4", "Number of ports tried from btl_siwarp_port_min_v4 "
            "(1-65535)", &c->port_range, OPAL_INFO_LVL_2);
    c->rcache_limit = (size_t) 1 << 30;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "rcache_limit",
        "Bytes of registered memory above which cached registrations no transfer is using "
        "are dropped, least recently used first, before a new registration and when a "
        "transfer lets go of one (0: no limit).  The cache keeps a registration after its transfer so that the next "
        "transfer from the same buffer needs none; one whose memory malloc keeps for later "
        "buffers stays until a new registration overlaps it or the memory goes back to the "
        "system, so without a limit a program whose large buffers land at ever new places "
        "in malloc's heap keeps them all.  Registrations in use are never dropped.  "
        "Suffixes k, m, g",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->rcache_limit);
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
    /* 0: MCA_BTL_SIWARP_SRQ_MIN_AUTO.  One credit made every Send to a
     * peer that did not answer at once cost a CREDIT message, which the
     * pool then took for one-way streaming and grew for: 8 ranks all to
     * all ran at half btl tcp's speed for their first few hundred rounds. */
    c->srq_min_credits = 0;
    reg_int("srq_min_credits", "Send credits every peer gets from the shared receive queue "
            "however many peers share it (0: 3, or btl_siwarp_rq_depth if that is less; "
            "otherwise 1 to btl_siwarp_rq_depth)",
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
            "of the credits a peer was granted, rounded up)",
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
    c->idle_wait_us = -1;
    reg_int("idle_wait_us", "Longest sleep of one progress call once btl_siwarp_idle_spin_us "
            "passed idle with a transfer in flight (under btl_siwarp_idle_quiet: with nothing "
            "to do at all); a socket becoming ready ends it at once (-1: 0, or 1000 under "
            "btl_siwarp_idle_quiet; 0: always spin; -1-1000000)", &c->idle_wait_us,
            OPAL_INFO_LVL_5);
    c->idle_quiet = 0;
    reg_int("idle_quiet", "On a node where Open MPI yields when idle (mpi_yield_when_idle, "
            "which it sets itself on an oversubscribed node), sleep in progress also when no "
            "transfer is in flight, once btl_siwarp_idle_spin_us passed with nothing to do, "
            "instead of spinning and yielding as btl tcp does (0: off, the default: on a "
            "virtual machine's cores the sleeps cost more than they give back; 1: on)",
            &c->idle_quiet, OPAL_INFO_LVL_5);
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
    /* auto: an RNIC or kernel siw may need the RTR (irdma refuses MPA v2
     * without it; stock siw 6.1 has a race it avoids), two software
     * siwarp stacks do not, and without it the responder may send as soon
     * as its Reply is out instead of after the initiator's RTR */
    c->p2p = -1;
    reg_int("p2p", "RFC 6581 peer-to-peer mode: -1 auto (toward RNICs and kernel siw, "
            "not between software siwarp peers), 0 never, 1 always", &c->p2p,
            OPAL_INFO_LVL_4);
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
            "(1000-600000)",
            &c->llp_timeout, OPAL_INFO_LVL_4);
    c->stall_timeout = 300000;
    reg_int("stall_timeout", "Milliseconds after which a connected peer that stopped inside an "
            "iWARP FPDU or a fallback frame it began (its TCP connection alive: "
            "btl_siwarp_llp_timeout cannot see it), or an accepted one that still owes the "
            "first message proving the job's key, is cut off with a message.  A peer that "
            "merely computes outside MPI with a transfer half written looks the same: keep "
            "it above the application's longest pause between MPI calls (1000-3600000)",
            &c->stall_timeout, OPAL_INFO_LVL_4);
    c->big_fpdu = -1;
    reg_int("big_fpdu", "Largest FPDU payload toward a peer that is siwarp too, agreed in "
            "the MPA exchange (-1: auto, 65535 toward peers whose modex says they run "
            "siwarp's software stack, MSS-sized toward everyone else; 0: off; 2048-65535: "
            "offered to every peer, in reserved MPA flag bits that strict RNICs may refuse)",
            &c->big_fpdu, OPAL_INFO_LVL_5);
    c->rfc7306 = 1;
    reg_int("rfc7306", "Toward a peer that runs siwarp's software stack too, offer RFC 7306 "
            "(RDMAP extensions) at connection set-up and send the atomics it can express "
            "(64-bit add and compare-and-swap, swap, and, or, and their 32-bit forms) as "
            "Atomic Requests that the peer's library executes without its MPI, also from "
            "the progress thread; the other atomics, and every atomic toward any other "
            "peer, go as BTL messages (0: off, every atomic a message; 1: on)",
            &c->rfc7306, OPAL_INFO_LVL_5);
    c->connect_timeout = 10000;
    reg_int("connect_timeout", "Milliseconds allowed for each connection step: the TCP "
            "connect, an incoming MPA Request or TCP-fallback HELLO, and the wait for the "
            "peer's own connection after losing a simultaneous connect; a peer that misses "
            "it is reported and failed, an incoming connection that misses it closed.  The "
            "peer's answer to our own Request or HELLO is waited for as long as the "
            "connection lives (keepalive at btl_siwarp_llp_timeout): a rank outside MPI "
            "(computing, in MPI_Comm_spawn, in a debugger) answers when it is back "
            "(100-600000)",
            &c->connect_timeout, OPAL_INFO_LVL_5);
    /* every eager message: one that comes whole (or whose rest libsiwarp
     * can read behind it) is then copied once, by ob1, out of the staging
     * buffer, instead of into a receive buffer first (16-32 KiB MPI
     * bandwidth +25-30% on loopback; contrib/PERFORMANCE.md) */
    c->rx_inline = 65536;
    reg_int("rx_inline", "Longest received message (octets) handed to the PML where libsiwarp "
            "read it, without a receive buffer or completion queue round trip; 0: never.  "
            "Only when one thread at a time calls MPI and no progress thread runs (0-65536)",
            &c->rx_inline, OPAL_INFO_LVL_5);
    /* ob1's RDMA Read rendezvous (RGET): the sender waits two small hops
     * for the Read, then spent a CRC pass over the message before its
     * first byte left (contrib/PERFORMANCE.md) */
    c->read_hint = 1;
    reg_bool("read_hint", "When the PML registers a send buffer for the peer to read (ob1's "
             "RDMA Read rendezvous), announce that Read to libsiwarp, which computes its "
             "Response's CRC32c while waiting for it; MPI keeps a send buffer unchanged until "
             "the send completes, when the announcement is withdrawn.  Only over iWARP with "
             "CRC on and markers off, messages of 32 KiB or more",
             &c->read_hint, OPAL_INFO_LVL_5);
    c->progress_thread = 0;
    reg_bool("progress_thread", "Run a thread that progresses libsiwarp (serves incoming "
             "RDMA Reads and Write placement while the application computes)",
             &c->progress_thread, OPAL_INFO_LVL_3);
    c->progress_thread_place = 1;
    reg_bool("progress_thread_place", "Run the progress thread on the nearest core (from Open "
             "MPI's hardware topology) that the rank is not bound to, so that it does not wait "
             "for the rank's own core; false, or a rank that is not bound: where the rank runs",
             &c->progress_thread_place, OPAL_INFO_LVL_5);
    c->fallback = MCA_BTL_SIWARP_FALLBACK_TCP;
    reg_enum("fallback", "What to do with a peer that cannot speak iWARP: tcp (carry its "
             "traffic over framed TCP and warn once) or error (treat it as unreachable)",
             fallback_values, &c->fallback, OPAL_INFO_LVL_3);

    if (OPAL_SUCCESS != mca_btl_siwarp_reg_pvars_register()) {
        /* the BTL works without them: only MPI_T tools lose the counters */
        BTL_VERBOSE(("siwarp: the registration counters are not available through MPI_T"));
    }

    mca_btl_siwarp_param_module = mca_btl_siwarp_module_template;
    return mca_btl_base_param_register(&c->super.btl_version, &mca_btl_siwarp_param_module);
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

int mca_btl_siwarp_params_verify(void)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    mca_btl_base_module_t *b = &mca_btl_siwarp_param_module;
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
    /* a negative value reads as a huge size_t */
    if (c->rcache_limit > ((size_t) 1 << 50)) {
        return bad("btl_siwarp_rcache_limit", (long) c->rcache_limit,
                   "0 (no limit) or 1 byte to 1 PiB");
    }
    if (c->rq_depth < 1 || c->rq_depth > 4096) {
        return bad("btl_siwarp_rq_depth", c->rq_depth, "1 to 4096");
    }
    if (c->srq_size < 0 || c->srq_size > 65536) {
        return bad("btl_siwarp_srq_size", c->srq_size, "0 (off) to 65536");
    }
    if (c->srq_min_credits < 0 || c->srq_min_credits > c->rq_depth) {
        return bad("btl_siwarp_srq_min_credits", c->srq_min_credits,
                   "0 (auto) or 1 to btl_siwarp_rq_depth");
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
    if (c->idle_wait_us < -1 || c->idle_wait_us > 1000000) {
        return bad("btl_siwarp_idle_wait_us", c->idle_wait_us, "-1 to 1000000");
    }
    if (c->idle_quiet < 0 || c->idle_quiet > 1) {
        return bad("btl_siwarp_idle_quiet", c->idle_quiet, "0 or 1");
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
    if ((c->crc | c->markers | c->progress_thread) & ~1) {
        return bad("btl_siwarp_crc/markers/progress_thread",
                   c->crc | c->markers | c->progress_thread, "0 or 1");
    }
    if (c->read_hint & ~1) {
        return bad("btl_siwarp_read_hint", c->read_hint, "0 or 1");
    }
    if (c->if_near & ~1) {
        return bad("btl_siwarp_if_near", c->if_near, "0 or 1");
    }
    if (c->progress_thread_place & ~1) {
        return bad("btl_siwarp_progress_thread_place", c->progress_thread_place, "0 or 1");
    }
    if (c->rx_inline < 0 || c->rx_inline > 65536) {
        return bad("btl_siwarp_rx_inline", c->rx_inline, "0-65536");
    }
    if (c->p2p < -1 || c->p2p > 1) {
        return bad("btl_siwarp_p2p", c->p2p, "-1 (auto), 0 or 1");
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
    if (c->stall_timeout < 1000 || c->stall_timeout > 3600000) {
        return bad("btl_siwarp_stall_timeout", c->stall_timeout, "1000 to 3600000");
    }
    if (c->big_fpdu != 0 && c->big_fpdu != -1 && (c->big_fpdu < 2048 || c->big_fpdu > 65535)) {
        return bad("btl_siwarp_big_fpdu", c->big_fpdu, "0 (off) or 2048 to 65535");
    }
    if (0 != c->rfc7306 && 1 != c->rfc7306) {
        return bad("btl_siwarp_rfc7306", c->rfc7306, "0 (off) or 1 (on)");
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
    if (0 == c->srq_min_credits) {
        c->srq_min_credits = MCA_BTL_SIWARP_SRQ_MIN_AUTO < c->rq_depth
                                 ? MCA_BTL_SIWARP_SRQ_MIN_AUTO : c->rq_depth;
    }
    return OPAL_SUCCESS;
}

