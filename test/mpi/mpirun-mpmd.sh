#!/bin/sh
# mpirun-mpmd.sh - an MPMD mpirun line ("-np 1 -x A=1 prog args : -np 3
# prog args") run as one SPMD job, for a launcher that cannot take MPMD:
# Debian 13's mpirun (Open MPI 5.0.7's PRRTE with an external PMIx) crashes
# on any line with a ":" (open-mpi/ompi#13303).  lib-mpi-tap.sh puts it
# first in PATH as "mpirun" only where a probe saw that crash.
#
# Options before the first -np/-n are the job's; each app context may have
# -np N and -x VAR[=VALUE], then its program and arguments.  Every rank
# runs `sh mpirun-mpmd.sh --exec DIR`, which finds its context by its rank
# (OMPI_COMM_WORLD_RANK), sets that context's variables and execs its
# program.  A line without ":" goes to the real mpirun unchanged.
#
# Environment: MPMD_REAL_MPIRUN, the real mpirun (required).
set -u

self=$(cd "$(dirname "$0")" && pwd)/mpirun-mpmd.sh

if [ "${1:-}" = "--exec" ]; then
    dir=$2
    rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}
    [ -n "$rank" ] || { echo "mpirun-mpmd.sh: no rank in the environment" >&2; exit 1; }
    k=0 first=0
    while [ -f "$dir/$k.np" ]; do
        np=$(cat "$dir/$k.np")
        if [ "$rank" -lt $((first + np)) ]; then
            while IFS= read -r kv; do
                export "${kv?}"
            done < "$dir/$k.env"
            set --
            while IFS= read -r a; do
                set -- "$@" "$a"
            done < "$dir/$k.argv"
            exec "$@"
        fi
        first=$((first + np))
        k=$((k + 1))
    done
    echo "mpirun-mpmd.sh: rank $rank is in no app context of $dir" >&2
    exit 1
fi

real=${MPMD_REAL_MPIRUN:?mpirun-mpmd.sh needs MPMD_REAL_MPIRUN}
mpmd=0
for a in "$@"; do [ "$a" = ":" ] && mpmd=1; done
[ $mpmd = 1 ] || exec "$real" "$@"

dir=$(mktemp -d)
k=0 total=0 state=global
: > "$dir/global"
: > "$dir/0.env"; : > "$dir/0.argv"
while [ $# -gt 0 ]; do
    a=$1
    shift
    case $state:$a in
        global:-np|global:-n|global:--np)
            state=ctx ;;
        global:*)
            printf '%s\n' "$a" >> "$dir/global"; continue ;;
    esac
    case $state:$a in
        ctx:-np|ctx:-n|ctx:--np)
            echo "$1" > "$dir/$k.np"; total=$((total + $1)); shift ;;
        ctx:-x)
            case $1 in *=*) kv=$1 ;; *) kv="$1=$(printenv "$1")" ;; esac
            printf '%s\n' "$kv" >> "$dir/$k.env"; shift ;;
        ctx:-*)
            echo "mpirun-mpmd.sh: option $a in an app context is not handled" >&2
            rm -rf "$dir"; exit 2 ;;
        ctx:*|prog:*)
            if [ "$a" = ":" ]; then
                [ -f "$dir/$k.np" ] || { echo 1 > "$dir/$k.np"; total=$((total + 1)); }
                k=$((k + 1)); state=ctx
                : > "$dir/$k.env"; : > "$dir/$k.argv"
            else
                printf '%s\n' "$a" >> "$dir/$k.argv"; state=prog
            fi ;;
    esac
done
[ -f "$dir/$k.np" ] || { echo 1 > "$dir/$k.np"; total=$((total + 1)); }

set --
while IFS= read -r a; do set -- "$@" "$a"; done < "$dir/global"
"$real" "$@" -np "$total" sh "$self" --exec "$dir" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT HUP
wait $pid
rc=$?
# a signal interrupts the first wait; the job's own status comes after it
kill -0 $pid 2>/dev/null && { wait $pid; rc=$?; }
rm -rf "$dir"
exit $rc
