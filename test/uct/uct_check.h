/*
 * uct_check.h - what uct_check.c's harness gives the checks in other files
 * of the uct_check program.
 */
#ifndef UCT_CHECK_H
#define UCT_CHECK_H

#include <uct/api/uct.h>

#define AM_ID     3
#define BIG       (1u << 20)
#define WAIT_SEC  20

typedef struct {
    uct_iface_h iface;
    uct_iface_attr_t attr;
    void *dev_addr, *iface_addr;
} side_t;

typedef struct {
    void *buf;
    size_t len;
    uct_mem_h memh;
    uct_rkey_bundle_t rkey;
} region_t;

extern uct_worker_h worker;

void check(int cond, const char *what);
void skip_check(const char *what, const char *why);
double now(void);
ucs_status_t flush_ep(uct_ep_h ep);
int open_side(uct_md_h md, uct_iface_config_t *cfg, const char *dev, side_t *s);

/* retry an operation while it says NO_RESOURCE, progressing between */
#define RETRY(_st, _call) \
    do { \
        double _end = now() + WAIT_SEC; \
        while (((_st) = (_call)) == UCS_ERR_NO_RESOURCE && now() < _end) \
            uct_worker_progress(worker); \
    } while (0)

/* uct_check.c: 1 if this process runs libsiwarp's software stack, 0 on a
 * verbs device */
int soft_backend(void);

/* uct_check_conn.c: A and B are open, ep_ab connects A to B */
void test_conn(uct_md_h md, uct_iface_config_t *cfg, const char *dev, side_t *a, side_t *b,
               uct_ep_h ep_ab, region_t *src, region_t *dst);

/* uct_check_strangers.c: B refuses strangers and replays */
void test_strangers(const side_t *b, region_t *dst);

#endif
