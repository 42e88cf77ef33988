# test/integ/local.mk - placeholder; owned by the test/integ owner (append with +=).
