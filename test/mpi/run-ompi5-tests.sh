#!/bin/sh
# run-ompi5-tests.sh - siwarp against Open MPI 5.0 (BTL interface 3.3) in a
# Debian 13 root (contrib/ompi5-root.sh), TAP output.  A long suite of
# test/run-tests.sh.
#
# Copies this tree's files (git's list, the working copy) into the root,
# runs there what the README tells a Debian 13 user to run
# (sh contrib/setup.sh && ./autogen.sh && ./configure && make -j2), then the
# MPI test suite (run-mpi-tests.sh with MPI_TEST_QUICK=1, its 256 MiB
# section included, the 1 GiB case skipping itself under QUICK; run-rma-tests.sh; a short
# benchmark; run-dyn-tests.sh; test/fault/mpi-faults.sh) -- the benchmark: 8 B latency
# and 256 KiB bandwidth of siwarp against btl tcp and pml ucx (UCX_TLS=tcp),
# one launch each (figures only: one run on a shared host decides nothing).
# A machine where the root cannot be made skips with the reason.
#
# Environment: OMPI5_SECTIONS (subset of: mpi rma dyn bench fault; default all),
# OMPI5_TIMEOUT (seconds for the whole run in the root, default 1140).
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
ROOTSH=$top/contrib/ompi5-root.sh

if ! command -v git >/dev/null 2>&1 || ! git -C "$top" rev-parse >/dev/null 2>&1; then
    echo "1..0 # SKIP not a git checkout (the file list comes from git)"
    exit 0
fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT
root=$(sh "$ROOTSH" ensure 2>"$err")
if [ -z "$root" ]; then
    echo "1..0 # SKIP no Debian 13 root: $(grep 'ompi5-root.sh:' "$err" | tail -n 1)"
    exit 0
fi

# the tree as git lists it, working-copy contents, into a fresh directory
rm -rf "$root/build/siwarp"
mkdir -p "$root/build/siwarp"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _ |
    tar --null -T - -cf -) | tar -C "$root/build/siwarp" -xf -

cat > "$root/build/inside.sh" <<'EOF'
#!/bin/sh
# runs in the Debian 13 root: build as the README says, then the suites
set -u
cd /build/siwarp || exit 1
rm -rf /tmp/prterun.* 2>/dev/null   # what earlier runs' launchers left
. test/lib-tap.sh
section() { case " ${OMPI5_SECTIONS:-mpi rma dyn bench fault} " in *" $1 "*) return 0 ;; esac; return 1; }

if sh contrib/setup.sh > /build/setup.log 2>&1; then
    ok "sh contrib/setup.sh on Debian 13"
else
    not_ok "sh contrib/setup.sh on Debian 13"; diag /build/setup.log
fi
if ./autogen.sh > /build/build.log 2>&1 && ./configure >> /build/build.log 2>&1 &&
   make -j2 >> /build/build.log 2>&1 &&
   grep -q "Open MPI BTL *yes (Open MPI 5\..*BTL 330" /build/build.log; then
    ok "./autogen.sh && ./configure && make -j2: $(sed -n 's/^ *Open MPI BTL *yes (\(Open MPI [^,]*, BTL [0-9]*\).*/\1/p' /build/build.log)"
else
    not_ok "./autogen.sh && ./configure && make -j2 against Open MPI 5"; diag /build/build.log
    echo "1..$n"; exit 1
fi
echo "# $(ompi_info -V | head -n 1); $(ompi_info | grep 'MCA btl: siwarp' || echo 'siwarp not listed without the build path')"

# the suites print their own TAP; this script's count comes first
echo "1..$n"
export MPI_TEST_QUICK=1 BUILDDIR=/build/siwarp srcdir=/build/siwarp
rc=0
if section mpi; then
    echo "# ---- run-mpi-tests.sh (MPI_TEST_QUICK=1)"
    MPI_TEST_SECTIONS="core fallback hostile params netns big" sh test/mpi/run-mpi-tests.sh || rc=1
fi
if section rma; then
    echo "# ---- run-rma-tests.sh"
    sh test/mpi/run-rma-tests.sh || rc=1
