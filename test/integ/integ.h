/*
 * integ.h - helpers for the two-process integration tests.
 *
 * Every test forks: the parent is the server (listens, accepts, drives the
 * schedule), the child the client.  The server hands the port to the child
 * through a pipe (never a sleep).  Failures print a "# " line saying what
 * went wrong first and return -1; the TEST body asserts on the result.
 *
 * A schedule is a list of steps.  For each step the server prepares its
 * side (posts the receive, fills or clears its buffer, registers an MR to be
 * invalidated) and only then sends the client a GO message over a Send; the
 * client performs the operation, and for Write/Read follows with a CHECK
 * Send so the server knows the step is over.  Data is a seeded pattern,
 * verified byte for byte, with canaries around every target buffer.
 */
#ifndef SWP_TEST_INTEG_H
#define SWP_TEST_INTEG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "siwarp/siwarp.h"

/* Default per-wait deadline in ms (override with SWP_INTEG_TIMEOUT_MS). */
#define INTEG_TIMEOUT_MS 60000

#define INTEG_FAIL(...) integ_fail(__FILE__, __LINE__, __VA_ARGS__)
#define INTEG_CHECK(c) do { \
        if (!(c)) { INTEG_FAIL("check failed: %s", #c); return -1; } \
    } while (0)
#define INTEG_CHECK_RC(x) do { int rc_ = (x); \
        if (rc_ < 0) { INTEG_FAIL("%s = %d (%s)", #x, rc_, strerror(-rc_)); return -1; } \
    } while (0)

void integ_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int integ_timeout_ms(void);
uint64_t integ_now_ms(void);

/* ---- data pattern ---------------------------------------------------------- */

/* Byte i of the stream for `seed` is a pure function of (seed, i), so any
 * slice [off, off+len) can be filled and checked independently. */
void integ_fill(void *p, size_t len, uint64_t seed, uint64_t off);
/* Index of the first byte that differs, or -1. */
long long integ_check(const void *p, size_t len, uint64_t seed, uint64_t off);
/* Index of the first byte != c, or -1. */
long long integ_check_byte(const void *p, size_t len, uint8_t c);

/* ---- configuration ------------------------------------------------------- */

struct integ_cfg {
    struct siwarp_conn_param cp;   /* what the client asks for */
    int srv_crc, srv_markers;      /* what the server asks for on accept */
    int family;                    /* AF_INET (default) or AF_INET6 */
    const char *addr;              /* server address; default loopback */
    const char *srv_netns;         /* /var/run/netns names, or NULL */
    const char *cli_netns;
    uint64_t max_size;             /* largest step size */
};
void integ_cfg_default(struct integ_cfg *c);
/* "crc=1 markers=0 mpa=2 p2p=read" for messages */
const char *integ_cfg_str(const struct integ_cfg *c, char *buf, size_t len);

/* ---- one endpoint ---------------------------------------------------------- */

struct integ_ep {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_listener *l;
    struct siwarp_mr *mr;
    uint8_t *buf;
    size_t len;
    int is_server;
};

int  integ_ep_init(struct integ_ep *e, size_t buflen, uint32_t sq, uint32_t rq);
void integ_ep_fini(struct integ_ep *e);
uint32_t integ_lkey(const struct integ_ep *e);
int  integ_listen(struct integ_ep *e, const struct integ_cfg *c, uint16_t *port);
/* Wait for a request, accept it (echoing what the client asked for, with the
 * server's own crc/markers), wait for RTS. */
int  integ_accept(struct integ_ep *e, const struct integ_cfg *c, const void *pd,
                  uint16_t pd_len);
int  integ_connect(struct integ_ep *e, const struct integ_cfg *c, uint16_t port);
/* One completion (any), progressing while waiting.  -ETIMEDOUT. */
int  integ_poll1(struct integ_ep *e, struct siwarp_wc *wc, int timeout_ms);
/* Progress until the QP state is `st`; with st == -1 until it is neither
 * RTS nor CONNECTING; with INTEG_ST_NOT_CONNECTING until it left IDLE and
 * CONNECTING (RTS, or an error that came right after). */
#define INTEG_ST_NOT_CONNECTING (-2)
int  integ_wait_state(struct integ_ep *e, int st, int timeout_ms,
                      struct siwarp_qp_attr *attr);
/* Check that the negotiated parameters match what cfg asked for. */
int  integ_check_nego(struct integ_ep *e, const struct integ_cfg *c);

/* ---- two processes ---------------------------------------------------------- */

/* Fork.  The child enters cfg->cli_netns, waits for the port the server
 * announces and runs client(); the parent enters cfg->srv_netns and runs
 * server(), which must call integ_announce() once it listens.  Returns 0
 * when both returned 0. */
typedef int (*integ_srv_fn)(const struct integ_cfg *c, void *arg, int announce_fd);
typedef int (*integ_cli_fn)(const struct integ_cfg *c, void *arg, uint16_t port);
int  integ_pair(const struct integ_cfg *c, integ_srv_fn server, integ_cli_fn client,
                void *arg);
int  integ_announce(int fd, uint16_t port);
int  integ_enter_netns(const char *name);

/* ---- schedules -------------------------------------------------------------- */

enum integ_op {
    I_SEND, I_SEND_SE, I_SEND_INV, I_SEND_SE_INV, I_WRITE, I_READ,
    I_FENCE,        /* Read into D, then a fenced Send of D: data must be the Read's */
    I_OP_COUNT
};

struct integ_step {
    enum integ_op op;
    uint64_t size;
    int nsge;          /* 0 or 1: one SGE; up to 4 */
    int unsignaled;    /* Send / Write only */
};

extern const char *const integ_op_name[I_OP_COUNT];

/* Run steps[0..n) between two processes with cfg.  0 or -1. */
int integ_run(const struct integ_cfg *c, const struct integ_step *steps, int n);
/* Append op x sizes (x nsge) to steps; returns the new count. */
int integ_add(struct integ_step *steps, int n, enum integ_op op,
              const uint64_t *sizes, int nsizes, int nsge, int unsignaled);

#endif /* SWP_TEST_INTEG_H */
