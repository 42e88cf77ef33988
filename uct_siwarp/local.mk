# uct_siwarp/local.mk - the UCX transport (UCT component "siwarp"), built
# against Debian's UCX 1.13.1 (m4/siwarp_ucx.m4).  Installed beside UCX's own
# modules (UCX_MODULE_DIR, libuct_*.so.0) as libuct_siwarp.so.0; Debian's
# UCX loads only the modules compiled into its list (ib, rdmacm, cma), so a
# process gets this one by LD_PRELOAD (README: "UCX transport").

EXTRA_DIST += uct_siwarp/ucx_abi.h
if HAVE_UCT
uctsiwarpdir = $(UCX_MODULE_DIR)
uctsiwarp_LTLIBRARIES = uct_siwarp/libuct_siwarp.la
uct_siwarp_libuct_siwarp_la_SOURCES = \
	uct_siwarp/uct_siwarp.h \
	uct_siwarp/uct_siwarp_md.c \
	uct_siwarp/uct_siwarp_iface.c \
	uct_siwarp/uct_siwarp_cm.c \
	uct_siwarp/uct_siwarp_conn.c \
	uct_siwarp/uct_siwarp_ep.c \
	uct_siwarp/uct_siwarp_amo.c \
	uct_siwarp/uct_siwarp_auth.c \
	uct_siwarp/uct_siwarp_challenge.c
# UCX's headers first, with the build options of Debian's libuct.so.0
uct_siwarp_libuct_siwarp_la_CPPFLAGS = -include $(top_srcdir)/uct_siwarp/ucx_abi.h \
	-I$(UCX_SRC_DIR)/src -I$(top_srcdir)/include -I$(top_srcdir)/common
uct_siwarp_libuct_siwarp_la_CFLAGS = $(SWP_CFLAGS) $(NETTLE_CFLAGS) -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare -Wno-type-limits
# -version-info 0:0:0 names it libuct_siwarp.so.0, as UCX names its modules.
# Only UCX's constructors need to be reached (they register the component);
# libsiwarp stays inside, as in the BTL plugin.
uct_siwarp_libuct_siwarp_la_LDFLAGS = -module -shared -no-undefined -version-info 0:0:0 \
	-export-symbols-regex '^uct_siwarp_(component|tl)$$'
uct_siwarp_libuct_siwarp_la_LIBADD = common/libswpcore.la common/libswpauth.la $(NETTLE_LIBS) -luct -lucs -lpthread
endif
