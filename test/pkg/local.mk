# test/pkg/local.mk - packaging: what `make install` puts where, libsiwarp's
# exported symbols, siwarp.h from C++ (make check); the installed tree at
# work (make installcheck, which make distcheck runs); the long packaging
# suite (test/pkg/run-pkg-tests.sh: distcheck, the Debian packages).

TESTS += test/pkg/test_exports.sh test/pkg/test_cxx.sh test/pkg/test_install.sh
EXTRA_DIST += test/pkg/test_exports.sh test/pkg/test_cxx.sh test/pkg/test_install.sh \
	test/pkg/installcheck.sh test/pkg/run-pkg-tests.sh test/pkg/deb-install.sh test/pkg/perf-pair.sh \
	contrib/examples/siwarp-hello.c
# test_install.sh installs into a staging directory with the same make
AM_TESTS_ENVIRONMENT += MAKE='$(MAKE)'; export MAKE;

# the install directories as make expands them, for the scripts above
pkg-print-dirs:
	@echo "prefix='$(prefix)' bindir='$(bindir)' libdir='$(libdir)'" \
	    "includedir='$(includedir)' mandir='$(mandir)'" \
	    "btlsiwarpdir='$(btlsiwarpdir)' btlsiwarphelpdir='$(btlsiwarphelpdir)'" \
	    "uctsiwarpdir='$(uctsiwarpdir)'" \
	    "ompi_system_component_dir='$(OMPI_SYSTEM_COMPONENT_DIR)' mpicc='$(MPICC)'"

installcheck-local:
	$(SHELL) $(top_srcdir)/test/pkg/installcheck.sh "$(DESTDIR)" "$(MAKE) -s -C $(abs_top_builddir)"
.PHONY: pkg-print-dirs

# autogen.sh copies it in: the tests of a tarball need it too
EXTRA_DIST += build-aux/tap-driver.sh

# the Debian source package (native: the tarball is its source)
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/libsiwarp0.install debian/libsiwarp-dev.install \
	debian/siwarp-tools.install debian/openmpi-btl-siwarp.install
