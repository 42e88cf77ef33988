/*
 * siwarp-perftest-main.c - options and main of siwarp-perftest (the
 * exchange itself: siwarp-perftest.c; the data connection:
 * siwarp-perftest-data.c).
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "siwarp-perftest.h"

/* ---- options ---------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
        "usage: siwarp-perftest -t write|read|send [-s size] [-n iters] [-p port]\n"
        "                       [-r rx_depth] [-x tx_depth] [-T sec] [-v] [server-address]\n"
        "  without an address: the server (perftest's ib_*_bw -R <address> connects)\n"
        "  -s/-n must match the peer's; -r the peer's rx depth (send's credit window,\n"
        "  default min(iters, 512) as perftest)\n"
        "  --crc / --no-crc           ask for CRC32c (default: ask)\n"
        "  --p2p read|write|both|none RFC 6581 RTR offered (client) or accepted (server)\n"
        "  --dev NAME                 backend: soft, auto or a verbs device\n");
}

enum { O_CRC = 256, O_NOCRC, O_P2P, O_DEV };

static int parse(int argc, char **argv, struct pt_opts *o)
{
    static const struct option lo[] = {
        { "crc", no_argument, 0, O_CRC }, { "no-crc", no_argument, 0, O_NOCRC },
        { "p2p", required_argument, 0, O_P2P }, { "dev", required_argument, 0, O_DEV },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
    };
    long size = 65536, iters = 1000, rxd = 0, txd = 128;
    int c, verb = -1;

    memset(o, 0, sizeof(*o));
    o->port = "18515";
    o->timeout_s = 20;
    siwarp_conn_param_default(&o->cp);
    while ((c = getopt_long(argc, argv, "t:s:n:p:r:x:T:vh", lo, NULL)) != -1) {
        switch (c) {
        case 't':
            verb = !strcmp(optarg, "write") ? PT_WRITE : !strcmp(optarg, "read") ? PT_READ :
                   !strcmp(optarg, "send") ? PT_SEND : -2;
            break;
        case 's': size = atol(optarg); break;
        case 'n': iters = atol(optarg); break;
        case 'p': o->port = optarg; break;
        case 'r': rxd = atol(optarg); break;
        case 'x': txd = atol(optarg); break;
        case 'T': o->timeout_s = atoi(optarg); break;
        case 'v': o->verbose++; break;
        case O_CRC: o->cp.crc = 1; break;
        case O_NOCRC: o->cp.crc = 0; break;
        case O_P2P:
            o->cp.p2p = strcmp(optarg, "none") != 0;
            o->cp.rtr = !strcmp(optarg, "read") ? SIWARP_RTR_READ :
                        !strcmp(optarg, "write") ? SIWARP_RTR_WRITE :
                        !strcmp(optarg, "both") ? SIWARP_RTR_READ | SIWARP_RTR_WRITE :
                        !strcmp(optarg, "none") ? 0 : -1;
            if (o->cp.rtr < 0)
                return -1;
            break;
        case O_DEV: o->dev = optarg; break;
        default: return -1;
        }
    }
    if (verb < 0 || optind < argc - 1)
        return -1;
    o->verb = (enum pt_verb)verb;
    o->server = optind == argc;
    o->host = o->server ? NULL : argv[optind];
    /* perftest: at least 5 iterations; its tx/rx depths shrink to iters */
    if (size < 1 || size > (1l << 24) || iters < 5 || iters > 1000000 || o->timeout_s <= 0 ||
        txd < 1 || txd > 1024 || rxd < 0 || rxd > 1024)
        return -1;
    if (!rxd)
        rxd = iters < 512 ? iters : 512;
    if (txd > iters)
        txd = iters;
    o->size = (uint32_t)size;
    o->iters = (uint32_t)iters;
    o->rx_depth = (uint32_t)rxd;
    o->tx_depth = (uint32_t)txd;
    return 0;
}

static int resolve(const struct pt_opts *o, struct sockaddr_storage *ss, socklen_t *sl)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
    int rc;

    if (o->server)
        hints.ai_flags |= AI_PASSIVE;
    hints.ai_family = AF_INET;
    rc = getaddrinfo(o->host, o->port, &hints, &res);
    if (rc) {
        fprintf(stderr, "siwarp-perftest: %s: %s\n", o->host ? o->host : "*", gai_strerror(rc));
        return -EINVAL;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sl = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int main(int argc, char **argv)
{
    struct pt_opts o;
    struct pt p;
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse(argc, argv, &o)) {
        usage();
        return 2;
    }
    memset(&p, 0, sizeof(p));
    p.o = &o;
    p.t0 = pt_now_us();
    p.cycle_buffer = 4096;       /* perftest: the page size */
    p.cache_line = 64;           /* perftest: the CPU's cache line */
    if (resolve(&o, &ss, &sl))
        return 2;
    rc = o.dev ? siwarp_ctx_create_dev(o.dev, &p.ctx) : siwarp_ctx_create(&p.ctx);
    if (rc || (rc = siwarp_alloc_pd(p.ctx, &p.pd))) {
        rc = pt_fail(&p, "setup: %s", strerror(-rc));
        pt_release(&p);
        return rc;
    }
    printf("siwarp-perftest: %s %s, %u x %u bytes, backend %s\n", pt_verb_name(o.verb),
           o.server ? "server" : "client", o.iters, o.size, siwarp_ctx_backend(p.ctx));
    rc = pt_run(&p, (struct sockaddr *)&ss, sl);
    pt_release(&p);
    return rc ? 1 : 0;
}
