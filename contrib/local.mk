# contrib/local.mk - benchmarks and helpers (included by the top-level
# Makefile.am; paths relative to the top of the tree; append with +=).

# siwarp-perf: perftest-like latency / bandwidth of Send, Write and Read over
# libsiwarp, with a plain TCP baseline (--tcp).  Installed: it is a user tool.
bin_PROGRAMS += contrib/siwarp-perf
contrib_siwarp_perf_SOURCES = contrib/siwarp-perf.c
contrib_siwarp_perf_LDADD = common/libswpcore.la -lpthread

# the README's main job, and the namespace helper used by test/integ
dist_noinst_SCRIPTS += contrib/run-main.sh contrib/netns.sh contrib/netns-mpirun.sh \
	contrib/bench-mpi.sh contrib/bench-oversub.sh contrib/bench-raw.sh contrib/bench-report.sh contrib/bench-rma.sh \
	contrib/setup.sh \
	contrib/ci-sanitizers.sh contrib/bench-cc.sh

# turnaround.c: an LD_PRELOAD probe of the user-space time per reply (built
# by hand, see its header; the README's "where the time goes" uses it)
EXTRA_DIST += contrib/turnaround.c

# wait-pingpong.c: busy polling against sleeping in recv/poll, idle and with
# a spinner on the core (built by hand, see its header; PERFORMANCE.md,
# probes up to d9c7358)
EXTRA_DIST += contrib/wait-pingpong.c
EXTRA_DIST += contrib/ompi5-root.sh

# in the tarball too (make dist): the analysis, and the probes it cites
EXTRA_DIST += contrib/PERFORMANCE.md contrib/bench-conn-ab.sh contrib/tcp-streams.c \
	contrib/uring-pingpong.c
