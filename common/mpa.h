/*
 * mpa.h - MPA connection setup: decoded Request/Reply frames and the pure
 * negotiation rules of RFC 5044 section 7.1 and RFC 6581.  No I/O here;
 * cm.c drives the sockets and calls these.  The frame builders and the
 * header parser are declared in swp.h (swp_mpa_build_rr, ...).
 */
#ifndef SWP_MPA_H
#define SWP_MPA_H

#include <stdbool.h>
#include <stdint.h>

#include "swp.h"

#define SWP_MPA_RR_HDR_LEN     ((uint32_t)sizeof(struct swp_mpa_rr))   /* 20 */
#define SWP_MPA_RR_MAX_LEN     (SWP_MPA_RR_HDR_LEN + SWP_MPA_MAX_PD)   /* 532 */
#define SWP_MPA_V2_BLOCK_LEN   ((uint16_t)sizeof(struct swp_mpa_v2_ird_ord))
#define SWP_MPA_ULPDU_MAX      65535u   /* RFC 5044 4.1: 16-bit ULPDU_Length */
#define SWP_MPA_IRD_ORD_MAX    SWP_MPA_V2_IRD_ORD_MASK
#define SWP_MPA_DEFAULT_MSS    536u     /* when the socket cannot tell */
#define SWP_MPA_DEFAULT_TIMEOUT_MS 10000

/*
 * siwarp-to-siwarp big-FPDU signalling, carried in the 4 reserved bits of
 * the flags byte (RFC 5044 7.1: "Res", sent as zero by others, not checked
 * by receivers).  Private data is left alone: applications of every peer
 * see exactly the bytes their peer's application gave.
 *
 *   request:  bits 3..1 = class k (1..7) of the initiator's receive limit,
 *             bit 0 = 0.  Sent only when conn_param.big_fpdu asks for it.
 *   reply:    bit 0 = 1 ("I am siwarp"), bits 3..1 = the responder's class
 *             (0: siwarp, but no big FPDUs).  Sent only in answer to a
 *             request carrying a class.
 *
 * Linux siw echoes the request's reserved bits into its reply (siw-vm
 * README), which leaves bit 0 clear: an echo is never taken for a siwarp
 * answer.  Hardware responders send zero.  Class k means "I accept ULPDUs
 * up to swp_mpa_big_limit(k) octets".
 */
#define SWP_MPA_SIWARP_REPLY   0x01
#define SWP_MPA_BIG_SHIFT      1
#define SWP_MPA_BIG_MASK       0x0e
#define SWP_MPA_SIWARP_BITS    0x0f

/*
 * RFC 7306 between siwarp peers, in the same four bits.  RFC 7306 leaves
 * it to the ULP to know that the peer takes the new opcodes; siwarp peers
 * agree on it here, and toward anybody else nothing on the wire changes.
 *
 *   request:  all four bits set, 0x0f: "siwarp initiator, offers RFC 7306,
 *             takes ULPDUs up to 65535 (class 7)".  No earlier siwarp sends
 *             it (a request's bit 0 was always clear, and class 7 never
 *             sent), and it reads it as "not siwarp".  Sent only when
 *             conn_param.rfc7306 asks for it.
 *   reply:    a siwarp reply (bit 0 set, the responder's class 0..6, as
 *             above) to that request: RFC 7306 accepted.  A reply of 0x0f
 *             cannot be a siwarp reply (no siwarp announces class 7): it is
 *             siw echoing our request, and means neither siwarp nor RFC
 *             7306.  Anything else (0: hardware, an older siwarp) declines.
 */
#define SWP_MPA_RFC7306_OFFER  0x0f

uint32_t swp_mpa_big_limit(unsigned cls);
unsigned swp_mpa_big_class(uint32_t bytes);   /* largest class <= bytes, or 0 */

