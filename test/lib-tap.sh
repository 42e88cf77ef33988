# lib-tap.sh - sourced: the TAP helpers of the shell test drivers that run
# MPI jobs (test/mpi/lib-mpi-tap.sh, test/fault/mpi-faults.sh, the Debian 13
# root's script of test/mpi/run-ompi5-tests.sh).  Counts in n and failed;
# the caller prints the plan ("1..$n") at its end.
n=0
failed=0
ok()      { n=$((n + 1)); echo "ok $n - $1"; }
not_ok()  { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
skip()    { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# diag LOG [LINES]: a log's last lines (25) as TAP comments, NUL bytes
# (Open MPI 5's prterun writes some) dropped, and a last line without its
# newline still ending with one
diag()    { tr -d '\000' < "$1" | tail -n "${2:-25}" | awk '{ print "# " $0 }'; }
