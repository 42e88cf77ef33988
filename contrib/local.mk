# contrib/local.mk - benchmarks and helpers (included by the top-level
# Makefile.am; paths relative to the top of the tree; append with +=).

# siwarp-perf: perftest-like latency / bandwidth of Send, Write and Read over
# libsiwarp, with a plain TCP baseline (--tcp).  Installed: it is a user tool.
bin_PROGRAMS += contrib/siwarp-perf
contrib_siwarp_perf_SOURCES = contrib/siwarp-perf.c
contrib_siwarp_perf_LDADD = common/libswpcore.la -lpthread

# the README's main job, and the namespace helper used by test/integ
dist_noinst_SCRIPTS += contrib/run-main.sh contrib/netns.sh contrib/netns-mpirun.sh contrib/lib-bench.sh \
	contrib/bench-mpi.sh contrib/bench-oversub.sh contrib/bench-raw.sh contrib/bench-report.sh contrib/bench-rma.sh \
	contrib/setup.sh \
	contrib/ci-sanitizers.sh contrib/bench-cc.sh

# probes/: one-off programs kept as the evidence PERFORMANCE.md and the code
# cite, each built by hand (see its header), not part of the build:
# turnaround.c (user-space time per reply, preloaded), wait-pingpong.c
# (busy polling against sleeping), uring-pingpong.c (io_uring against recv),
# tcp-streams.c (several connections, MSG_ZEROCOPY), tcp-two-sockets.c (one
# connection per direction against one for both), ep-lookup.c (endpoint by
# peer name: list walk against hash table), uct-idle-progress.c (an idle
# UCT progress call against the number of eps), copy-offset.c (copy speed
# by the distance of destination and source modulo 4 KiB)
EXTRA_DIST += contrib/probes/turnaround.c contrib/probes/wait-pingpong.c \
	contrib/probes/uring-pingpong.c contrib/probes/tcp-streams.c \
	contrib/probes/tcp-two-sockets.c contrib/probes/conn-ab.sh contrib/probes/ep-lookup.c \
	contrib/probes/uct-idle-progress.c contrib/probes/qpn-lookup.c \
	contrib/probes/copy-offset.c contrib/probes/timeline.py contrib/probes/rndv-floor.c \
	contrib/README.md
EXTRA_DIST += contrib/ompi5-root.sh

# in the tarball too (make dist): the analysis, and the probes it cites
EXTRA_DIST += contrib/PERFORMANCE.md

# issue 38's scale figures: many ranks over N namespaces joined by a bridge
dist_noinst_SCRIPTS += contrib/bench-scale.sh contrib/netns-nodes.sh
