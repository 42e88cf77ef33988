# siwarp_ucx.m4 - SWP_CHECK_UCX: the UCX transport (uct_siwarp/) is built
# against Debian 12's UCX 1.13.1 and nothing else.  A UCT transport uses
# UCX's internal headers (uct/base/*.h), which libucx-dev does not ship:
# they come from Debian's own source package of the installed version,
# which contrib/setup.sh unpacks into uct_siwarp/ucx-src (--with-ucx-src
# names another copy).  Internal structures change between UCX releases, so
# the installed library (pkg-config ucx) and the source package must both be
# 1.13.1.  Anything missing: the transport is not built (a message says
# why), the rest of siwarp is.
AC_DEFUN([SWP_CHECK_UCX], [
    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
            [Debian's ucx 1.13.1 source package, unpacked (default: uct_siwarp/ucx-src, from contrib/setup.sh); --without-ucx-src: no UCX transport])],
        [], [with_ucx_src=check])
    swp_ucx_want=1.13.1
    have_uct=no
    swp_ucx_why=
    UCX_SRC_DIR=
    UCX_MODULE_DIR=
    AS_IF([test "x$with_ucx_src" = xno], [swp_ucx_why="--without-ucx-src"], [
        AS_IF([test "x$with_ucx_src" = xcheck || test "x$with_ucx_src" = xyes],
              [UCX_SRC_DIR=`cd "$srcdir" && pwd`/uct_siwarp/ucx-src],
              [UCX_SRC_DIR=$with_ucx_src])
        AC_MSG_CHECKING([for UCX $swp_ucx_want (pkg-config ucx, libucx-dev)])
        swp_ucx_ver=`$PKG_CONFIG --modversion ucx 2>/dev/null`
        AS_IF([test "x$swp_ucx_ver" = "x$swp_ucx_want"], [AC_MSG_RESULT([yes])],
              [test -z "$swp_ucx_ver"],
                  [AC_MSG_RESULT([no]); swp_ucx_why="UCX not installed (libucx-dev, ucx-utils: contrib/setup.sh)"],
              [AC_MSG_RESULT([no, $swp_ucx_ver])
               swp_ucx_why="installed UCX is $swp_ucx_ver; uct_siwarp is built for exactly $swp_ucx_want"])
    ])
    AS_IF([test -z "$swp_ucx_why"], [
        AC_MSG_CHECKING([for UCX $swp_ucx_want internal headers in $UCX_SRC_DIR])
        swp_ucx_src_ver=
        AS_IF([test -f "$UCX_SRC_DIR/src/uct/base/uct_iface.h" && test -f "$UCX_SRC_DIR/configure.ac"],
              [swp_ucx_src_ver=`for f in major minor patch; do
                   sed -n "s/^.*(.ucx_ver_$f., *\(@<:@0-9@:>@*\)).*/\1/p" "$UCX_SRC_DIR/configure.ac"
               done | tr '\n' . | sed 's/\.$//'`])
        AS_IF([test "x$swp_ucx_src_ver" = "x$swp_ucx_want"], [AC_MSG_RESULT([yes])],
              [test -z "$swp_ucx_src_ver"],
                  [AC_MSG_RESULT([no]); swp_ucx_why="no UCX source in $UCX_SRC_DIR (contrib/setup.sh unpacks Debian's: apt-get source ucx)"],
              [AC_MSG_RESULT([no, $swp_ucx_src_ver])
               swp_ucx_why="the UCX source in $UCX_SRC_DIR is $swp_ucx_src_ver, not $swp_ucx_want"])
    ])
    AS_IF([test -z "$swp_ucx_why"], [
        swp_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS -include $srcdir/uct_siwarp/ucx_abi.h -I$UCX_SRC_DIR/src"
        AC_CHECK_HEADER([uct/base/uct_iface.h], [],
            [swp_ucx_why="uct/base/uct_iface.h from $UCX_SRC_DIR does not compile (config.log)"])
        CPPFLAGS=$swp_save_CPPFLAGS
    ])
    AS_IF([test -z "$swp_ucx_why"], [
        have_uct=yes
        UCX_MODULE_DIR=`$PKG_CONFIG --variable=libdir ucx`/ucx
    ], [
        AC_MSG_NOTICE([the UCX transport (uct_siwarp) is not built: $swp_ucx_why])
    ])
    AM_CONDITIONAL([HAVE_UCT], [test "x$have_uct" = xyes])
    AC_SUBST([UCX_SRC_DIR])
    AC_SUBST([UCX_MODULE_DIR])
])
