# test/integ/local.mk - two-process integration tests (fork: parent server,
# child client) and the tshark wire-conformance script.  Included by the
# top-level Makefile.am; paths are relative to the top of the tree.
# Programs link test/libharness.la, common/libswpcore.la and -lpthread
# through the default LDADD of test/local.mk.

INTEG_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/common -I$(top_srcdir)/test \
	-DSWP_SRCDIR='"$(abs_top_srcdir)"'
INTEG_SRC = test/integ/integ.c test/integ/integ.h

check_PROGRAMS += test/integ/test_integ_ops test/integ/test_integ_matrix \
	test/integ/test_integ_errors test/integ/test_integ_netns
TESTS += test/integ/test_integ_ops test/integ/test_integ_matrix \
	test/integ/test_integ_errors test/integ/test_integ_netns

test_integ_test_integ_ops_SOURCES = test/integ/test_integ_ops.c $(INTEG_SRC)
test_integ_test_integ_ops_CPPFLAGS = $(INTEG_CPPFLAGS)
test_integ_test_integ_matrix_SOURCES = test/integ/test_integ_matrix.c $(INTEG_SRC)
test_integ_test_integ_matrix_CPPFLAGS = $(INTEG_CPPFLAGS)
test_integ_test_integ_errors_SOURCES = test/integ/test_integ_errors.c $(INTEG_SRC)
test_integ_test_integ_errors_CPPFLAGS = $(INTEG_CPPFLAGS)
test_integ_test_integ_netns_SOURCES = test/integ/test_integ_netns.c $(INTEG_SRC)
test_integ_test_integ_netns_CPPFLAGS = $(INTEG_CPPFLAGS)

# Wire conformance: siwarp-perf captured with tshark, decoded with
# Wireshark's iwarp_mpa / iwarp_ddp_rdmap dissectors (TAP script).
TESTS += test/integ/test_tshark.sh
EXTRA_DIST += test/integ/test_tshark.sh

# RFC 7306 traffic for test_tshark.sh's capture of atomics and Immediate
# Data (a helper, not a test of its own).
check_PROGRAMS += test/integ/rfc7306_traffic
test_integ_rfc7306_traffic_SOURCES = test/integ/rfc7306_traffic.c