/* A Request or Reply frame, decoded and checked for structure. */
struct swp_mpa_rr_info {
    bool reply;
    int rev;
    uint8_t flags;              /* raw flags byte */
    bool markers, crc, reject;
    bool enhanced;              /* rev 2 with the enhanced flag: IRD/ORD block */
    uint16_t ird, ord;          /* 14-bit values (enhanced only) */
    bool p2p;                   /* IRD word bit 15 */
    int rtr;                    /* SIWARP_RTR_* bits present in the words */
    unsigned big_class;         /* siwarp class, 0 if none */
    bool siwarp;                /* peer proved it is siwarp */
    bool rfc7306;               /* request: RFC 7306 offered */
    const uint8_t *pd;          /* application private data (block stripped) */
    uint16_t pd_len;
};

/* Parse a complete frame of exactly `len` octets.  0, or -EPROTO (key,
 * short frame, enhanced frame without its IRD/ORD block), -EMSGSIZE
 * (private data over 512), -EPROTONOSUPPORT (revision other than 1 or 2). */
int swp_mpa_parse_rr(const uint8_t *in, size_t len, bool reply,
                     struct swp_mpa_rr_info *info);

/* Build the Request for `p` (its mpa_rev/markers after any fallback).
 * Returns the frame length or a negative errno. */
int swp_mpa_build_request(uint8_t *out, size_t outlen, const struct siwarp_conn_param *p);

/*
 * Responder: decide the answer to `req` with our parameters.  On success
 * fills *nego and returns 0; build the Reply with swp_mpa_build_reply.  On
 * refusal returns a negative errno, sets *why, and *send_reject tells
 * whether an MPA Reply with the Reject flag should be sent before closing
 * (RFC 5044 7.1.1) rather than just closing (RFC 5044 7.1: an unsupported
 * revision closes the connection).
 */
int swp_mpa_nego_responder(const struct siwarp_conn_param *ours,
                           const struct swp_mpa_rr_info *req, uint32_t mss,
                           struct swp_nego *nego, bool *send_reject, const char **why);
/* Reply frame for an accepted request (nego from swp_mpa_nego_responder). */
int swp_mpa_build_reply(uint8_t *out, size_t outlen, const struct swp_nego *nego,
                        const struct swp_mpa_rr_info *req, uint32_t our_big_fpdu,
                        const void *pd, uint16_t pd_len);
/* Reject reply in the request's revision (1 or 2). */
int swp_mpa_build_reject(uint8_t *out, size_t outlen, const struct swp_mpa_rr_info *req,
                         const struct siwarp_conn_param *ours, const void *pd, uint16_t pd_len);

/*
 * Initiator: check the Reply `rep` to the Request we built from `sent`.
 * 0 and *nego filled, or:
 *   -ECONNREFUSED  the Reject flag (private data in rep->pd)
 *   -EPROTO        bad values (revision mismatch, RTR not offered, ...)
 *   -EOPNOTSUPP    markers not granted symmetrically
 * with *why set.
 */
int swp_mpa_nego_initiator(const struct siwarp_conn_param *sent,
                           const struct swp_mpa_rr_info *rep, uint32_t mss,
                           struct swp_nego *nego, const char **why);

/* conn_param with library defaults filled in for zero fields. */
void swp_mpa_param_fixup(struct siwarp_conn_param *p);

/* ---- connection manager internals shared by cm.c and cm_listen.c ------------ */

struct sockaddr_storage;
/* "192.0.2.1:7174" or "[2001:db8::1]:7174" */
const char *swp_cm_addr_str(const struct sockaddr *sa, char *buf, size_t len);
/* Responder: take over the accepted socket `fd` for `qp` (IDLE, nego
 * already filled), send the Reply frame `rep` and go to RTS once it has
 * left.  On failure the QP goes to ERROR; fd is always consumed.
 * llp_preset_ms: the LLP timeout fd already has from its listener. */
int swp_cm_start_reply(struct siwarp_qp *qp, int fd, const struct sockaddr *peer,
                       socklen_t peer_len, const uint8_t *rep, uint32_t rep_len,
                       int timeout_ms, int llp_timeout_ms, int llp_preset_ms);
/* TCP_MAXSEG of a connected socket, or a default. */
uint32_t swp_cm_mss(int fd);

#endif /* SWP_MPA_H */
