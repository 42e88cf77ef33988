#!/bin/sh
# bench-scale.sh - issue 38's scale figures: many ranks spread over network
# namespaces ("nodes", contrib/netns-nodes.sh: a bridge between them, each
# rank with its own listener), siwarp against btl tcp in the same run.
#
#   contrib/bench-scale.sh [--nodes N] [--np "16 32 64"] [--reps N]
#                          [--a2a-np NP] [--a2a-max BYTES] [--iters N]
#                          [--warmup N] [--siwarp-args "ARGS"] [--lock FILE]
#                          [--out FILE]
#
# Each round runs test/mpi/mpi-scale once for every rank count, siwarp and
# btl tcp alternating (the round r starts with the r-th), --reps rounds
# (default 3), medians:
#   siwarp  --mca pml ob1 --mca btl siwarp,self --mca btl_siwarp_if_include NET
#   tcp     --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include NET
# (NET = 10.232.0.0/24, the nodes' network; no shared memory BTL, so every
# peer, those on the same node too, is a connection of the transport under
# test).  Every run is --oversubscribe --bind-to none on this host's cores,
# and Open MPI sets mpi_yield_when_idle itself, as on an oversubscribed host.
# Figures, per rank count, siwarp / btl tcp and their ratio:
#   - first all-to-all: from MPI_Init's exit to the first MPI_Alltoall's
#     completion (8 B a peer), the maximum over ranks, and counted from the
#     last rank's exit from MPI_Init (leaves out the start-up skew);
#   - sockets per process once every peer is connected (and how many the
#     first all-to-all opened: Open MPI's Bruck algorithm for small blocks
#     talks to about 2 log2(N) peers, so it connects only those);
#   - connecting every peer: wall time (maximum over ranks) and CPU per
#     connection (mean over ranks; waiting ranks yield and poll, and that
#     counts too: an upper bound), each as the difference between
#     mpi-scale's sweep over every peer and the same sweep again on open
#     connections;
#   - RSS and VmSize per connected peer: the slope of the mean process's
#     VmRSS / VmSize against its sockets, from the first to the last point of
#     mpi-scale's curve (every peer then connected); the curve itself at the
#     largest rank count, slope by slope, where a cost growing faster than
#     the peers would show as rising slopes;
#   - at --a2a-np ranks (default the largest of --np): osu_alltoall's loop
#     (mpi-scale step 3: OSU's barrier, warm-up and timing, its average over
#     ranks), 8 B to --a2a-max (default 4096) by factors of 8, --iters timed
#     (default 5) and --warmup untimed (default 1) iterations: an iteration
#     takes a few hundred ms at 64 ranks on 2 cores.
# --siwarp-args "ARGS": more mpirun arguments for siwarp's runs (a site's
# settings, e.g. "--mca btl_siwarp_max_send_size 8192"), printed with the
# table.
# --lock FILE: hold FILE (flock) for each round, so that other benchmarks on
# the host do not run inside one; released between rounds.
# Writes Markdown to contrib/results/bench-scale-YYYYMMDD-HHMM.md (or --out).
# Needs root (namespaces).  Environment: BUILDDIR (default: the source
# tree), BENCH_TIMEOUT (seconds per mpirun, default 300).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
nodes=4; nps="16 32 64"; reps=3; a2a_np=""; a2a_max=4096; iters=5; warmup=1; lock=""; out=""
siwarp_args=""
cmdline="$0 $*"

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) nodes=$2; shift ;;
    --np) nps=$2; shift ;;
    --reps) reps=$2; shift ;;
    --a2a-np) a2a_np=$2; shift ;;
    --a2a-max) a2a_max=$2; shift ;;
    --iters) iters=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --siwarp-args) siwarp_args=$2; shift ;;
    --lock) lock=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "bench-scale.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done
for n in $reps $nodes $nps $iters; do
    case $n in ''|*[!0-9]*|0) echo "bench-scale.sh: --reps, --nodes, --np and --iters need positive numbers" >&2; exit 2 ;; esac
done
[ -n "$a2a_np" ] || a2a_np=$(echo "$nps" | tr ' ' '\n' | sort -n | tail -n 1)

