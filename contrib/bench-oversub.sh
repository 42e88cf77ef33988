#!/bin/sh
# bench-oversub.sh - more ranks than cores: siwarp against btl tcp with 4
# and 8 ranks on this host's cores (oversubscribed, --bind-to none; Open MPI
# then sets mpi_yield_when_idle itself), the ratios of issue 38's goal 3.
#
# 1. test/mpi/mpi-coll-bench: MPI_Allreduce, MPI_Alltoall and MPI_Bcast,
#    1 B to --max, in the loops of osu_allreduce, osu_alltoall and
#    osu_bcast (OSU 7.4: per size a barrier, timed rounds each ending in a
#    barrier, the ranks' mean latencies averaged).
# 2. A whole application: LAMMPS (Debian's lammps) on its examples' in.melt
#    scaled to --lammps-cells^3 unit cells (4 atoms each) and --lammps-steps
#    steps; the figure is LAMMPS's own "Loop time".  Left out with a note
#    when lmp or /usr/share/lammps/examples/melt/in.melt is missing
#    (contrib/setup.sh installs lammps and lammps-examples).
# siwarp and btl tcp alternate within each round (round r starts with the
# r-th), --reps rounds; ratios are siwarp/tcp per round, and the table shows
# their median (below 1 favours siwarp) beside both transports' medians.
#
#   contrib/bench-oversub.sh [--reps N] [--np "4 8"] [--max BYTES] [--iters N]
#                            [--lammps-cells N] [--lammps-steps N] [--no-lammps]
#                            [--siwarp-mca "ARGS"] [--out FILE]
#
# Defaults: --reps 3 --np "4 8" --max 65536 --iters 1000 (OSU's; a tenth
# above 8 KiB) --lammps-cells 20 (32,000 atoms) --lammps-steps 500.
# --siwarp-mca adds mpirun arguments to siwarp's runs only (a parameter to
# try against the defaults).  Markdown on stdout, or into --out.
# Environment: BUILDDIR (build tree with btl_siwarp/.libs), BENCH_TIMEOUT
# (seconds per mpirun, default 300), BENCH_LOCK (a file: each round holds
# flock on it, so that benchmarks of several users of one host never
# overlap, and a round's transports meet the same machine).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
reps=3; nps="4 8"; max=65536; iters=1000; cells=20; steps=500; lammps=1; out=""
siwarp_mca=""
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift ;;
    --np) nps=$2; shift ;;
    --max) max=$2; shift ;;
    --iters) iters=$2; shift ;;
    --lammps-cells) cells=$2; shift ;;
    --lammps-steps) steps=$2; shift ;;
    --no-lammps) lammps=0 ;;
    --siwarp-mca) siwarp_mca=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "bench-oversub.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done
for n in "$reps" "$max" "$iters" "$cells" "$steps" $nps; do
    case $n in ''|*[!0-9]*|0) echo "bench-oversub.sh: --reps, --np, --max, --iters, --lammps-cells and --lammps-steps take positive numbers" >&2; exit 2 ;; esac
done

. "$here/lib-bench.sh"
bench_mpi_env bench-oversub.sh
T=${BENCH_TIMEOUT:-300}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-oversub.XXXXXX") || exit 1
child=""
cleanup() { [ -n "$child" ] && kill "$child" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! mpicc -O2 -o "$tmp/mpi-coll-bench" "$top/test/mpi/mpi-coll-bench.c" 2> "$tmp/cc.log"; then
    cat "$tmp/cc.log" >&2
    exit 1
fi
melt=/usr/share/lammps/examples/melt/in.melt
note=""
if [ $lammps = 1 ] && { ! command -v lmp >/dev/null 2>&1 || [ ! -f "$melt" ]; }; then
    note="LAMMPS left out: lmp or $melt missing (contrib/setup.sh installs lammps, lammps-examples)"
    lammps=0
fi
if [ $lammps = 1 ]; then
    # the example's box of 10^3 cells and 250 steps, scaled
    sed -e "s/^region\([[:space:]]*\)box block 0 10 0 10 0 10/region\1box block 0 $cells 0 $cells 0 $cells/" \
        -e "s/^run\([[:space:]]*\)250/run\1$steps/" "$melt" > "$tmp/in.melt"
    grep -q "block 0 $cells 0 $cells 0 $cells" "$tmp/in.melt" ||
        { echo "bench-oversub.sh: $melt is not the in.melt this script scales" >&2; exit 1; }
fi

targs() {
    case $1 in
    siwarp) echo "--mca pml ob1 --mca btl siwarp,self $siwarp_mca" ;;
    tcp)    echo "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo" ;;
    esac
}
run() {     # NP TRANSPORT OUTFILE PROGRAM ARGS...: one mpirun, bounded
    np=$1; t=$2; o=$3; shift 3
    # shellcheck disable=SC2046,SC2086
    (cd "$tmp" && timeout "$T" mpirun -np "$np" --oversubscribe --bind-to none \
        $(targs "$t") "$@") > "$o" 2>&1 &
    child=$!
    wait $child
    rc=$?
    child=""
    [ $rc = 0 ] || echo "bench-oversub.sh: $t, $np ranks, $(basename "$2"): exit $rc (see below)" >&2
    return $rc
}

