#!/bin/sh
# ompi5-root.sh - a Debian 13 root with Open MPI 5.0, where siwarp is built
# and tested against BTL interface 3.3 (README: Open MPI 5).
#
#   ompi5-root.sh ensure        make the root if it is missing or broken;
#                               prints its path (the reason on stderr and
#                               exit 1 when it cannot be made here)
#   ompi5-root.sh run CMD...    run CMD inside the root (chroot, as root),
#                               with /proc, /sys, /dev and /dev/shm bound in;
#                               the mounts, and any process left in the root,
#                               are undone on exit, also on failure or signal
#
# The root is made once per machine with mmdebstrap from Debian 13 packages
# (every package of contrib/setup.sh, so setup.sh inside it only unpacks
# Open MPI's source package), under SIWARP_OMPI5_ROOT (default
# /var/cache/siwarp/trixie-ompi5), and kept: a stamp holding the package
# list marks a complete one; a root without it, or made from another list,
# is made again.  One user at a time (flock on the cache directory).
set -u

here=$(cd "$(dirname "$0")" && pwd)
ROOT=${SIWARP_OMPI5_ROOT:-/var/cache/siwarp/trixie-ompi5}
CACHE=$(dirname "$ROOT")
STAMP=$ROOT/.siwarp-root-ok

die() { echo "ompi5-root.sh: $*" >&2; exit 1; }

# why_not: empty when a root can be made here, else the reason
why_not() {
    if [ "$(id -u)" != 0 ]; then echo "not root (chroot and mounts need it)"
    elif ! command -v mmdebstrap >/dev/null 2>&1; then echo "mmdebstrap not installed (contrib/setup.sh)"
    elif ! command -v chroot >/dev/null 2>&1; then echo "chroot not found"
    elif ! mkdir -p "$CACHE" 2>/dev/null; then echo "cannot create $CACHE"
    fi
}

packages() { sh "$here/setup.sh" --list | tr ' ' ','; }

# mounts_under DIR: mount points at or below DIR, deepest first
mounts_under() {
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}

# undo: kill what still runs inside the root (processes we started there),
# then unmount everything below it
undo() {
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && kill -9 "${p#/proc/}" 2>/dev/null
    done
    for m in $(mounts_under "$ROOT"); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
            echo "ompi5-root.sh: could not unmount $m" >&2
    done
}

mount_in() {
    # the root a mount point of its own: `ip netns exec` remounts / inside
    mount --bind "$ROOT" "$ROOT" || return 1
    for d in proc sys dev dev/shm; do
        mkdir -p "$ROOT/$d"
        mount --bind "/$d" "$ROOT/$d" || return 1
    done
    mount -o remount,bind,ro "$ROOT/sys" 2>/dev/null
    # name resolution for apt inside the root
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null
    return 0
}

ensure() {
    why=$(why_not)
    [ -z "$why" ] || die "$why"
    want=$(packages)
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] &&
       chroot "$ROOT" ompi_info -V >/dev/null 2>&1; then
        return 0
    fi
    echo "ompi5-root.sh: making $ROOT (Debian 13, Open MPI 5)" >&2
    undo
    rm -rf "$ROOT" "$ROOT.new"
    start=$(date +%s)
    mmdebstrap --variant=apt --include="$want" trixie "$ROOT.new" >&2 ||
        { rm -rf "$ROOT.new"; die "mmdebstrap trixie failed"; }
    mv "$ROOT.new" "$ROOT"
    # setup.sh inside: every package is there; it adds Open MPI's source
    run_in sh -c 'cd / && sh /siwarp-setup.sh' >&2 || die "setup.sh failed inside the root"
    echo "$want" > "$STAMP"
    echo "ompi5-root.sh: root made in $(( $(date +%s) - start )) s" >&2
}

# run_in CMD...: CMD in the root, mounts undone afterwards
run_in() {
    cp "$here/setup.sh" "$ROOT/siwarp-setup.sh"
    undo    # what a run killed before its traps ran may have left
    trap 'undo' EXIT
    trap 'undo; exit 130' INT TERM HUP
    mount_in || { undo; die "bind mounts into $ROOT failed"; }
    chroot "$ROOT" "$@"
    rc=$?
    undo
    trap - EXIT INT TERM HUP
    return $rc
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    ensure|run)
        why=$(why_not)
        [ -z "$why" ] || die "$why"
        # one user of the root at a time: fd 9 holds the lock until exit
        exec 9>"$CACHE/.lock"
        command -v flock >/dev/null 2>&1 && flock 9
        if [ "$cmd" = ensure ]; then
            ensure && echo "$ROOT"
        else
            [ -f "$STAMP" ] || die "no root at $ROOT (ompi5-root.sh ensure)"
            run_in "$@"
        fi
        ;;
    *)
        echo "usage: ompi5-root.sh ensure | run CMD..." >&2
        exit 2
        ;;
esac
