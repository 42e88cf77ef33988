# test/interop/local.mk - interoperability with Linux kernel soft-iWARP (siw).
#
#   make check                 runs the VM-free tests below (trace parsing,
#                              handshake/first-FPDU coalescing)
#   make check-interop         boots the siw guest (building it with
#                              ../shared/siw-vm/build-guest.sh when missing)
#                              and runs the rping matrix; not part of check
#   make check-interop-perftest  the same guest, perftest (ib_*_bw -R) in
#                              both roles against contrib/siwarp-perftest
# Paths are relative to the top of the tree.

bin_PROGRAMS += contrib/siwarp-rping
contrib_siwarp_rping_SOURCES = contrib/siwarp-rping.c
contrib_siwarp_rping_LDADD = common/libswpcore.la -lpthread
# perftest's -R protocol (ib_write_bw / ib_read_bw / ib_send_bw), both roles
bin_PROGRAMS += contrib/siwarp-perftest
contrib_siwarp_perftest_SOURCES = contrib/siwarp-perftest-main.c contrib/siwarp-perftest.c \
	contrib/siwarp-perftest-data.c contrib/siwarp-perftest.h
contrib_siwarp_perftest_LDADD = common/libswpcore.la -lpthread

# ---- VM-free tests (part of make check) -----------------------------------------
INTEROP_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/common -I$(top_srcdir)/test \
	-DSWP_SRCDIR='"$(abs_top_srcdir)"'
check_PROGRAMS += test/interop/test_traces test/interop/test_handshake_race
TESTS += test/interop/test_traces test/interop/test_handshake_race \
	test/interop/test_rping_verdict.sh test/interop/test_crc_verdict.sh
test_interop_test_traces_SOURCES = test/interop/test_traces.c
test_interop_test_traces_CPPFLAGS = $(INTEROP_CPPFLAGS)
test_interop_test_handshake_race_SOURCES = test/interop/test_handshake_race.c
test_interop_test_handshake_race_CPPFLAGS = $(INTEROP_CPPFLAGS)

# ---- against Linux siw in a qemu guest (make check-interop) ------------------------
SIWVM ?= /tmp/siwvm
SIWVM_SCRIPTS ?= $(abs_top_srcdir)/../shared/siw-vm
EXTRA_DIST += test/interop/lib-host.sh test/interop/lib-guest.sh \
	test/interop/test_rping_verdict.sh test/interop/test_crc_verdict.sh
EXTRA_DIST += test/interop/run-interop.sh test/interop/guest-interop.sh \
	test/interop/ci-interop.sh test/interop/extract-streams.sh test/interop/traces

# Builds the guest when it is missing, then runs the matrix (TAP and a
# summary table; logs and captures under $(INTEROP_OUT) when set).
check-interop: contrib/siwarp-rping
	@if [ ! -f "$(SIWVM)/vmlinux" ] || [ ! -f "$(SIWVM)/initrd.img" ]; then \
	    SIWVM="$(SIWVM)" "$(SIWVM_SCRIPTS)/build-guest.sh" || exit 1; \
	fi
	@SIWVM="$(SIWVM)" SIWVM_SCRIPTS="$(SIWVM_SCRIPTS)" top_srcdir="$(abs_top_srcdir)" \
	    top_builddir="$(abs_top_builddir)" OUT="$${INTEROP_OUT:-}" \
	    $(SHELL) $(top_srcdir)/test/interop/run-interop.sh $(INTEROP_BOOTS)
.PHONY: check-interop

# perftest -R (write/read/send bw) against siwarp-perftest, both roles, on
# stock siw and siw with siwfix=1: test/interop/run-perftest.sh (TAP and a
# summary table; PERFTEST_BOOTS="stock" to run one set-up).
EXTRA_DIST += test/interop/run-perftest.sh test/interop/guest-perftest.sh
check-interop-perftest: contrib/siwarp-perftest
	@if [ ! -f "$(SIWVM)/vmlinux" ] || [ ! -f "$(SIWVM)/initrd.img" ]; then \
	    SIWVM="$(SIWVM)" "$(SIWVM_SCRIPTS)/build-guest.sh" || exit 1; \
	fi
	@SIWVM="$(SIWVM)" SIWVM_SCRIPTS="$(SIWVM_SCRIPTS)" top_srcdir="$(abs_top_srcdir)" \
	    top_builddir="$(abs_top_builddir)" OUT="$${INTEROP_OUT:+$${INTEROP_OUT}/perftest}" \
	    $(SHELL) $(top_srcdir)/test/interop/run-perftest.sh $(PERFTEST_BOOTS)
