# test/mpi/local.mk - placeholder; owned by the test/mpi owner (append with +=).
