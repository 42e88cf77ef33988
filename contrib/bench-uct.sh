#!/bin/bash
# bench-uct.sh - the siwarp UCX transport against UCX's own tcp transport,
# with Debian's ucx_perftest over loopback: ROUNDS alternating rounds
# (siwarp, tcp, siwarp, tcp, ...), each test's median latency (50th
# percentile of one run) and overall bandwidth taken as the median over the
# rounds, and the ratio siwarp/tcp.  UCP level (UCX_TLS=<tl>), so that
# tcp's put and get are what UCP makes of them.
#   contrib/bench-uct.sh [ROUNDS]     (default 5; build first: make)
# Output: a table on stdout; logs in a private temp dir (printed).
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
top=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-5}
MOD=$top/uct_siwarp/.libs/libuct_siwarp.so.0
T=120
[ -f "$MOD" ] || { echo "bench-uct.sh: $MOD not built" >&2; exit 1; }
. "$top/test/uct/lib-perftest.sh"
logs=$(mktemp -d)
echo "# logs: $logs; $ROUNDS alternating rounds; host load: $(cut -d' ' -f1-3 /proc/loadavg)"

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
            UCX_TLS=$tl UCX_NET_DEVICES=lo ucx_perftest_pair "$logs/$i.$tl.$r.log" $args
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
