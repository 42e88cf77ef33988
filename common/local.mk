# common/local.mk - the protocol core (libswpcore, PIC convenience library,
# shared by libsiwarp and the Open MPI BTL plugin) and the public libsiwarp.

noinst_LTLIBRARIES += common/libswpcore.la
common_libswpcore_la_SOURCES = \
	common/crc32c.c \
	common/crc32c.h \
	common/crc32c_x86.c \
	common/mpa.c \
	common/ddp.c \
	common/rdmap.c \
	common/cm.c \
	common/cm_listen.c \
	common/mpa.h \
	common/qp.c \
	common/qp_tx.c \
	common/qp_tx_ops.c \
	common/qp_tx.h \
	common/qp_rx.c \
	common/qp_rx_ops.c \
	common/qp_rx_direct.c \
	common/qp_ext.c common/atomic_map.c \
	common/read_hint.c common/read_hint.h \
	common/qpn_map.c common/qpn_map.h \
	common/srq.c \
	common/mem.c \
	common/cq.c \
	common/progress.c \
	common/progress_thread.c \
	common/tcp_cc.c \
	common/timeline.c common/timeline.h \
	common/verbs.c \
	common/iwarp_wire.h \
	common/swp.h
common_libswpcore_la_LIBADD = -lpthread
common_libswpcore_la_SOURCES += common/backend.c common/hw.h
if HAVE_VERBS
common_libswpcore_la_SOURCES += common/hw_verbs.c common/hw_qp.c common/hw_cm.c common/hw_async.c common/hw_int.h \
	common/hw_dl.c common/hw_dl.h
# rdma-core is dlopen'ed on first use (hw_dl.h), not linked
common_libswpcore_la_LIBADD += -ldl
else
common_libswpcore_la_SOURCES += common/hw_stub.c
endif

# The adapters' handshake primitives (auth.h): HMAC-SHA256 from nettle,
# which libsiwarp itself does not need, so a library of its own.
if HAVE_AUTH
noinst_LTLIBRARIES += common/libswpauth.la
common_libswpauth_la_SOURCES = common/auth.c common/auth.h
common_libswpauth_la_CFLAGS = $(SWP_CFLAGS) $(NETTLE_CFLAGS)
common_libswpauth_la_LIBADD = $(NETTLE_LIBS) -lpthread

check_PROGRAMS += test/unit/test_auth
TESTS += test/unit/test_auth
test_unit_test_auth_SOURCES = test/unit/test_auth.c
test_unit_test_auth_LDADD = $(LDADD) common/libswpauth.la
endif

lib_LTLIBRARIES += libsiwarp.la
libsiwarp_la_SOURCES =
libsiwarp_la_LIBADD = common/libswpcore.la -lpthread
libsiwarp_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^siwarp_'

# installed as <siwarp/siwarp.h> (nobase_ would add the source's include/)
siwarpincludedir = $(includedir)/siwarp
siwarpinclude_HEADERS = include/siwarp/siwarp.h

# CRC32c throughput of each implementation (4 KiB and 1 MiB buffers).
noinst_PROGRAMS += contrib/crc32c-bench
contrib_crc32c_bench_SOURCES = contrib/crc32c-bench.c
contrib_crc32c_bench_LDADD = common/libswpcore.la -lpthread

# which backend a context gets (SIWARP_DEVICE, siwarp_ctx_create_dev)
check_PROGRAMS += test/unit/test_backend
TESTS += test/unit/test_backend
test_unit_test_backend_SOURCES = test/unit/test_backend.c

# pkg-config file of libsiwarp (README: "Using libsiwarp"); made by make,
# not configure, so that `make install prefix=...` and DESTDIR follow it
pkgconfigdir = $(libdir)/pkgconfig
nodist_pkgconfig_DATA = common/siwarp.pc
EXTRA_DIST += common/siwarp.pc.in
CLEANFILES += common/siwarp.pc
common/siwarp.pc: common/siwarp.pc.in Makefile
	$(AM_V_GEN)$(MKDIR_P) common && sed -e 's|@prefix[@]|$(prefix)|g' \
	    -e 's|@exec_prefix[@]|$(exec_prefix)|g' -e 's|@libdir[@]|$(libdir)|g' \
	    -e 's|@includedir[@]|$(includedir)|g' -e 's|@VERSION[@]|$(VERSION)|g' \
	    $(top_srcdir)/common/siwarp.pc.in >$@
