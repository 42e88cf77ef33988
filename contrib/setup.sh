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

if [ -z "$missing" ]; then
    echo "setup.sh: all packages already installed"
    exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
    else
        echo "setup.sh: need root to install:$missing" >&2
        exit 1
    fi
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
echo "setup.sh: done"