[ -n "${BENCH_LOCK:-}" ] && exec 9>> "$BENCH_LOCK"
r=1
while [ $r -le "$reps" ]; do
    [ -n "${BENCH_LOCK:-}" ] && flock 9
    order="siwarp tcp"
    [ $((r % 2)) = 0 ] && order="tcp siwarp"
    for np in $nps; do
        for t in $order; do
            run "$np" "$t" "$tmp/coll.$t.$np.$r" "$tmp/mpi-coll-bench" -m "$max" -i "$iters" ||
                tail -5 "$tmp/coll.$t.$np.$r" >&2
            if [ $lammps = 1 ]; then
                run "$np" "$t" "$tmp/lmp.$t.$np.$r" lmp -in "$tmp/in.melt" -log none -screen "$tmp/lmp.screen.$t.$np.$r" ||
                    tail -5 "$tmp/lmp.$t.$np.$r" >&2
                # "Loop time of 12.3 on 4 procs for 500 steps with 32000 atoms"
                awk '/^Loop time of/ { print "lammps", 0, $4, "s" }' "$tmp/lmp.screen.$t.$np.$r" \
                    >> "$tmp/coll.$t.$np.$r"
            fi
        done
    done
    [ -n "${BENCH_LOCK:-}" ] && flock -u 9
    r=$((r + 1))
done

report() {
    echo "## More ranks than cores ($(nproc) cores, --oversubscribe --bind-to none)"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $reps rounds alternating siwarp and btl tcp" \
         "(loopback), medians; ratio: the median of the rounds' siwarp/tcp (below 1 favours siwarp)." \
         "mpi-coll-bench runs OSU 7.4's loops; LAMMPS: in.melt, ${cells}^3 cells," \
         "$steps steps, its Loop time in seconds.${siwarp_mca:+ siwarp with: $siwarp_mca}"
    [ -n "$note" ] && echo && echo "$note"
    python3 - "$tmp" "$reps" $nps <<'PY'
import sys, glob, os, statistics, collections
d, reps, nps = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
v = collections.defaultdict(dict)       # (np, test, size) -> {(t, r): value}
for f in glob.glob(os.path.join(d, "coll.*")):
    _, t, np, r = os.path.basename(f).split(".")
    for line in open(f):
        p = line.split()
        if len(p) == 4 and p[1].isdigit() and p[0] in ("allreduce", "alltoall", "bcast", "lammps"):
            v[(np, p[0], int(p[1]))][(t, int(r))] = float(p[2])
def med(x):     # of an even count, the upper middle: the worse ratio
    x = sorted(x)
    return x[len(x) // 2] if x else None
for np in nps:
    for test in ("allreduce", "alltoall", "bcast", "lammps"):
        keys = sorted(k for k in v if k[0] == np and k[1] == test)
        if not keys:
            continue
        unit = "s" if test == "lammps" else "us"
        first = "LAMMPS" if test == "lammps" else f"{test} (bytes)"
        print(f"\n| {np} ranks, {first} | siwarp ({unit}) | tcp ({unit}) | ratio |")
        print("|---:|---:|---:|---:|")
        worst = 0
        for k in keys:
            rs = [v[k][("siwarp", r)] / v[k][("tcp", r)] for r in range(1, reps + 1)
                  if ("siwarp", r) in v[k] and ("tcp", r) in v[k] and v[k][("tcp", r)] > 0]
            s = med([x for (t, _), x in v[k].items() if t == "siwarp"])
            c = med([x for (t, _), x in v[k].items() if t == "tcp"])
            ratio = med(rs)
            label = "whole run" if test == "lammps" else str(k[2])
            fmt = lambda x: "-" if x is None else f"{x:.2f}"
            print(f"| {label} | {fmt(s)} | {fmt(c)} | {fmt(ratio)} |")
            if ratio is not None:
                worst = max(worst, ratio)
        print(f"\nworst ratio, {np} ranks, {test}: {worst:.3f}")
PY
}
if [ -n "$out" ]; then
    report > "$out"
    echo "bench-oversub.sh: wrote $out" >&2
else
    report
fi
exit 0