fi
if section bench; then
    echo "# ---- benchmark: mpi-bench, one launch per transport"
    . test/mpi/lib-mpi-tap.sh
    n=0
    mpicc -O2 -o "$OUT/mpi-bench" test/mpi/mpi-bench.c || rc=1
    for t in siwarp tcp ucx; do
        case $t in
            siwarp) a="--mca pml ob1 --mca btl siwarp,self --mca btl_siwarp_if_include lo" ;;
            tcp)    a="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo" ;;
            # pml ucx skips itself unless told any transport will do
            ucx)    a="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo" ;;
        esac
        log=$OUT/bench-$t.log
        # shellcheck disable=SC2086
        timeout 120 mpirun -np 2 --bind-to none $a "$OUT/mpi-bench" -t lat,bw -n 8 -m 262144 -f 8 \
            -i 2000 > "$log" 2>&1
        lat=$(awk '$1 == "lat" && $2 == 8 { print $3 }' "$log")
        latmed=$(awk '$1 == "latmed" && $2 == 8 { print $3 }' "$log")
        bw=$(awk '$1 == "bw" && $2 == 262144 { print $3 }' "$log")
        if [ -n "$lat" ] && [ -n "$bw" ]; then
            ok "benchmark $t: 8 B latency $lat us (median $latmed), 256 KiB bandwidth $bw MB/s"
        else
            not_ok "benchmark $t gave no figures"; diag "$log"; rc=1
        fi
    done
    echo "1..$n"
fi
if section dyn; then
    echo "# ---- run-dyn-tests.sh"
    MPI_DYN_TIMEOUT=60 sh test/mpi/run-dyn-tests.sh || rc=1
fi
if section fault; then
    echo "# ---- test/fault/mpi-faults.sh"
    sh test/fault/mpi-faults.sh || rc=1
fi
exit $rc
EOF

timeout -k 30 "${OMPI5_TIMEOUT:-1140}" sh "$ROOTSH" run sh /build/inside.sh
rc=$?
[ $rc -eq 124 ] && echo "not ok - the run in the Debian 13 root passed its bound (${OMPI5_TIMEOUT:-1140} s)"

# ---- across the two roots: libsiwarp built on Debian 13 (next to Open MPI
# 5) against this tree's Debian 12 build (Open MPI 4.1), over loopback:
# rping's exchange (RDMA Read, RDMA Write, Sends, every byte compared),
# each side once as the server.  The server's "listening" line is the
# readiness signal.
echo "# ---- libsiwarp: Debian 13 build <-> Debian 12 build (siwarp-rping)"
HOSTPING=$top/contrib/siwarp-rping
ROOTPING=/build/siwarp/contrib/siwarp-rping
if [ ! -x "$HOSTPING" ] || [ ! -x "$root$ROOTPING" ]; then
    echo "ok - libsiwarp across the roots # SKIP siwarp-rping not built on both sides"
    exit $rc
fi
port=$((20000 + $$ % 5000))
slog=$(mktemp) clog=$(mktemp)
trap 'rm -f "$err" "$slog" "$clog"' EXIT
for dir in "13-server" "12-server"; do
    port=$((port + 1))
    args="-p $port -C 200 -S 65535 -V -T 60"
    if [ $dir = 13-server ]; then
        # shellcheck disable=SC2086
        timeout 90 sh "$ROOTSH" run "$ROOTPING" -s -a 127.0.0.1 $args > "$slog" 2>&1 &
    else
        # shellcheck disable=SC2086
        timeout 90 "$HOSTPING" -s -a 127.0.0.1 $args > "$slog" 2>&1 &
    fi
    spid=$!
    timeout 60 sh -c "tail -f --pid=$spid '$slog' | grep -q -m1 'siwarp-rping: listening'"
    if [ $dir = 13-server ]; then
        # shellcheck disable=SC2086
        timeout 90 "$HOSTPING" -c -a 127.0.0.1 $args > "$clog" 2>&1
    else
        # shellcheck disable=SC2086
        timeout 90 sh "$ROOTSH" run "$ROOTPING" -c -a 127.0.0.1 $args > "$clog" 2>&1
    fi
    crc=$?
    wait $spid
    src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q 'siwarp-rping: OK' "$clog" &&
       grep -q 'siwarp-rping: OK' "$slog"; then
        echo "ok - libsiwarp across the roots, Debian ${dir%-server} build as the server: 200 rping exchanges of 65535 B verified"
    else
        echo "not ok - libsiwarp across the roots, Debian ${dir%-server} build as the server (client $crc, server $src)"
        tail -n 8 "$slog" "$clog" | sed 's/^/# /'
        rc=1
    fi
done
exit $rc
