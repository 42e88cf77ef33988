# lib-perftest.sh - sourced: ucx_perftest_pair LOG ARGS... runs one
# ucx_perftest server and client over 127.0.0.1 with the siwarp module
# preloaded ($MOD) and every run under timeout ($T seconds).  Readiness is
# the server's "Waiting for connection" line, read through a pipe.  Sets
# pt_crc / pt_src (client / server exit) and pt_row (the result row, empty
# if none): iterations, then latency percentile, average, overall, then
# bandwidth average, overall, then message rates.  PT_SERVER_ARGS and
# PT_CLIENT_ARGS go to one side only (contrib/bench-uct.sh: -c CPU);
# PT_SERVER_PRE / PT_CLIENT_PRE are words in front of each side's command
# (e.g. "ip netns exec NS env UCX_NET_DEVICES=DEV": the veth pair of
# contrib/netns.sh), and PT_HOST the server's address (127.0.0.1).
ucx_perftest_pair() {
    # a random port may be taken (another test, a socket in TIME_WAIT): the
    # server says "bind() failed" and the pair is tried on another, 3 times
    for attempt in 1 2 3; do
        ucx_perftest_pair_once "$@"
        grep -q "bind() failed" "$1" || break
    done
}
ucx_perftest_pair_once() {
    plog=$1; shift
    d=$(mktemp -d)
    mkfifo "$d/out"
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 30000))
    # stdbuf: the server's stdout is a pipe, and its readiness line must not
    # wait in a stdio buffer
    # shellcheck disable=SC2086
    ${PT_SERVER_PRE:-} timeout "$T" env LD_PRELOAD="$MOD" stdbuf -oL ucx_perftest -p $port ${PT_SERVER_ARGS:-} "$@" \
        >"$d/out" 2>&1 &
    sp=$!
    exec 3<"$d/out"
    : >"$plog"
    while IFS= read -r line <&3; do
        echo "$line" >>"$plog"
        case $line in *"Waiting for connection"*) break ;; esac
    done
    cat <&3 >>"$plog" &
    cp=$!
    # shellcheck disable=SC2086
    ${PT_CLIENT_PRE:-} timeout "$T" env LD_PRELOAD="$MOD" ucx_perftest "${PT_HOST:-127.0.0.1}" -p $port ${PT_CLIENT_ARGS:-} "$@" -f \
        >"$d/client" 2>&1
    pt_crc=$?
    wait $sp; pt_src=$?
    wait $cp
    exec 3<&-
    cat "$d/client" >>"$plog"
    rm -rf "$d"
    pt_row=$(grep -E '^ +[0-9]+ +[0-9.]+ ' "$plog" | tail -n 1)
}
