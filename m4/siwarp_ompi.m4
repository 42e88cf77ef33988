# siwarp_ompi.m4 - find the Open MPI the BTL is built against.
#
# SIWARP_OMPI: one configure for Open MPI 4.1 (BTL interface 3.1, Debian 12)
# and 5.0 (BTL interface 3.3, Debian 13).  The Open MPI used is, in order:
# --with-ompi=DIR (a prefix, or the directory holding opal_config.h), the
# mpicc on PATH, Debian's own.  Its btl.h says which BTL interface it has
# (BTL_VERSION); btl_siwarp/btl_siwarp_compat.h maps the differences.
#
# Debian 13's libopenmpi-dev lacks a few internal headers that
# opal_config.h names (the threads and timer components' headers).  They
# come from the same version's source tree: --with-ompi-src=DIR, by default
# /usr/src/openmpi-VERSION (contrib/setup.sh unpacks Debian's source
# package there).  The installed headers stay first in the search path.
#
# Sets and substitutes OMPI_CPPFLAGS, OMPI_CFLAGS, OMPI_LIBS,
# OMPI_COMPONENT_DIR, OMPI_BTL_VERSION (310, 330), OMPI_VERSION_STRING;
# have_ompi=yes|no.
AC_DEFUN([SIWARP_OMPI], [
AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR],
                    [Open MPI to build the BTL for: its prefix or the directory holding
                     opal_config.h (default: the mpicc on PATH, then Debian's)])],
    [], [with_ompi=check])
AC_ARG_WITH([ompi-src],
    [AS_HELP_STRING([--with-ompi-src=DIR],
                    [unpacked source of the same Open MPI version, for internal headers
                     its installation lacks (default: /usr/src/openmpi-VERSION)])],
    [], [with_ompi_src=check])
OMPI_CPPFLAGS=
OMPI_CFLAGS=
OMPI_LIBS=
OMPI_COMPONENT_DIR=
OMPI_BTL_VERSION=
OMPI_VERSION_STRING=
have_ompi=no
AS_IF([test "x$with_ompi" != xno], [
    swp_ompi_inc=
    swp_ompi_bin=
    AS_IF([test "x$with_ompi" != xcheck && test "x$with_ompi" != xyes], [
        AS_IF([test -f "$with_ompi/opal_config.h"], [swp_ompi_inc=$with_ompi],
              [test -f "$with_ompi/include/openmpi/opal_config.h"],
                  [swp_ompi_inc=$with_ompi/include/openmpi],
              [test -f "$with_ompi/include/opal_config.h"],
                  [swp_ompi_inc=$with_ompi/include])
        AS_IF([test -x "$with_ompi/bin/mpicc"], [swp_ompi_bin=$with_ompi/bin])
    ])
    AS_IF([test -n "$swp_ompi_bin"], [
        MPICC=$swp_ompi_bin/mpicc
        OMPI_INFO=$swp_ompi_bin/ompi_info
    ], [
        AC_PATH_PROG([MPICC], [mpicc])
        AC_PATH_PROG([OMPI_INFO], [ompi_info])
    ])
    AS_IF([test "x$with_ompi" = xcheck || test "x$with_ompi" = xyes], [
        for d in `test -n "$MPICC" && $MPICC --showme:incdirs 2>/dev/null` \
                 /usr/lib/x86_64-linux-gnu/openmpi/include/openmpi; do
            for s in "" /openmpi; do
                AS_IF([test -z "$swp_ompi_inc" && test -f "$d$s/opal_config.h"],
                      [swp_ompi_inc=$d$s])
            done
        done
    ])
    AC_MSG_CHECKING([for Open MPI internal headers (opal_config.h)])
    AS_IF([test -n "$swp_ompi_inc"], [AC_MSG_RESULT([$swp_ompi_inc])], [
        AC_MSG_RESULT([no])
        AS_IF([test "x$with_ompi" != xcheck],
              [AC_MSG_ERROR([--with-ompi=$with_ompi: no opal_config.h there (nor in include/ or include/openmpi/)])])
    ])
])
AS_IF([test -n "$swp_ompi_inc"], [
    # opal headers include each other relative to the parent too
    OMPI_CPPFLAGS="-I$swp_ompi_inc -I`dirname $swp_ompi_inc`"

    AC_MSG_CHECKING([for the Open MPI version and its BTL interface])
    OMPI_VERSION_STRING=`sed -n 's/^#define OPAL_VERSION "\(.*\)"/\1/p' "$swp_ompi_inc/opal/version.h" 2>/dev/null`
    OMPI_BTL_VERSION=`sed -n 's/^#define BTL_VERSION //p' "$swp_ompi_inc/opal/mca/btl/btl.h" 2>/dev/null | tr -dc 0-9`
    AC_MSG_RESULT([Open MPI ${OMPI_VERSION_STRING:-unknown}, BTL interface ${OMPI_BTL_VERSION:-unknown}])
    AS_CASE([$OMPI_BTL_VERSION],
        [310|330], [],
        [AC_MSG_ERROR([$swp_ompi_inc/opal/mca/btl/btl.h: BTL interface "$OMPI_BTL_VERSION"; btl_siwarp supports 310 (Open MPI 4.1) and 330 (Open MPI 5.0)])])

    # Open MPI 5 calls an external PMIx directly from its headers
    AS_IF([test "$OMPI_BTL_VERSION" -ge 330 && test ! -f "$swp_ompi_inc/pmix.h"], [
        PKG_CHECK_MODULES([PMIX], [pmix], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS $PMIX_CFLAGS"],
            [AC_MSG_ERROR([Open MPI $OMPI_VERSION_STRING's headers need pmix.h (Debian: libpmix-dev)])])
    ])

    # Compile the BTL's own header against them; if that fails, add the
    # source tree for the internal headers the installation lacks
    # (installed headers first: -idirafter) and try once more.
    swp_save_CPPFLAGS=$CPPFLAGS
    swp_ompi_try=installed
    AC_MSG_CHECKING([whether btl_siwarp.h compiles against Open MPI's installed headers])
    CPPFLAGS="$swp_save_CPPFLAGS -I$srcdir/include -I$srcdir/btl_siwarp $OMPI_CPPFLAGS"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "btl_siwarp.h"]], [])],
        [AC_MSG_RESULT([yes]); swp_ompi_try=ok], [AC_MSG_RESULT([no])])
    AS_IF([test $swp_ompi_try != ok], [
        swp_ompi_missing=
        for h in `sed -n 's/^#define MCA_.*_HEADER "\(.*\)"$/\1/p' "$swp_ompi_inc/opal_config.h"`; do
            test -f "$swp_ompi_inc/$h" || swp_ompi_missing="$swp_ompi_missing $h"
        done
        AS_IF([test "x$with_ompi_src" = xcheck || test "x$with_ompi_src" = xyes],
              [swp_ompi_src=/usr/src/openmpi-$OMPI_VERSION_STRING], [swp_ompi_src=$with_ompi_src])
        AC_MSG_CHECKING([whether it compiles with the Open MPI source tree $swp_ompi_src])
        CPPFLAGS="$CPPFLAGS -idirafter $swp_ompi_src"
        AS_IF([test "x$with_ompi_src" != xno && test -f "$swp_ompi_src/opal/mca/btl/btl.h"], [
            AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "btl_siwarp.h"]], [])],
                [AC_MSG_RESULT([yes]); swp_ompi_try=ok
                 OMPI_CPPFLAGS="$OMPI_CPPFLAGS -idirafter $swp_ompi_src"],
                [AC_MSG_RESULT([no])])
        ], [AC_MSG_RESULT([no source tree there])])
        AS_IF([test $swp_ompi_try != ok],
            [AC_MSG_ERROR([btl_siwarp.h does not compile against Open MPI $OMPI_VERSION_STRING in $swp_ompi_inc (config.log has the compiler's words)${swp_ompi_missing:+; the installation lacks$swp_ompi_missing: unpack the same version's source (Debian: apt-get source openmpi, as contrib/setup.sh does) and give --with-ompi-src=DIR}, or configure --without-ompi])])
    ])
    CPPFLAGS=$swp_save_CPPFLAGS

    swp_ompi_libdir=
    AS_IF([test -n "$MPICC"],
          [swp_ompi_libdir=`$MPICC --showme:libdirs 2>/dev/null | awk '{print $[1]}'`])
    AS_IF([test -z "$swp_ompi_libdir" && test -d /usr/lib/x86_64-linux-gnu/openmpi/lib],
          [swp_ompi_libdir=/usr/lib/x86_64-linux-gnu/openmpi/lib])
    AS_IF([test -n "$swp_ompi_libdir"],
          [OMPI_LIBS="-L$swp_ompi_libdir -lopen-pal"],
          [OMPI_LIBS="-lopen-pal"])
    # Open MPI's inline atomics take a 16-byte compare-and-swap where
    # its own build found one (opal_lifo, used by the free lists under
    # MPI_THREAD_MULTIPLE).  Without -mcx16 the compiler turns it into a
    # call to __sync_val_compare_and_swap_16, which no library provides:
    # the first such call ends the process with a symbol lookup error.
    AS_IF([grep -Eq '^#define OPAL_HAVE_(SYNC|GCC)_BUILTIN_CSWAP_INT128 1' \
               "$swp_ompi_inc/opal_config.h"], [
        swp_save_CFLAGS=$CFLAGS
        CFLAGS="$CFLAGS -mcx16"
        AC_MSG_CHECKING([whether $CC accepts -mcx16 (Open MPI's 128-bit atomics)])
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
            [AC_MSG_RESULT([yes]); OMPI_CFLAGS=-mcx16], [AC_MSG_RESULT([no])])
        CFLAGS=$swp_save_CFLAGS
    ])
    AS_IF([test -n "$OMPI_INFO"],
          [OMPI_COMPONENT_DIR=`$OMPI_INFO --path pkglibdir 2>/dev/null | sed -n 's/^.*Pkglibdir: *//p'`])
    AS_IF([test -z "$OMPI_COMPONENT_DIR" && test "$OMPI_BTL_VERSION" = 310],
          [OMPI_COMPONENT_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3])
    AS_IF([test -z "$OMPI_COMPONENT_DIR"],
          [AC_MSG_ERROR([no component directory: ompi_info ${OMPI_INFO:-(not found)} did not print its pkglibdir])])
    have_ompi=yes
])
AC_SUBST([OMPI_CPPFLAGS])
AC_SUBST([OMPI_CFLAGS])
AC_SUBST([OMPI_LIBS])
AC_SUBST([OMPI_COMPONENT_DIR])
AC_SUBST([OMPI_BTL_VERSION])
AC_SUBST([OMPI_VERSION_STRING])
])
