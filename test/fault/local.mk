# test/fault/local.mk - fault injection: contrib/fault-proxy (a TCP proxy
# that flips bits, drops, stalls and delays on command), libsiwarp tests
# through it, MPI fault tests (dead rank, CRC error through the proxy, data
# link down across network namespaces) and the soak test.
#
#   make check          runs test_fault_lib, mpi-faults.sh and a ~60 s soak
#   make soak           the long soak: SOAK_MINUTES (default 5) minutes

noinst_PROGRAMS += contrib/fault-proxy
contrib_fault_proxy_SOURCES = contrib/fault-proxy.c
contrib_fault_proxy_LDADD =

check_PROGRAMS += test/fault/test_fault_lib
TESTS += test/fault/test_fault_lib
test_fault_test_fault_lib_SOURCES = test/fault/test_fault_lib.c
test_fault_test_fault_lib_CPPFLAGS = $(AM_CPPFLAGS) -DSWP_BUILDDIR='"$(abs_top_builddir)"'
