/*
 * fuzz_term.c - libFuzzer harness for Terminate messages (rdmap.c:
 * swp_rdmap_parse_term, swp_rdmap_build_term, swp_term_str and the public
 * siwarp_term_str) and the DDP/RDMAP control check (ddp.c).
 *
 * Input: a Terminate ULPDU as it would follow the ULPDU_Length field
 * (untagged DDP header, Terminate control, optional copied header).
 *
 * Invariants (abort() = a finding):
 *   - parsing never reads past `len` (ASan), fails exactly when len is
 *     shorter than the fixed part;
 *   - every code decodes to a NUL-terminated string shorter than its buffer,
 *     naming the layer, also into small buffers;
 *   - building a Terminate for the parsed code, with the input as the
 *     offending header, stays within SWP_TERM_MAX_LEN and parses back to
 *     the same code; the copied header is a prefix of the input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swp.h"

static void die(const char *what, long v)
{
    fprintf(stderr, "fuzz_term: invariant violated: %s (%ld)\n", what, v);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *in, msg[SWP_TERM_MAX_LEN + 64];
    uint32_t term = 0, back = 0, len;
    char small[24];
    const char *s;
    int rc;

    /* an exact-size copy, so ASan sees every read past the end */
    in = malloc(size ? size : 1);
    if (!in)
        return 0;
    memcpy(in, data, size);
    rc = swp_rdmap_parse_term(in, (uint32_t)size, &term);
    if ((rc == 0) != (size >= SWP_HDR_TERMINATE))
        die("parse result does not follow the length", (long)size);
    if (rc < 0) {
        /* still decode whatever 16 bits the input gives */
        term = size >= 2 ? (uint32_t)(in[0] << 8 | in[1]) : 0;
    }
    if (size >= sizeof(struct swp_ctrl))
        (void)swp_ddp_check_ctrl((const struct swp_ctrl *)in, in[0] & 1);

    s = siwarp_term_str(term);
    if (!s || strlen(s) >= 128 || !strstr(s, "layer"))
        die("siwarp_term_str", (long)term);
    for (size_t n = 0; n <= sizeof(small); n += 7) {
        memset(small, 0x5a, sizeof(small));
        s = swp_term_str(term, small, n);
        if (n && strnlen(small, n) >= n)
            die("swp_term_str not terminated", (long)n);
    }

    /* RFC 5040 4.8: the input as the offending FPDU (from ULPDU_Length on) */
    memset(msg, 0xee, sizeof(msg));
    len = swp_rdmap_build_term(msg, 1, term, in, (uint32_t)size);
    if (len < SWP_HDR_TERMINATE || len > SWP_TERM_MAX_LEN)
        die("built Terminate length", len);
    for (size_t i = len; i < sizeof(msg); i++)
        if (msg[i] != 0xee)
            die("build wrote past the Terminate it returned", (long)i);
    if (swp_rdmap_parse_term(msg, len, &back) < 0 || back != (term & 0xffff))
        die("Terminate does not parse back to its code", (long)back);
    if (len > SWP_HDR_TERMINATE) {
        if (SWP_TERM_LAYER(term) == SWP_TERM_LAYER_LLP)
            die("LLP Terminate copied an untrusted header", (long)len);
        if (len - SWP_HDR_TERMINATE > size ||
            memcmp(msg + SWP_HDR_TERMINATE, in, len - SWP_HDR_TERMINATE))
            die("copied header is not the offending header", (long)len);
    }
    free(in);
    return 0;
}
