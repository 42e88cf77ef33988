#!/bin/sh
# test_bench_report.sh - how contrib/bench-report.sh judges the goals of
# issue 6, on made-up figures: a goal is met only by the exact ratio (a
# ratio of 0.8546 must not pass "<= 0.85" because it prints as 0.85), the
# median of an even number of rounds is the worse middle one, the paired
# helpers read the phase files bench-mpi.sh leaves, each size's median
# over the paired rounds (shown beside the goals) is told apart from the
# median of the rounds' worst sizes (the goals' own figure), and the CRC
# goal's ceiling follows from the two speeds it is given.  TAP.

top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_bench_report.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# the one bench-mpi.sh helper the functions under test use
hsize() { awk -v s="$1" 'BEGIN { if (s >= 1048576) printf "%d MiB", s / 1048576;
                                 else if (s >= 1024) printf "%d KiB", s / 1024; else printf "%d B", s }'; }
# shellcheck source=contrib/bench-report.sh
. "$top/contrib/bench-report.sh"

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
# expect DESCRIPTION WANT GOT
expect() {
    if [ "$2" = "$3" ]; then ok "$1"; else notok "$1 (want '$2', got '$3')"; fi
}

echo "1..32"

expect "0.8546 does not meet <= 0.85" "**not met**" "$(judge 0.8546 0.85 lo)"
expect "0.85 meets <= 0.85" "met" "$(judge 0.85 0.85 lo)"
expect "1.0046 does not meet <= 1.0" "**not met**" "$(judge 1.0046 1.0 lo)"
expect "0.9499 does not meet >= 0.95" "**not met**" "$(judge 0.9499 0.95 hi)"
expect "0.95 meets >= 0.95" "met" "$(judge 0.95 0.95 hi)"
expect "no figure is not measured" "not measured" "$(judge "" 0.85 lo)"

printf '0.84 8\n0.86 4\n0.85 1\n0.83 2\n' > "$tmp/rounds"
expect "even rounds, lower is better: the upper middle" "0.85 1" "$(median_round lo < "$tmp/rounds")"
expect "even rounds, higher is better: the lower middle" "0.84 8" "$(median_round hi < "$tmp/rounds")"
expect "odd rounds: the middle" "0.86 4" "$(printf '0.86 4\n0.9 2\n0.8 1\n' | median_round lo)"

row=$(goal_row "latency 0 B–1 KiB vs btl tcp" "≤ 0.85" lo "0.8546 64")
case $row in
*"0.855× (worst at 64 B)"*"**not met**"*) ok "goal row shows three decimals and judges exactly" ;;
*) notok "goal row: $row" ;;
esac

# a paired latency round: siwarp 2.991 µs against btl tcp's 3.5 at 8 B is
# 0.8546, the worst of the round; 0 B (2.8 against 3.5, 0.80) is better
printf 'latmed 0 2.8 us\nlatmed 8 2.991 us\n' > "$tmp/out.pair-siwarp.0"
printf 'latmed 0 3.5 us\nlatmed 8 3.5 us\n' > "$tmp/out.pair-tcp.0"
# shellcheck disable=SC2046
set -- $(pair_ratios tcp 0)
expect "pair_ratios keeps four decimals" "0.8546" "$1"
expect "pair_ratios names the worst size" "8" "$2"
expect "the paired latency goal is judged on it" "**not met**" \
    "$(judge "$(pair_median tcp 0 | cut -d' ' -f1)" 0.85 lo)"

# CRC pairs: on/off per round 0.9491, 0.96, 0.97 -> median 0.96
for r in 0 1 2; do
    printf 'bw 1048576 %s MB/s\n' "$(echo "9491 9600 9700" | cut -d' ' -f$((r + 1)))" > "$tmp/out.crc-siwarp.$r"
    printf 'bw 1048576 10000 MB/s\n' > "$tmp/out.crc-siwarp-nocrc.$r"
done
# shellcheck disable=SC2046
set -- $(crc_pairs)
expect "crc_pairs: median of the paired ratios" "0.9600" "$1"
expect "crc_pairs: the lowest round, unrounded" "0.9491" "$2"
expect "ratio for judging keeps four decimals" "1.0046" "$(ratio 2.17 2.16 4)"
expect "ratio for a table shows two" "1.00" "$(ratio 2.17 2.16)"

# the CRC ceiling: 10,350 MB/s off and a 110 GB/s CRC leave 1/(1 + 0.0941)
expect "crc_ceiling while the sender's core limits" "0.9140" "$(crc_ceiling 10350 110)"
expect "crc_ceiling: a slower link leaves more" "0.9524" "$(crc_ceiling 5500 110)"
expect "crc_ceiling: nothing without the CRC's speed" "" "$(crc_ceiling 10350 "")"