. "$here/lib-bench.sh"
bench_mpi_env bench-scale.sh       # COMP, OMPI_DIR; the component path is set again below
export NETNS_MPIRUN_TIMEOUT="${BENCH_TIMEOUT:-300}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-scale.XXXXXX") || exit 1
child=""
cleanup() {
    [ -n "$child" ] && kill "$child" 2>/dev/null && wait "$child" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the component directory holds only the .so: a .la beside it breaks mpirun
mkdir "$tmp/comp" && ln -s "$COMP/mca_btl_siwarp.so" "$tmp/comp/"
export OMPI_MCA_mca_base_component_path="$tmp/comp:$OMPI_DIR"
SCALE=$tmp/mpi-scale
if ! mpicc -O2 -g -o "$SCALE" "$top/test/mpi/mpi-scale.c" 2> "$tmp/cc.log"; then
    cat "$tmp/cc.log" >&2
    exit 1
fi

NET=10.232.0.0/24
targs() {
    case $1 in
    siwarp) echo "--mca btl siwarp,self --mca btl_siwarp_if_include $NET $siwarp_args" ;;
    tcp) echo "--mca btl tcp,self --mca btl_tcp_if_include $NET" ;;
    esac
}
# run_one TRANSPORT NP OUTFILE: one mpirun across the nodes, bounded
run_one() {
    t=$1; np=$2; o=$3
    a2a="-m 0"
    [ "$np" = "$a2a_np" ] && a2a="-n 8 -m $a2a_max -f 8 -i $iters -w $warmup"
    # shellcheck disable=SC2046,SC2086
    "$here/netns-nodes.sh" "$nodes" -np "$np" --oversubscribe --bind-to none \
        --mca pml ob1 $(targs "$t") "$SCALE" $a2a > "$o" 2>&1 &
    child=$!
    wait $child
    rc=$?
    child=""
    return $rc
}

# derived figures of one run, as "key NP value" lines: the slopes of the
# curve (RSS and VmSize against sockets), overall and segment by segment
derive() {
    awk '$1 == "curve" { n++; np = $2; s[n] = $4; r[n] = $5; v[n] = $6 }
         END { if (n < 2 || s[n] == s[1]) exit
               printf "peerrss %d %.1f KiB\n", np, (r[n] - r[1]) / (s[n] - s[1])
               printf "peervsz %d %.1f KiB\n", np, (v[n] - v[1]) / (s[n] - s[1])
               printf "baserss %d %.0f KiB\n", np, r[1]
               for (i = 2; i <= n; i++)
                   if (s[i] > s[i - 1])
                       printf "slope%d %d %.1f KiB\n", i - 1, np, (r[i] - r[i - 1]) / (s[i] - s[i - 1]) }' "$1"
}

t_start=$(date +%s)
echo "bench-scale.sh: $reps rounds of [siwarp tcp] at $nps ranks over $nodes nodes," \
     "osu_alltoall at $a2a_np" >&2
r=0
while [ $r -lt "$reps" ]; do
    [ -n "$lock" ] && { exec 9> "$lock"; flock 9; }
    for np in $nps; do
        for t in $([ $((r % 2)) = 0 ] && echo "siwarp tcp" || echo "tcp siwarp"); do
            echo "  round $((r + 1)), $np ranks: $t" >&2
            o=$tmp/out.$t.$np.$r
            if ! run_one "$t" "$np" "$o" || ! grep -q '^first ' "$o"; then
                echo "bench-scale.sh: $t at $np ranks, round $((r + 1)) failed:" >&2
                tail -n 5 "$o" | sed 's/^/    /' >&2
                continue
            fi
            derive "$o" > "$tmp/derived" && cat "$tmp/derived" >> "$o"
        done
    done
    [ -n "$lock" ] && { flock -u 9; exec 9>&-; }
    r=$((r + 1))
done
elapsed=$(( $(date +%s) - t_start ))

# ---- medians: med.T holds "key size median" over the rounds ------------------------
median() {      # lines "key size value" -> "key size median", in first-seen order
    sort -k1,1 -k2,2n -k3,3g |
        awk '{ k = $1 " " $2; v[k, ++n[k]] = $3; if (!(k in seen)) { seen[k] = 1; ord[++m] = k } }
             END { for (j = 1; j <= m; j++) { k = ord[j]; c = n[k];
                       print k, (c % 2) ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2 } }'
}
for t in siwarp tcp; do
    cat "$tmp"/out.$t.* 2>/dev/null |
        awk '$1 ~ /^[a-z0-9]+$/ && $1 != "curve" && $2 ~ /^[0-9]+$/ { print $1, $2, $3 }' |
        median > "$tmp/med.$t"
    # the curve at --a2a-np ranks, point by point: "peers sockets rss"
    cat "$tmp"/out.$t."$a2a_np".* 2>/dev/null |
        awk '$1 == "curve" { print "s", $3, $4; print "r", $3, $5 }' | median |
        awk '{ if ($1 == "s") s[$2] = $3; else r[$2] = $3 }
             END { for (p in s) print p, s[p], r[p] }' | sort -n > "$tmp/curve.$t"
