# btl_siwarp/local.mk - the Open MPI BTL component, included by the top-level
# non-recursive Makefile.am.  Installed into Open MPI's component directory
# (OMPI_COMPONENT_DIR from configure) as mca_btl_siwarp.so, with its help
# file next to Open MPI's own help files.

if HAVE_OMPI
btlsiwarpdir = $(OMPI_COMPONENT_DIR)
btlsiwarp_LTLIBRARIES = btl_siwarp/mca_btl_siwarp.la

# The code is built as a convenience library first, so that no object file in
# btl_siwarp/.libs starts with "mca_": Open MPI tries to dlopen every file
# named mca_* in a component directory, and a build-tree run points
# mca_base_component_path at btl_siwarp/.libs.
noinst_LTLIBRARIES += btl_siwarp/libbtlsiwarp.la
btl_siwarp_mca_btl_siwarp_la_SOURCES =
btl_siwarp_libbtlsiwarp_la_SOURCES = \
	btl_siwarp/btl_siwarp.h \
	btl_siwarp/btl_siwarp_component.c \
	btl_siwarp/btl_siwarp_params.c \
	btl_siwarp/btl_siwarp_module.c \
	btl_siwarp/btl_siwarp_endpoint.h \
	btl_siwarp/btl_siwarp_endpoint.c \
	btl_siwarp/btl_siwarp_ep_accept.c \
	btl_siwarp/btl_siwarp_auth.c \
	btl_siwarp/btl_siwarp_ep_qp.c \
	btl_siwarp/btl_siwarp_datapath.c \
	btl_siwarp/btl_siwarp_fallback.c \
	btl_siwarp/btl_siwarp_fallback_rx.c \
	btl_siwarp/btl_siwarp_frag.h \
	btl_siwarp/btl_siwarp_frag.c \
	btl_siwarp/btl_siwarp_ratomic.c \
	btl_siwarp/btl_siwarp_rdma.c \
	btl_siwarp/btl_siwarp_atomic.c \
	btl_siwarp/btl_siwarp_stack.c \
	btl_siwarp/btl_siwarp_srq.c \
	btl_siwarp/btl_siwarp_eptab.h \
	btl_siwarp/btl_siwarp_eptab.c \
	btl_siwarp/btl_siwarp_regtab.h \
	btl_siwarp/btl_siwarp_regtab.c \
	btl_siwarp/btl_siwarp_ifnear.h \
	btl_siwarp/btl_siwarp_ifnear.c
btl_siwarp_libbtlsiwarp_la_CPPFLAGS = -I$(top_srcdir)/include $(OMPI_CPPFLAGS) \
	-DSIWARP_HELP_DIR='"$(btlsiwarphelpdir)"' \
	-DSIWARP_SRC_HELP_DIR='"$(abs_top_srcdir)/btl_siwarp"' \
	-I$(top_srcdir)/common
# hwloc: Open MPI's own topology (opal_hwloc) places the progress thread
if HAVE_HWLOC
btl_siwarp_libbtlsiwarp_la_SOURCES += btl_siwarp/btl_siwarp_topo.c
btl_siwarp_libbtlsiwarp_la_CPPFLAGS += -DSIWARP_HAVE_HWLOC $(HWLOC_CFLAGS)
endif
btl_siwarp_libbtlsiwarp_la_CFLAGS = $(SWP_CFLAGS) $(OMPI_CFLAGS) $(NETTLE_CFLAGS) -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare
# Only the component is exported: Open MPI finds the plugin by that one
# symbol.  The rest (libsiwarp's swp_* and siwarp_* included) stays inside
# the plugin, where it cannot clash with another library's symbols in the
# process, and the linker binds the calls between its files directly
# instead of through the PLT (579 call sites).  That last part measured no
# faster per hop (rdtsc marks, README Performance): it is kept for the
# first reason.
btl_siwarp_mca_btl_siwarp_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-export-symbols-regex '^mca_btl_siwarp_component$$'
btl_siwarp_mca_btl_siwarp_la_LIBADD = btl_siwarp/libbtlsiwarp.la common/libswpcore.la common/libswpauth.la $(OMPI_LIBS) \
	$(NETTLE_LIBS) -lpthread
if HAVE_HWLOC
btl_siwarp_mca_btl_siwarp_la_LIBADD += $(HWLOC_LIBS)
endif

# the component adds this directory to opal_show_help's search path
btlsiwarphelpdir = $(pkgdatadir)
dist_btlsiwarphelp_DATA = btl_siwarp/help-mpi-btl-siwarp.txt
endif

# the Open MPI 4.1 / 5.0 interface map, in the tarball too (make dist)
EXTRA_DIST += btl_siwarp/btl_siwarp_compat.h
