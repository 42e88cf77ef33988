# test/hostile/local.mk - hostile peers at the connection level (raw sockets
# against the listener and the connect path) and registration churn.
# Programs link test/libharness.la, common/libswpcore.la and -lpthread
# through the default LDADD of test/local.mk.

check_PROGRAMS += test/hostile/test_hostile_listen test/hostile/test_hostile_connect \
	test/hostile/test_reg_stress
TESTS += test/hostile/test_hostile_listen test/hostile/test_hostile_connect \
	test/hostile/test_reg_stress
test_hostile_test_hostile_listen_SOURCES = test/hostile/test_hostile_listen.c test/hostile/hostile.h
test_hostile_test_hostile_connect_SOURCES = test/hostile/test_hostile_connect.c test/hostile/hostile.h
test_hostile_test_reg_stress_SOURCES = test/hostile/test_reg_stress.c

# A stranger knocking at an MPI job's listeners: run by run-mpi-tests.sh
# (hostile), which builds it on demand; not a test on its own.
check_PROGRAMS += test/hostile/siwarp_stranger
test_hostile_siwarp_stranger_SOURCES = test/hostile/siwarp_stranger.c
