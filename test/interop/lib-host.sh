# lib-host.sh - shell helpers the host-side interop runners share (sourced
# by run-interop.sh, run-perftest.sh, run-hw.sh, run-mpi-hw.sh).

now_ms() { date +%s%3N; }

# wait_for SECONDS COMMAND...: true once COMMAND succeeds, false at the deadline
wait_for() {
    local end=$(( $(now_ms) + $1 * 1000 ))
    shift
    until "$@"; do
        [ "$(now_ms)" -ge "$end" ] && return 1
        sleep 0.05
    done
}

# tap ok|"not ok" NAME [DIRECTIVE]: one TAP line, numbered by the caller's $n
tap() {
    n=$((n + 1))
    echo "$1 $n - $2${3:+ # $3}"
}
