# test/mpi/local.mk - MPI tests of the siwarp BTL (mpirun over loopback).
# The programs are built by the driver with mpicc (automake cannot switch CC
# per target), into $(builddir)/test/mpi; the driver prints TAP.

if HAVE_OMPI
TESTS += test/mpi/run-mpi-tests.sh test/mpi/run-dyn-tests.sh test/mpi/run-rma-tests.sh \
	test/mpi/valgrind-mpi.sh
endif
dist_noinst_SCRIPTS += test/mpi/run-mpi-tests.sh test/mpi/run-dyn-tests.sh test/mpi/run-rma-tests.sh \
	test/mpi/run-ompi5-tests.sh \
	test/mpi/valgrind-mpi.sh
EXTRA_DIST += test/lib-tap.sh test/mpi/lib-mpi-tap.sh test/mpi/mpirun-mpmd.sh
EXTRA_DIST += \
	test/mpi/mpi_common.h \
	test/mpi/mpi_dyn.h \
	test/mpi/mpi_pingpong.c \
	test/mpi/mpi_anysrc.c \
	test/mpi/mpi_datatype.c \
	test/mpi/mpi_flood.c \
	test/mpi/mpi_coll.c \
	test/mpi/mpi_onesided.c \
	test/mpi/mpi_remap.c \
	test/mpi/mpi_hostile.c \
	test/mpi/mpi_oneway.c \
	test/mpi/mpi_big.c \
	test/mpi/mpi_connect_race.c \
	test/mpi/mpi_threads.c \
	test/mpi/mpi_regcount.c \
	test/mpi/mpi_read_hint.c \
	test/mpi/mpi_progress_rule.c \
	test/mpi/mpi_rma.c \
	test/mpi/mpi_hostile_atomic.c \
	test/mpi/mpi_passive.c \
	test/mpi/mpi_spawn.c \
	test/mpi/mpi_accept.c \
	test/mpi/mpi_join.c \
	test/mpi/mpi_stranger.c \
	test/mpi/mpi_busy_peer.c \
	test/mpi/test_regtab.c \
	test/mpi/test_eptab.c \
	test/mpi/test_ifnear.c \
	test/mpi/test_expect.h \
	test/mpi/mpi-bench.c \
	test/mpi/mpi-coll-bench.c \
	test/mpi/mpi-rma-bench.c \
	test/mpi/mpi-connect.c
CLEANFILES += test/mpi/*.log test/mpi/mpi_pingpong test/mpi/mpi_anysrc \
	test/mpi/mpi_datatype test/mpi/mpi_flood test/mpi/mpi_coll \
	test/mpi/mpi_onesided test/mpi/mpi_remap test/mpi/mpi-bench test/mpi/mpi-coll-bench test/mpi/mpi-connect \
	test/mpi/mpi_hostile test/mpi/mpi_oneway test/mpi/mpi_big test/mpi/mpi_connect_race test/mpi/mpi_progress_rule \
	test/mpi/mpi_rma test/mpi/mpi_hostile_atomic test/mpi/mpi_passive \
	test/mpi/mpi_threads test/mpi/mpi_regcount test/mpi/mpi_read_hint test/mpi/test_regtab test/mpi/test_eptab \
	test/mpi/test_ifnear test/mpi/near_topo.xml test/mpi/mpi_busy_peer test/mpi/mpi_spawn test/mpi/mpi_spawn_b test/mpi/mpi_accept test/mpi/mpi_join \
	test/mpi/dyn-ompi-server.uri
# the scale benchmark (contrib/bench-scale.sh builds it)
EXTRA_DIST += test/mpi/mpi-scale.c
