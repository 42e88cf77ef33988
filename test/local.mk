# test/local.mk - unit tests and the test driver.
#
# Every test program prints TAP (see test/harness.h) and runs under
# automake's TAP driver.  To add a test, in YOUR fragment (test/integ/local.mk,
# test/mpi/local.mk, ...) write:
#
#   check_PROGRAMS += test/integ/test_foo
#   TESTS          += test/integ/test_foo
#   test_integ_test_foo_SOURCES = test/integ/test_foo.c test/harness.h
#
# Programs get test/harness.c, libswpcore and pthreads through LDADD below.
# Shell tests end in .sh: `TESTS += test/mpi/foo.sh` (also TAP), plus
# `EXTRA_DIST += test/mpi/foo.sh`.

LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
SH_LOG_DRIVER = $(LOG_DRIVER)
AM_TESTS_ENVIRONMENT = top_srcdir='$(top_srcdir)' top_builddir='$(top_builddir)'; \
	export top_srcdir top_builddir;

# The harness, as a tiny library so each test program only lists its own
# file.  Built with `make all` (it is small) so that any program using the
# default LDADD links, tests or not.
noinst_LTLIBRARIES += test/libharness.la
test_libharness_la_SOURCES = test/harness.c test/harness.h test/qp_pair.c test/qp_pair.h

LDADD = test/libharness.la common/libswpcore.la -lpthread

# ---- unit tests (test/unit) ---------------------------------------------------
# Append new unit tests here, one pair of lines per program.
check_PROGRAMS += test/unit/test_crc32c
TESTS += test/unit/test_crc32c
test_unit_test_crc32c_SOURCES = test/unit/test_crc32c.c

EXTRA_DIST += test/run-tests.sh
check_PROGRAMS += test/unit/test_datapath
TESTS += test/unit/test_datapath
test_unit_test_datapath_SOURCES = test/unit/test_datapath.c
check_PROGRAMS += test/unit/test_tx_direct
TESTS += test/unit/test_tx_direct
test_unit_test_tx_direct_SOURCES = test/unit/test_tx_direct.c
check_PROGRAMS += test/unit/test_hw_post
TESTS += test/unit/test_hw_post
test_unit_test_hw_post_SOURCES = test/unit/test_hw_post.c test/hw_rig.h
check_PROGRAMS += test/unit/test_hw_async
TESTS += test/unit/test_hw_async
test_unit_test_hw_async_SOURCES = test/unit/test_hw_async.c test/hw_rig.h
check_PROGRAMS += test/unit/test_read_hint
TESTS += test/unit/test_read_hint
test_unit_test_read_hint_SOURCES = test/unit/test_read_hint.c
check_PROGRAMS += test/unit/test_rx_errors
TESTS += test/unit/test_rx_errors
test_unit_test_rx_errors_SOURCES = test/unit/test_rx_errors.c test/raw_peer.c test/raw_peer.h
check_PROGRAMS += test/unit/test_atomics
TESTS += test/unit/test_atomics
test_unit_test_atomics_SOURCES = test/unit/test_atomics.c
check_PROGRAMS += test/unit/test_atomic_errors
TESTS += test/unit/test_atomic_errors
test_unit_test_atomic_errors_SOURCES = test/unit/test_atomic_errors.c test/raw_peer.c test/raw_peer.h
check_PROGRAMS += test/unit/test_peer_close
TESTS += test/unit/test_peer_close
test_unit_test_peer_close_SOURCES = test/unit/test_peer_close.c
check_PROGRAMS += test/unit/test_verify_first
TESTS += test/unit/test_verify_first
test_unit_test_verify_first_SOURCES = test/unit/test_verify_first.c
check_PROGRAMS += test/unit/test_cm_patience
TESTS += test/unit/test_cm_patience
test_unit_test_cm_patience_SOURCES = test/unit/test_cm_patience.c
check_PROGRAMS += test/unit/test_rx_spec
TESTS += test/unit/test_rx_spec
test_unit_test_rx_spec_SOURCES = test/unit/test_rx_spec.c
check_PROGRAMS += test/unit/test_qpn_map
TESTS += test/unit/test_qpn_map
test_unit_test_qpn_map_SOURCES = test/unit/test_qpn_map.c
check_PROGRAMS += test/unit/test_rings
TESTS += test/unit/test_rings
test_unit_test_rings_SOURCES = test/unit/test_rings.c
check_PROGRAMS += test/unit/test_park
TESTS += test/unit/test_park
test_unit_test_park_SOURCES = test/unit/test_park.c
check_PROGRAMS += test/unit/test_progress_thread
TESTS += test/unit/test_progress_thread
test_unit_test_progress_thread_SOURCES = test/unit/test_progress_thread.c
check_PROGRAMS += test/unit/test_single_thread
TESTS += test/unit/test_single_thread
test_unit_test_single_thread_SOURCES = test/unit/test_single_thread.c
check_PROGRAMS += test/unit/test_rx_cuts
TESTS += test/unit/test_rx_cuts
test_unit_test_rx_cuts_SOURCES = test/unit/test_rx_cuts.c test/raw_peer.c test/raw_peer.h
check_PROGRAMS += test/unit/test_srq
TESTS += test/unit/test_srq
test_unit_test_srq_SOURCES = test/unit/test_srq.c
check_PROGRAMS += test/unit/test_recv_handler
TESTS += test/unit/test_recv_handler
test_unit_test_recv_handler_SOURCES = test/unit/test_recv_handler.c
check_PROGRAMS += test/unit/test_mpa
TESTS += test/unit/test_mpa
test_unit_test_mpa_SOURCES = test/unit/test_mpa.c
check_PROGRAMS += test/unit/test_wire
TESTS += test/unit/test_wire
test_unit_test_wire_SOURCES = test/unit/test_wire.c
check_PROGRAMS += test/unit/test_idle_wait
TESTS += test/unit/test_idle_wait
test_unit_test_idle_wait_SOURCES = test/unit/test_idle_wait.c
check_PROGRAMS += test/unit/test_tcp_cc
TESTS += test/unit/test_tcp_cc
test_unit_test_tcp_cc_SOURCES = test/unit/test_tcp_cc.c
TESTS += test/unit/test_bench_report.sh
EXTRA_DIST += test/unit/test_bench_report.sh
