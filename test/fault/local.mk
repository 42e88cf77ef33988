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

# MPI: fault cases and the short soak (mpicc builds the program in the script)
if HAVE_OMPI
TESTS += test/fault/mpi-faults.sh test/fault/soak-short.sh
endif
dist_noinst_SCRIPTS += test/fault/mpi-faults.sh test/fault/soak-short.sh contrib/soak.sh
EXTRA_DIST += test/fault/mpi_soak.c
CLEANFILES += test/fault/*.log test/fault/mpi_soak test/fault/hostfile test/fault/netns.env test/fault/mpi_busy_peer

# The long soak: make soak [SOAK_MINUTES=5]
.PHONY: soak
soak: all
	BUILDDIR=$(abs_top_builddir) srcdir=$(abs_top_srcdir) $(SHELL) $(top_srcdir)/contrib/soak.sh