done
val() { awk -v k="$2 $3" '$1 " " $2 == k { print $3; exit }' "$tmp/med.$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f", a / b }'; }
num() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "") print "–"; else printf "%.*f", d, v }'; }
row() {     # LABEL KEY NP DIVISOR DECIMALS
    a=$(val siwarp "$2" "$3"); b=$(val tcp "$2" "$3")
    a=$(awk -v v="$a" -v d="$4" 'BEGIN { if (v != "") print v / d }')
    b=$(awk -v v="$b" -v d="$4" 'BEGIN { if (v != "") print v / d }')
    echo "| $1 | $3 | $(num "$a" "$5") | $(num "$b" "$5") | $(ratio "$a" "$b") |"
}

report() {
    echo "## Scale: ranks over $nodes namespaces, $(date '+%Y-%m-%d %H:%M')"
    echo
    echo "\`$cmdline\` at commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo "?")," \
         "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
         "medians of $reps rounds, siwarp and btl tcp alternating; $elapsed s of measuring."
    [ -n "$siwarp_args" ] && echo && echo "siwarp ran with \`$siwarp_args\`."
    echo
    echo "| figure | ranks | siwarp | btl tcp | siwarp/tcp |"
    echo "|---|---:|---:|---:|---:|"
    for np in $nps; do row "first all-to-all after MPI_Init (ms)" first "$np" 1000 1; done
    for np in $nps; do row "... from the last rank's MPI_Init (ms)" firstlast "$np" 1000 1; done
    for np in $nps; do row "sockets the first all-to-all opened, per process" firstsock "$np" 1 1; done
    for np in $nps; do row "sockets per process, every peer connected" sockall "$np" 1 1; done
    for np in $nps; do row "connecting every peer, wall (ms)" connwall "$np" 1000 1; done
    for np in $nps; do row "... CPU per connection, upper bound (µs)" conncpu "$np" 1 0; done
    for np in $nps; do row "RSS per connected peer (KiB)" peerrss "$np" 1 1; done
    for np in $nps; do row "VmSize per connected peer (KiB)" peervsz "$np" 1 0; done
    for np in $nps; do row "RSS of a process, first point of the curve (MiB)" baserss "$np" 1024 1; done
    echo
    echo "Memory against connections at $a2a_np ranks (means over ranks, medians over rounds;" \
         "slope: KiB of RSS per socket more than the point before):"
    echo
    echo "| peers reached | siwarp sockets | RSS MiB | slope | btl tcp sockets | RSS MiB | slope |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    awk 'NR == FNR { s[$1] = $2; r[$1] = $3; next }
         $1 in s { print $1, s[$1], r[$1], $2, $3 }' "$tmp/curve.siwarp" "$tmp/curve.tcp" |
        awk '{ if (NR > 1) { a = ($2 > ps) ? sprintf("%.1f", ($3 - pr) / ($2 - ps)) : "–"
                             b = ($4 > qs) ? sprintf("%.1f", ($5 - qr) / ($4 - qs)) : "–" }
               else { a = "–"; b = "–" }
               printf "| %d | %.1f | %.1f | %s | %.1f | %.1f | %s |\n", $1, $2, $3 / 1024, a, $4, $5 / 1024, b
               ps = $2; pr = $3; qs = $4; qr = $5 }'
    echo
    echo "osu_alltoall's loop at $a2a_np ranks ($iters timed iterations after $warmup," \
         "average over ranks, µs):"
    echo
    echo "| size | siwarp | btl tcp | siwarp/tcp |"
    echo "|---:|---:|---:|---:|"
    awk '$1 == "a2a" { print $2 }' "$tmp/med.siwarp" | while read -r sz; do
        a=$(val siwarp a2a "$sz"); b=$(val tcp a2a "$sz")
        echo "| $sz B | $(num "$a" 0) | $(num "$b" 0) | $(ratio "$a" "$b") |"
    done
}

mkdir -p "$here/results"
[ -n "$out" ] || out="$here/results/bench-scale-$(date +%Y%m%d-%H%M).md"
report > "$out"
cat "$out"
echo "bench-scale.sh: written to $out" >&2
