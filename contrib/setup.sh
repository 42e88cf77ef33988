#!/bin/sh
# setup.sh - install every Debian package siwarp needs (build, tests,
# benchmarks, plots, trace checks), on Debian 12 (Open MPI 4.1) or Debian 13
# (Open MPI 5.0).  Idempotent: does nothing when all are already installed.
# Run as root (or with sudo available).  `setup.sh --list` prints the list.
#
# This is the one list of the project's system packages; add new ones here.
# (libclang-rt-dev: the compiler-rt of the release's default clang.
# mmdebstrap: the Debian 13 root of the Open MPI 5 tests, contrib/ompi5-root.sh.
# lammps, lammps-examples: the application run of contrib/bench-oversub.sh.)
PACKAGES="
build-essential autoconf automake libtool pkg-config
libopenmpi-dev openmpi-bin
libevent-dev libhwloc-dev liburing-dev libibverbs-dev librdmacm-dev nettle-dev
tshark iproute2 nftables
clang libclang-rt-dev valgrind
gnuplot-nox python3
iperf3 qperf libfabric-bin
lammps lammps-examples
libucx-dev ucx-utils dpkg-dev
debhelper lintian mmdebstrap
"

set -e

if [ "${1:-}" = "--list" ]; then
    echo $PACKAGES
    exit 0
fi

# ompi_source: Open MPI 5's libopenmpi-dev (Debian 13) lacks internal
# headers the BTL needs (the threads and timer components'); configure
# takes them from the same version's Debian source package, unpacked as
# /usr/src/openmpi-VERSION (m4/siwarp_ompi.m4).  Needs deb-src entries: made
# from the system's own deb entries when there are none.
ompi_source() {
    v=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null) || return 0
    u=${v#*:}; u=${u%-*}
    case $u in 5.*) ;; *) return 0 ;; esac
    [ -f "/usr/src/openmpi-$u/opal/mca/btl/btl.h" ] && return 0
    echo "setup.sh: Open MPI $u: unpacking its Debian source into /usr/src (internal headers)"
    if ! apt-get source --print-uris "openmpi=$v" >/dev/null 2>&1; then
        src=/etc/apt/sources.list.d/siwarp-deb-src.list
        cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            sed -n 's/^deb \(.*\)/deb-src \1/p' | $SUDO tee "$src" >/dev/null
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            sed 's/^Types:.*/Types: deb-src/' "$f" |
                $SUDO tee "/etc/apt/sources.list.d/siwarp-src-$(basename "$f")" >/dev/null
        done
        $SUDO apt-get update </dev/null
    fi
    $SUDO mkdir -p /usr/src
    (cd /usr/src && $SUDO apt-get source -q "openmpi=$v" </dev/null)
    [ -f "/usr/src/openmpi-$u/opal/mca/btl/btl.h" ] || {
        echo "setup.sh: apt-get source openmpi=$v did not give /usr/src/openmpi-$u" >&2
        exit 1
    }
}

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
    # libucx0 (Debian 12) or libucx0t64 (Debian 13, after the 64-bit time_t move)
    ver=$(dpkg-query -W -f='${source:Version}\n' libucx0 libucx0t64 2>/dev/null | head -n 1 || true)
    case $ver in
    1.13.*) ;;
    *)  # uct_siwarp builds against UCX 1.13 only (m4/siwarp_ucx.m4): no source needed
        echo "setup.sh: UCX ${ver:-not installed}: uct_siwarp is built against 1.13 only; no UCX source"
        return 0 ;;
    esac
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
    ompi_source
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
ompi_source
echo "setup.sh: done"
