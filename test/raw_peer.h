/*
 * raw_peer.h - a siwarp QP whose peer is the test itself: the test's end
 * of a socketpair writes hand-built FPDUs (good and broken) and reads what
 * the QP sends back.  The QP's registered region sits between canaries
 * that nothing may touch.  Used by test_rx_errors (RFC 5040/5041/5044
 * violations) and test_atomic_errors (RFC 7306).
 */
#ifndef SWP_TEST_RAW_PEER_H
#define SWP_TEST_RAW_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)
#define REGION 8192
#define CANARY 4096

struct peer {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd, *pd2;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    int raw;                       /* the test's end of the socketpair */
    uint8_t *map;                  /* canary | region | canary */
    uint8_t *region;
    struct siwarp_mr *mr;          /* ACC_ALL over region */
    struct siwarp_mr *kept[4];     /* more MRs, deregistered by peer_teardown */
    struct siwarp_srq *srq;        /* peer_setup_srq: the QP's receive queue */
    bool crc, markers;
};

/* a QP (the initiator; the raw peer plays the responder) over a socketpair,
 * as if MPA had agreed crc and markers; IRD/ORD 4 */
void peer_setup(struct peer *p, bool crc, bool markers);
/* ... in P2P mode with RTR type rtr (IRD/ORD 1) */
void peer_setup_p2p(struct peer *p, bool crc, bool markers, int rtr);
/* siwarp: the raw peer passes for siwarp (as its Reply's reserved bit would) */
void peer_setup_nego(struct peer *p, bool crc, bool markers, int rtr, bool siwarp);
/* ... taking ULPDUs of up to max_ulpdu octets (peer_setup: 16,384), and
 * its receives from a shared receive queue of srq_max WQEs (p->srq), as
 * btl_siwarp's QPs take theirs (0: from its own receive queue) */
void peer_setup_rx(struct peer *p, bool crc, uint32_t srq_max, uint32_t max_ulpdu);
void canaries_intact(struct peer *p);
/* release what peer_setup made and the MRs given to peer_keep_mr (a case
 * deregisters any other MR it added) */
void peer_teardown(struct peer *p);
/* mr (of p->pd or p->pd2) is deregistered by peer_teardown */
void peer_keep_mr(struct peer *p, struct siwarp_mr *mr);
/* one FPDU with the given ULPDU (header + payload) at f; its length */
uint32_t build_fpdu(struct peer *p, uint8_t *f, const uint8_t *ulpdu, uint32_t len, bool bad_crc);
/* ... written to the QP */
void raw_fpdu(struct peer *p, const uint8_t *ulpdu, uint32_t len, bool bad_crc);
uint32_t tagged(uint8_t *h, unsigned op, bool last, uint32_t stag, uint64_t to);
uint32_t untagged(uint8_t *h, unsigned op, bool last, uint32_t qn, uint32_t msn, uint32_t mo);
/* progress until the QP is in ERROR; the Terminate it sent back (0: none),
 * its header-control flags in *flags_out */
uint32_t wait_error_read_term(struct peer *p, uint8_t *flags_out);
/* that Terminate is want, with (hdr_copied) the offending header in it,
 * and the canaries intact */
void expect_term_hdr(struct peer *p, uint32_t want, bool hdr_copied);
void expect_term(struct peer *p, uint32_t want);

#define T_DDP_TAG(c)   SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, c)
#define T_DDP_UNT(c)   SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, c)
#define T_RDMAP(et, c) SWP_TERM(SWP_TERM_LAYER_RDMAP, et, c)

#endif /* SWP_TEST_RAW_PEER_H */
