# test/uct/local.mk - tests of the UCX transport (uct_siwarp): a UCT-level
# check program built against Debian's public UCX headers, and the driver
# that also runs ucx_info, ucx_perftest, mpirun (pml/osc ucx) and oshrun.

if HAVE_UCT
check_PROGRAMS += test/uct/uct_check
test_uct_uct_check_SOURCES = test/uct/uct_check.c test/uct/uct_check_conn.c \
	test/uct/uct_check_strangers.c test/uct/uct_check.h
test_uct_uct_check_CPPFLAGS = -I$(top_srcdir)/include $(NETTLE_CFLAGS)
test_uct_uct_check_LDADD = libsiwarp.la $(NETTLE_LIBS) -luct -lucs
TESTS += test/uct/run-uct-tests.sh
endif
dist_noinst_SCRIPTS += test/uct/run-uct-tests.sh
EXTRA_DIST += test/uct/shmem_check.c test/uct/shmem_bench.c test/uct/lib-perftest.sh contrib/bench-uct.sh
CLEANFILES += test/uct/*.log test/uct/mpi_pingpong test/uct/mpi_coll test/uct/mpi_onesided \
	test/uct/mpi_rma test/uct/shmem_check test/uct/mpi_spawn test/uct/mpi_accept \
	test/uct/mpi_progress_rule test/uct/mpi_busy_peer
