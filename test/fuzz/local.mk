# test/fuzz/local.mk - libFuzzer harnesses (configure --enable-fuzzers,
# CC=clang).  The harnesses are compiled together with the library sources
# so that the fuzzer sees coverage of the code under test.  The usual way to
# run them is test/fuzz/run-fuzzers.sh [seconds], which builds on its own
# with clang and does not need configure.

EXTRA_DIST += test/fuzz/run-fuzzers.sh test/fuzz/gen_seeds.c test/fuzz/fuzz_rx_env.h \
	test/fuzz/fuzz_mpa.c test/fuzz/fuzz_rx.c test/fuzz/fuzz_term.c test/fuzz/corpus

if FUZZ
FUZZ_LIB_SRC = common/crc32c.c common/crc32c_x86.c common/mpa.c common/ddp.c common/rdmap.c common/cm.c \
	common/cm_listen.c common/qp.c common/qp_tx.c common/qp_tx_ops.c common/qp_rx.c common/qp_rx_ops.c common/qp_rx_direct.c \
	common/qp_ext.c common/srq.c common/mem.c common/cq.c common/progress.c common/progress_thread.c \
	common/tcp_cc.c common/verbs.c \
	common/backend.c common/hw_stub.c
FUZZ_FLAGS = -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/fuzz

noinst_PROGRAMS += test/fuzz/fuzz_mpa test/fuzz/fuzz_rx test/fuzz/fuzz_term test/fuzz/gen_seeds

test_fuzz_fuzz_mpa_SOURCES = test/fuzz/fuzz_mpa.c $(FUZZ_LIB_SRC)
test_fuzz_fuzz_mpa_CPPFLAGS = $(FUZZ_CPPFLAGS)
test_fuzz_fuzz_mpa_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
test_fuzz_fuzz_mpa_LDFLAGS = $(FUZZ_FLAGS)
test_fuzz_fuzz_mpa_LDADD = -lpthread

test_fuzz_fuzz_rx_SOURCES = test/fuzz/fuzz_rx.c test/fuzz/fuzz_rx_env.h $(FUZZ_LIB_SRC)
test_fuzz_fuzz_rx_CPPFLAGS = $(FUZZ_CPPFLAGS)
test_fuzz_fuzz_rx_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
test_fuzz_fuzz_rx_LDFLAGS = $(FUZZ_FLAGS)
test_fuzz_fuzz_rx_LDADD = -lpthread

test_fuzz_fuzz_term_SOURCES = test/fuzz/fuzz_term.c $(FUZZ_LIB_SRC)
test_fuzz_fuzz_term_CPPFLAGS = $(FUZZ_CPPFLAGS)
test_fuzz_fuzz_term_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
test_fuzz_fuzz_term_LDFLAGS = $(FUZZ_FLAGS)
test_fuzz_fuzz_term_LDADD = -lpthread

# regenerates test/fuzz/corpus: test/fuzz/gen_seeds $(top_srcdir)/test/fuzz/corpus
test_fuzz_gen_seeds_SOURCES = test/fuzz/gen_seeds.c test/fuzz/fuzz_rx_env.h
test_fuzz_gen_seeds_CPPFLAGS = $(FUZZ_CPPFLAGS)
test_fuzz_gen_seeds_LDADD = common/libswpcore.la -lpthread
endif
