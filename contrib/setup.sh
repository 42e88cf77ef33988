#!/bin/sh
# setup.sh - install every Debian 12 package siwarp needs (build, tests,
# benchmarks, plots, trace checks).  Idempotent: does nothing when all are
# already installed.  Run as root (or with sudo available).
#
# This is the one list of the project's system packages; add new ones here.
PACKAGES="
build-essential autoconf automake libtool pkg-config
libopenmpi-dev openmpi-bin
libevent-dev libhwloc-dev liburing-dev libibverbs-dev librdmacm-dev nettle-dev
tshark iproute2 nftables
clang libclang-rt-14-dev valgrind
gnuplot-nox python3
iperf3 qperf libfabric-bin
libucx-dev ucx-utils dpkg-dev
"

set -e

missing=
for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        "install ok installed") ;;
        *) missing="$missing $p" ;;
    esac
done

# uct_siwarp needs UCX's internal headers, which libucx-dev does not ship:
# take them from Debian's own source package of the installed libucx0
# (m4/siwarp_ucx.m4 checks the version), unpacked into uct_siwarp/ucx-src.
# The deb-src entries are derived from the system's own deb entries, so no
# mirror is named here.
ucx_source() {
    top=$(cd "$(dirname "$0")/.." && pwd)
    dest=$top/uct_siwarp/ucx-src
    ver=$(dpkg-query -W -f='${source:Version}' libucx0 2>/dev/null || true)
    [ -n "$ver" ] || { echo "setup.sh: libucx0 not installed, no UCX source" >&2; return 1; }
    if [ -f "$dest/debian/changelog" ] &&
       [ "$(dpkg-parsechangelog -l "$dest/debian/changelog" -S Version 2>/dev/null)" = "$ver" ]; then
        return 0
    fi
    if ! apt-cache showsrc ucx 2>/dev/null | grep -qx "Version: $ver"; then
        echo "setup.sh: enabling deb-src entries (from the deb ones) for ucx $ver"
        if [ -f /etc/apt/sources.list.d/debian.sources ]; then
            sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
                $SUDO tee /etc/apt/sources.list.d/siwarp-deb-src.sources >/dev/null
        elif [ -f /etc/apt/sources.list ]; then
            grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' |
                $SUDO tee /etc/apt/sources.list.d/siwarp-deb-src.list >/dev/null
        fi
        $SUDO apt-get update </dev/null
    fi
    tmp=$(mktemp -d)
    # apt-get source runs dpkg-source -x (dpkg-dev): the patched tree
    if ! (cd "$tmp" && apt-get source "ucx=$ver" </dev/null >"$tmp/log" 2>&1); then
        cat "$tmp/log" >&2
        rm -rf "$tmp"
        echo "setup.sh: apt-get source ucx=$ver failed" >&2
        return 1
    fi
    rm -rf "$dest"
    mv "$tmp"/ucx-*/ "$dest"
    rm -rf "$tmp"
    echo "setup.sh: Debian's ucx $ver source in $dest"
}

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
    elif [ -n "$missing" ]; then
        echo "setup.sh: need root to install:$missing" >&2
        exit 1
    fi
fi

if [ -z "$missing" ]; then
    echo "setup.sh: all packages already installed"
    ucx_source
    exit 0
fi

echo "setup.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no, silently.
echo "wireshark-common wireshark-common/install-setuid boolean false" |
    $SUDO debconf-set-selections 2>/dev/null || true
# iperf3 asks whether to run a system-wide server; the benchmark starts its own.
echo "iperf3 iperf3/start_daemon boolean false" |
    $SUDO debconf-set-selections 2>/dev/null || true
$SUDO apt-get update </dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y --no-install-recommends $missing </dev/null
ucx_source
echo "setup.sh: done"
