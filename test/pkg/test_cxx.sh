#!/bin/sh
# test_cxx.sh - siwarp.h from C++: a program that includes it, uses its
# enums and structs and calls the library compiles without a warning under
# g++ -std=c++11 -pedantic, links (extern "C": unmangled names) and runs.
# TAP.

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
CXX=${CXX_FOR_TEST:-g++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_cxx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "1..1"
if ! command -v "$CXX" >/dev/null 2>&1; then
    echo "ok 1 - siwarp.h from C++ # SKIP no $CXX (contrib/setup.sh: g++)"
    exit 0
fi
cat >"$tmp/t.cc" <<'CC'
#include <siwarp/siwarp.h>
#include <cstdio>
#include <cstring>

int main()
{
    siwarp_ctx *ctx = nullptr;
    siwarp_conn_param p;
    siwarp_wc wc;

    std::memset(&wc, 0, sizeof(wc));
    siwarp_conn_param_default(&p);
    if (siwarp_ctx_create(&ctx) != 0 || !ctx)
        return 1;
    if (siwarp_ctx_create(nullptr) >= 0)   // bad input: a negative errno, no crash
        return 1;
    wc.status = SIWARP_WC_LLP_ERR;
    std::printf("%s %s %s\n", siwarp_ctx_backend(ctx), siwarp_wc_status_str(wc.status),
                siwarp_crc32c_impl());
    siwarp_ctx_destroy(ctx);
    return 0;
}
CC
if "$CXX" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$top_srcdir/include" \
        "$tmp/t.cc" -o "$tmp/t" -L"$top_builddir/.libs" -lsiwarp >"$tmp/log" 2>&1 &&
   LD_LIBRARY_PATH=$top_builddir/.libs timeout 20 "$tmp/t" >>"$tmp/log" 2>&1; then
    echo "ok 1 - siwarp.h from C++ (g++ -std=c++11 -pedantic -Werror): $(tail -n 1 "$tmp/log")"
else
    echo "not ok 1 - siwarp.h from C++"
    sed 's/^/# /' "$tmp/log" | head -20
fi