.PHONY: check-interop-perftest

# The verbs backend (rdma-core) over siw0 in the guest, and the mixed case
# (guest siw0 <-> host software backend): test/interop/run-hw.sh.
EXTRA_DIST += test/interop/run-hw.sh test/interop/guest-hw.sh
check-interop-hw: contrib/siwarp-rping
	@if [ ! -f "$(SIWVM)/vmlinux" ] || [ ! -f "$(SIWVM)/initrd.img" ]; then \
	    SIWVM="$(SIWVM)" "$(SIWVM_SCRIPTS)/build-guest.sh" || exit 1; \
	fi
	@SIWVM="$(SIWVM)" SIWVM_SCRIPTS="$(SIWVM_SCRIPTS)" top_srcdir="$(abs_top_srcdir)" \
	    top_builddir="$(abs_top_builddir)" OUT="$${INTEROP_OUT:-}" \
	    $(SHELL) $(top_srcdir)/test/interop/run-hw.sh $(INTEROP_HW_BOOTS)
.PHONY: check-interop-hw

# The BTL over the verbs backend in the guest, and the mixed-cluster MPI job
# (host rank: software backend, guest rank: siw0 through verbs): a guest
# with Open MPI (test/interop/build-guest-mpi.sh), test/interop/run-mpi-hw.sh.
SIWVM_MPI ?= /tmp/siwvm-mpi
EXTRA_DIST += test/interop/build-guest-mpi.sh test/interop/run-mpi-hw.sh \
	test/interop/guest-mpi.sh test/interop/HW.md
# the guest with Open MPI and UCX, built when missing
SIWVM_MPI_GUEST = if [ ! -f "$(SIWVM_MPI)/vmlinux" ] || [ ! -f "$(SIWVM_MPI)/initrd.img" ]; then \
	    SIWVM="$(SIWVM)" SIWVM_MPI="$(SIWVM_MPI)" SIWVM_SCRIPTS="$(SIWVM_SCRIPTS)" \
	    $(SHELL) $(top_srcdir)/test/interop/build-guest-mpi.sh || exit 1; \
	fi
check-interop-mpi-hw: all
	@$(SIWVM_MPI_GUEST)
	@SIWVM_MPI="$(SIWVM_MPI)" SIWVM_SCRIPTS="$(SIWVM_SCRIPTS)" top_srcdir="$(abs_top_srcdir)" \
	    top_builddir="$(abs_top_builddir)" OUT="$${INTEROP_OUT:-}" \
	    $(SHELL) $(top_srcdir)/test/interop/run-mpi-hw.sh
.PHONY: check-interop-mpi-hw

# The UCX transport (uct_siwarp) over the verbs backend on the guest's siw0,
# and host (software) <-> guest (siw0): ucx_info, ucx_perftest at UCT and
# UCP level, a mixed MPI job over pml/osc ucx: test/interop/run-uct-hw.sh
# (the guest of check-interop-mpi-hw, which has UCX).
EXTRA_DIST += test/interop/run-uct-hw.sh test/interop/guest-uct.sh
check-interop-uct-hw: all
	@$(SIWVM_MPI_GUEST)
	@SIWVM_MPI="$(SIWVM_MPI)" SIWVM_SCRIPTS="$(SIWVM_SCRIPTS)" top_srcdir="$(abs_top_srcdir)" \
	    top_builddir="$(abs_top_builddir)" OUT="$${INTEROP_OUT:+$${INTEROP_OUT}/uct-hw}" \
	    $(SHELL) $(top_srcdir)/test/interop/run-uct-hw.sh
.PHONY: check-interop-uct-hw
