#!/bin/bash
# bench-uct.sh - the siwarp UCX transport against UCX's own tcp transport,
# with Debian's ucx_perftest over loopback: ROUNDS alternating rounds
# (siwarp, tcp, siwarp, tcp, ...), each test's median latency (50th
# percentile of one run) and overall bandwidth taken as the median over the
# rounds, and the ratio siwarp/tcp.  UCP level (UCX_TLS=<tl>), so that
# tcp's put and get are what UCP makes of them.
#   contrib/bench-uct.sh [ROUNDS]     (default 5; build first: make)
# The server runs on CPU 0 and the client on CPU 1 (ucx_perftest -c), as
# mpirun binds two ranks; BIND=0 leaves them unbound.  NET=veth runs the
# pairs across a veth pair between two network namespaces instead
# (contrib/netns.sh: server 10.231.0.1, client 10.231.0.2; root), where
# TCP segments are MSS-sized as on a NIC.
# Then, with oshcc and oshrun there, OpenSHMEM over spml ucx in the loops
# of the OSU OpenSHMEM benchmarks (test/uct/shmem_bench.c: put + quiet,
# get, fetch-add, compare-swap; 2 PEs, one per core), the same rounds.
# Output: tables on stdout; logs in a private temp dir (printed).
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
top=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-5}
MOD=$top/uct_siwarp/.libs/libuct_siwarp.so.0
T=120
[ -f "$MOD" ] || { echo "bench-uct.sh: $MOD not built" >&2; exit 1; }
. "$top/test/uct/lib-perftest.sh"
# one core each, as mpirun binds two ranks (unbound pairs on 2 cores swing
# by 2x from run to run); BIND=0 leaves them to the scheduler
if [ "${BIND:-1}" != 0 ] && [ "$(nproc)" -ge 2 ]; then
    PT_SERVER_ARGS="-c 0" PT_CLIENT_ARGS="-c 1"
fi
logs=$(mktemp -d)
NET=${NET:-lo}
case $NET in
lo)
    sdev=lo cdev=lo ;;
veth)
    ns=bu$$
    eval "$(sh "$top/contrib/netns.sh" up "$ns")" || exit 1
    trap 'sh "$top/contrib/netns.sh" down "$ns"' EXIT
    sdev=$ns-vs cdev=$ns-vc PT_HOST=$SERVER_ADDR
    PT_SERVER_PRE="ip netns exec $SERVER_NS" PT_CLIENT_PRE="ip netns exec $CLIENT_NS" ;;
*)
    echo "bench-uct.sh: NET=$NET: lo or veth" >&2; exit 2 ;;
esac
echo "# logs: $logs; $ROUNDS alternating rounds over $NET; ${PT_SERVER_ARGS:+server $PT_SERVER_ARGS, client $PT_CLIENT_ARGS; }host load: $(cut -d' ' -f1-3 /proc/loadavg)"

# name | metric (lat: median us; bw: overall MB/s) | ucx_perftest args
TESTS=(
  "tag_lat 8 B|lat|-t tag_lat -s 8 -n 3000 -w 200"
  "tag_lat 4 KiB|lat|-t tag_lat -s 4096 -n 3000 -w 200"
  "am_lat 8 B|lat|-t ucp_am_lat -s 8 -n 3000 -w 200"
  "put_lat 8 B|lat|-t ucp_put_lat -s 8 -n 3000 -w 200"
  "get_lat 8 B|lat|-t ucp_get -s 8 -n 3000 -w 200"
  "tag_bw 16 KiB|bw|-t tag_bw -s 16384 -n 1000 -w 50"
  "tag_bw 1 MiB|bw|-t tag_bw -s 1048576 -n 100 -w 10"
  "put_bw 16 KiB|bw|-t ucp_put_bw -s 16384 -n 1000 -w 50"
  "put_bw 1 MiB|bw|-t ucp_put_bw -s 1048576 -n 100 -w 10"
  "get_bw 1 MiB|bw|-t ucp_get -s 1048576 -n 100 -w 10"
)
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