# Paired rounds, per size: three rounds whose worst size moves (0 B, 8 B,
# 64 B at 0.90, 0.88, 0.87) while each size's own median is 0.81-0.83.
# The goal takes the median of the rounds' worst sizes (0.88); the worst
# size's median (0.83 at 64 B) is the figure shown beside it.
all=$tmp
tmp=$all/sizes; mkdir "$tmp"
r=0
for row in "0.90 0.80 0.82" "0.81 0.88 0.83" "0.82 0.81 0.87"; do
    # shellcheck disable=SC2086
    set -- $row
    printf 'latmed 0 %s us\nlatmed 8 %s us\nlatmed 64 %s us\n' "$1" "$2" "$3" > "$tmp/out.pair-siwarp.$r"
    printf 'latmed 0 1.0 us\nlatmed 8 1.0 us\nlatmed 64 1.0 us\n' > "$tmp/out.pair-tcp.$r"
    r=$((r + 1))
done
expect "pair_worst_size: the worst size's median over the rounds" "0.8300 64" "$(pair_worst_size tcp 0)"
expect "pair_median: the median of the rounds' worst sizes" "0.8800 8" "$(pair_median tcp 0)"
expect "pair_sizes: one line a size with median, range and count" "0 0.8200 0.8100 0.9000 3" \
    "$(pair_sizes tcp 0 | head -n 1)"
expect "size_medians lo, even count: the upper middle" "8 0.8400 0.8000 0.8600 4" \
    "$(printf '8 0.80\n8 0.86\n8 0.84\n8 0.82\n' | size_medians lo)"
expect "size_medians hi, even count: the lower middle" "8 0.8200 0.8000 0.8600 4" \
    "$(printf '8 0.80\n8 0.86\n8 0.84\n8 0.82\n' | size_medians hi)"
# the raw pairs start at 1 B: 0 B is left out
expect "pair_worst_size from 1 B leaves 0 B out" "0.8300 64" "$(pair_worst_size tcp 1)"
# siwarp's plain framed TCP in the same rounds at 0.80, 0.79, 0.81 of btl
# tcp at every size: its column, and siwarp's ratio to it (0.81/0.79 at 64 B
# in round 2 is 1.0500, the median of 1.025, 1.0506, 1.0741)
r=0
for v in 0.80 0.79 0.81; do
    printf 'latmed 0 %s us\nlatmed 8 %s us\nlatmed 64 %s us\n' "$v" "$v" "$v" > "$tmp/out.pair-fallback.$r"
    printf 'latmed 8 0.75 us\nlatmed 64 0.75 us\n' > "$tmp/out.pair-raw.$r"
    r=$((r + 1))
done
expect "pair_sizes with NUM: the plain framed TCP against btl tcp" "64 0.8000 0.7900 0.8100 3" \
    "$(pair_sizes tcp 0 fallback | tail -n 1)"
expect "pair_sizes against the plain framed TCP" "64 1.0506 1.0250 1.0741 3" \
    "$(pair_sizes fallback 0 | tail -n 1)"
pair_reps=3
row=$(report_pair | grep '^| 64 B |')
case $row in
"| 64 B | 1.107× (1.09-1.16) | 0.830× (0.82-0.87) | 0.800× (0.79-0.81) | 1.051× (1.02-1.07) |") ok "report_pair: a size's row with all four ratios" ;;
*) notok "report_pair row: $row" ;;
esac
# without the plain framed TCP's rounds the table keeps its two columns
rm "$tmp"/out.pair-fallback.*
row=$(report_pair | grep '^| 64 B |')
expect "report_pair without the plain framed TCP" "| 64 B | 1.107× (1.09-1.16) | 0.830× (0.82-0.87) |" "$row"

# Paired bandwidth: siwarp against the best of two others at each size and
# round; at 16 KiB the ratios are 1.20, 1.05, 1.15 (median 1.15), at 1 MiB
# 1.30, 1.25, 1.12 (median 1.25): the worst size's median is 1.15 at 16
# KiB, while the median of the rounds' worst sizes (the goal's) is 1.12.
tmp=$all/bw; mkdir "$tmp"
others="tcp ucx"
r=0
for row in "1200 1000 900 1300 1000 800" "1050 900 1000 1250 1000 900" "1150 1000 600 1120 900 1000"; do
    # shellcheck disable=SC2086
    set -- $row
    printf 'bw 16384 %s MB/s\nbw 1048576 %s MB/s\n' "$1" "$4" > "$tmp/out.bwpair-siwarp.$r"
    printf 'bw 16384 %s MB/s\nbw 1048576 %s MB/s\n' "$2" "$5" > "$tmp/out.bwpair-tcp.$r"
    printf 'bw 16384 %s MB/s\nbw 1048576 %s MB/s\n' "$3" "$6" > "$tmp/out.bwpair-ucx.$r"
    r=$((r + 1))
done
expect "bwpair_worst_size: the worst size's median, against the best other" "1.1500 16384" "$(bwpair_worst_size bw)"
expect "bwpair_median: the median of the rounds' worst sizes" "1.1200 1048576" "$(bwpair_median bw)"
tmp=$all
