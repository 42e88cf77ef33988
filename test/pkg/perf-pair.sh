#!/bin/sh
# perf-pair.sh - siwarp-perf against itself over loopback: a server on a
# port the kernel picks, whose "listening port=N" line (read through a
# fifo, never a sleep) starts the client.  Prints the client's result;
# exits with the client's status.  Each side bounded by timeout.
#   perf-pair.sh SIWARP_PERF [CLIENT_ARGS...]   (default: -t write -m lat -n 1000)
perf=$1
shift
[ $# -gt 0 ] || set -- -t write -m lat -n 1000
tmp=$(mktemp -d "${TMPDIR:-/tmp}/perf-pair.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/ready"
timeout 60 "$perf" -s -a 127.0.0.1 -p 0 --once >"$tmp/ready" 2>"$tmp/srv.err" &
srv=$!
# fd 3 stays open until the server is done: it never writes into a closed pipe
exec 3<"$tmp/ready"
port=
while read -r line <&3; do
    case $line in "listening port="*) port=${line#listening port=}; break ;; esac
done
if [ -z "$port" ]; then
    echo "perf-pair: the server did not listen:"; cat "$tmp/srv.err"
    exit 1
fi
timeout 60 "$perf" -c 127.0.0.1 -p "$port" "$@"
rc=$?
cat <&3 >/dev/null
wait "$srv" || { echo "perf-pair: server ended with status $?:"; cat "$tmp/srv.err"; rc=1; }
exec 3<&-
exit $rc
