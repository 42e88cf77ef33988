/*
 * auth.h - the primitives both adapters' connection handshakes are made
 * of (btl_siwarp_auth.c, uct_siwarp_auth.c): a fresh random value, an
 * HMAC-SHA256 over a label and message parts, its constant-time check,
 * the source address of a refused peer, and the gate that keeps refusals
 * from flooding a job's output.
 *
 * What each adapter signs, and with which key, stays with it: the BTL's
 * pair key comes from Open MPI's modex, the UCT transport's from the
 * iface address UCP exchanges.  Only the building blocks live here, once.
 * Not part of libsiwarp (which needs no crypto): libswpauth, linked by
 * the two adapters with nettle.
 */
#ifndef SWP_AUTH_H
#define SWP_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>

#define SWP_AUTH_MAC_LEN 32     /* HMAC-SHA256, untruncated */

/* one part of a signed message */
struct swp_auth_part {
    const void *p;
    size_t len;
};

/* buf[0..len) from the kernel's CSPRNG (getrandom); 0 or -errno */
int swp_auth_random(void *buf, size_t len);

/* mac = HMAC-SHA256(key, label[0..4) || parts[0] || ... || parts[n-1]).
 * The label, four octets with its NUL ("REQ", "REP", "FIN"), keeps a
 * mac of one message from standing in for another's; NULL: none (a key
 * derivation, whose label is a part of its own length).  Parts of length
 * 0 add nothing. */
void swp_auth_mac(const uint8_t *key, size_t key_len, const char label[4],
                  const struct swp_auth_part *parts, unsigned nparts,
                  uint8_t mac[SWP_AUTH_MAC_LEN]);

/* 1 when a[0..len) equals b[0..len), in time independent of where they
 * differ (a mac compared with memcmp leaks how much of it was right) */
int swp_auth_equal(const uint8_t *a, const uint8_t *b, size_t len);

/* zero a secret so that the compiler keeps the stores */
void swp_auth_wipe(void *p, size_t len);

/* "192.0.2.1:5000" or "[2001:db8::1]:5000"; "an unknown address" else */
void swp_auth_addr_str(const struct sockaddr *sa, char *buf, size_t len);

/* At most one refusal warning every `every_s` seconds, with a count of
 * those left out: a stranger knocking all the time must not flood the
 * job's output or its disk. */
struct swp_auth_warn_gate {
    time_t last;                /* 0: never warned */
    unsigned skipped;
};

/* 1: warn now, *skipped is how many were left out since the last one
 * (the gate restarts); 0: leave this one out (counted) */
int swp_auth_warn_due(struct swp_auth_warn_gate *g, time_t now, unsigned every_s,
                      unsigned *skipped);

#endif