declare -A vals
for r in $(seq "$ROUNDS"); do
    for i in "${!TESTS[@]}"; do
        IFS='|' read -r name metric args <<<"${TESTS[$i]}"
        for tl in siwarp tcp; do
            # shellcheck disable=SC2086
            PT_SERVER_ARGS="${PT_SERVER_ARGS:-}" PT_CLIENT_ARGS="${PT_CLIENT_ARGS:-}" \
                PT_SERVER_PRE="${PT_SERVER_PRE:-} env UCX_NET_DEVICES=$sdev" \
                PT_CLIENT_PRE="${PT_CLIENT_PRE:-} env UCX_NET_DEVICES=$cdev" \
                UCX_TLS=$tl ucx_perftest_pair "$logs/$i.$tl.$r.log" $args
            if [ $pt_crc -ne 0 ] || [ -z "$pt_row" ]; then
                echo "# round $r $name $tl failed (log $logs/$i.$tl.$r.log)"
                continue
            fi
            if [ "$metric" = lat ]; then v=$(echo "$pt_row" | awk '{print $2}')
            else v=$(echo "$pt_row" | awk '{print $6}'); fi
            vals[$i.$tl]="${vals[$i.$tl]} $v"
        done
    done
done

printf "%-16s %-6s %12s %12s %8s\n" test unit siwarp tcp ratio
for i in "${!TESTS[@]}"; do
    IFS='|' read -r name metric args <<<"${TESTS[$i]}"
    s=$(echo ${vals[$i.siwarp]} | tr ' ' '\n' | grep . | median)
    t=$(echo ${vals[$i.tcp]} | tr ' ' '\n' | grep . | median)
    unit=$([ "$metric" = lat ] && echo us || echo MB/s)
    printf "%-16s %-6s %12s %12s %8s\n" "$name" "$unit" "$s" "$t" \
        "$(awk -v a="$s" -v b="$t" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')"
done

# ---- OpenSHMEM (spml ucx), OSU's loops ---------------------------------------
if [ "$NET" != lo ]; then
    echo "# OpenSHMEM: loopback only"
    exit 0
fi
if ! command -v oshcc >/dev/null || ! command -v oshrun >/dev/null; then
    echo "# OpenSHMEM: skipped (oshcc/oshrun not installed)"
    exit 0
fi
if ! oshcc -O2 -o "$logs/shmem_bench" "$top/test/uct/shmem_bench.c" >"$logs/shmem-build.log" 2>&1; then
    echo "# OpenSHMEM: shmem_bench did not build ($logs/shmem-build.log)"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -A sh
for r in $(seq "$ROUNDS"); do
    for tl in siwarp tcp; do
        slog=$logs/shmem.$tl.$r.log
        # --mca btl self: Debian's 4.1.4 shmem_finalize segfaulted without it
        timeout $((T * 2)) oshrun -np 2 --bind-to core --mca spml ucx --mca pml ucx \
            --mca osc ucx --mca btl self --mca opal_common_ucx_tls $tl \
            -x UCX_TLS=$tl,self -x UCX_NET_DEVICES=lo -x LD_PRELOAD="$MOD" \
            "$logs/shmem_bench" 32768 >"$slog" 2>&1 ||
            { echo "# round $r OpenSHMEM $tl failed (log $slog)"; continue; }
        while read -r op size v _; do
            sh[$op.$size.$tl]="${sh[$op.$size.$tl]} $v"
        done < <(grep -E '^(put|get|fadd|cswap) [0-9]+ [0-9.]+ us$' "$slog")
    done
done
printf "\n%-16s %-6s %12s %12s %8s\n" "OpenSHMEM" unit siwarp tcp ratio
for k in put.8 put.2048 put.32768 get.8 get.2048 get.32768 fadd.8 cswap.8; do
    s=$(echo ${sh[$k.siwarp]} | tr ' ' '\n' | grep . | median)
    t=$(echo ${sh[$k.tcp]} | tr ' ' '\n' | grep . | median)
    printf "%-16s %-6s %12s %12s %8s\n" "${k%.*} ${k#*.} B" us "$s" "$t" \
        "$(awk -v a="$s" -v b="$t" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')"
done
