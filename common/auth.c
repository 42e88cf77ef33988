/*
 * auth.c - handshake primitives shared by the BTL and the UCT transport
 * (auth.h).  nettle provides HMAC-SHA256 and the constant-time compare.
 */
#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

int swp_auth_random(void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = getrandom((uint8_t *)buf + got, len - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        got += (size_t)n;
    }
    return 0;
}

void swp_auth_mac(const uint8_t *key, size_t key_len, const char label[4],
                  const struct swp_auth_part *parts, unsigned nparts,
                  uint8_t mac[SWP_AUTH_MAC_LEN])
{
    struct hmac_sha256_ctx h;

    hmac_sha256_set_key(&h, key_len, key);
    if (label != NULL)
        hmac_sha256_update(&h, 4, (const uint8_t *)label);
    for (unsigned i = 0; i < nparts; i++) {
        if (parts[i].len != 0)
            hmac_sha256_update(&h, parts[i].len, parts[i].p);
    }
    hmac_sha256_digest(&h, SWP_AUTH_MAC_LEN, mac);
    swp_auth_wipe(&h, sizeof(h));       /* it holds the key's pads */
}

int swp_auth_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    return memeql_sec(a, b, len) != 0;
}

void swp_auth_wipe(void *p, size_t len)
{
    volatile uint8_t *v = p;

    for (size_t i = 0; i < len; i++)
        v[i] = 0;
}

void swp_auth_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN];

    if (sa != NULL && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)) != NULL) {
            snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
            return;
        }
    } else if (sa != NULL && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip)) != NULL) {
            snprintf(buf, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
            return;
        }
    }
    snprintf(buf, len, "an unknown address");
}

/* refusals come from the main thread and from libsiwarp's progress
 * thread (a first message that fails its proof): one lock for all gates,
 * taken only when a connection is refused */
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;

int swp_auth_warn_due(struct swp_auth_warn_gate *g, time_t now, unsigned every_s,
                      unsigned *skipped)
{
    int due = 0;

    pthread_mutex_lock(&warn_lock);
    if (g->last != 0 && now - g->last < (time_t)every_s) {
        g->skipped++;
    } else {
        *skipped = g->skipped;
        g->last = now;
        g->skipped = 0;
        due = 1;
    }
    pthread_mutex_unlock(&warn_lock);
    return due;
}
