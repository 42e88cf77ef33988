# swp_install.m4 - where `make install` puts the Open MPI component.
#
# SWP_COMPONENT_DIR: call after the Open MPI checks, which leave Open MPI's
# own component directory (ompi_info --path pkglibdir) in OMPI_COMPONENT_DIR.
#   --with-ompi-component-dir=DIR   exactly DIR
#   no --prefix, or Open MPI's own prefix (a distribution package: /usr)
#                                   Open MPI's directory, found by every job
#   --prefix=DIR                    ${libdir}/openmpi, so that the whole
#                                   install stays under DIR; jobs find it with
#                                   OMPI_MCA_mca_base_component_path (README)
# The second case is kept as a make variable expression, so that a staged
# install (DESTDIR) and `make install prefix=...` follow it too.
AC_DEFUN([SWP_COMPONENT_DIR], [
AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
                    [install mca_btl_siwarp.so into DIR (default: Open MPI's component
                     directory without --prefix or with --prefix=/usr, else LIBDIR/openmpi)])],
    [], [with_ompi_component_dir=default])
# Open MPI's own directory, which a job searches first: the install checks
# and the README's line keep it in mca_base_component_path
OMPI_SYSTEM_COMPONENT_DIR=$OMPI_COMPONENT_DIR
AC_SUBST([OMPI_SYSTEM_COMPONENT_DIR])
AC_MSG_CHECKING([where to install the Open MPI component])
AS_CASE([$with_ompi_component_dir],
    [yes|no], [AC_MSG_ERROR([--with-ompi-component-dir needs a directory, not "$with_ompi_component_dir"])],
    [default], [
        AS_IF([test "x$prefix" != xNONE && test "x$prefix" != x/usr],
              [OMPI_COMPONENT_DIR='${libdir}/openmpi'])],
    [/*], [OMPI_COMPONENT_DIR=$with_ompi_component_dir],
    [AC_MSG_ERROR([--with-ompi-component-dir=$with_ompi_component_dir: not an absolute path])])
AC_MSG_RESULT([$OMPI_COMPONENT_DIR])
])
