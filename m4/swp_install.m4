# swp_install.m4 - where `make install` puts the plugins that another
# program loads: the Open MPI component and the UCX transport.
#
# For each, the checks before leave that program's own directory in VAR
# (OMPI_COMPONENT_DIR: ompi_info --path pkglibdir; UCX_MODULE_DIR: UCX's
# module directory).  Then:
#   --with-OPTION=DIR        exactly DIR
#   no --prefix, or the programs' own prefix (a distribution package: /usr)
#                            that directory, where every job finds it
#   --prefix=DIR             ${libdir}/SUBDIR, so that the whole install
#                            stays under DIR (the README says how a job
#                            finds it there)
# The third case stays a make variable expression, so that a staged install
# (DESTDIR) and `make install prefix=...` follow it too.

# SWP_PLUGIN_DIR(OPTION, VAR, SUBDIR, WHAT)
AC_DEFUN([SWP_PLUGIN_DIR], [
AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1=DIR],
                    [install $4 into DIR (default: its program's own directory
                     without --prefix or with --prefix=/usr, else LIBDIR/$3)])],
    [swp_plugin_dir=$withval], [swp_plugin_dir=default])
AC_MSG_CHECKING([where to install $4])
AS_CASE([$swp_plugin_dir],
    [yes|no], [AC_MSG_ERROR([--with-$1 needs a directory, not "$swp_plugin_dir"])],
    [default], [
        AS_IF([test "x$prefix" != xNONE && test "x$prefix" != x/usr],
              [$2='${libdir}/$3'])],
    [/*], [$2=$swp_plugin_dir],
    [AC_MSG_ERROR([--with-$1=$swp_plugin_dir: not an absolute path])])
AC_MSG_RESULT([$$2])
])

# SWP_COMPONENT_DIR: after the Open MPI checks.  Open MPI's own directory is
# kept too: a job searches it first, so the install checks and the
# README's line keep it in mca_base_component_path.
AC_DEFUN([SWP_COMPONENT_DIR], [
OMPI_SYSTEM_COMPONENT_DIR=$OMPI_COMPONENT_DIR
AC_SUBST([OMPI_SYSTEM_COMPONENT_DIR])
SWP_PLUGIN_DIR([ompi-component-dir], [OMPI_COMPONENT_DIR], [openmpi], [mca_btl_siwarp.so])
])

# SWP_UCX_MODULE_DIR: after SWP_CHECK_UCX.  A process loads the module by
# LD_PRELOAD (README: "UCX transport"), wherever it is.
AC_DEFUN([SWP_UCX_MODULE_DIR], [
SWP_PLUGIN_DIR([ucx-module-dir], [UCX_MODULE_DIR], [ucx], [libuct_siwarp.so])
])
