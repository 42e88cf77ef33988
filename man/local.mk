# man/local.mk - the manual pages (roff, man(7) macros).  The version comes
# from configure.ac's AC_INIT through $(VERSION); siwarp-btl(7) is generated
# from ompi_info's listing of the built component (man/gen-btl-man.sh).

nodist_man_MANS = man/siwarp-perf.1 man/siwarp-rping.1 man/siwarp-perftest.1 man/libsiwarp.7
EXTRA_DIST += man/siwarp-perf.1.in man/siwarp-rping.1.in man/siwarp-perftest.1.in \
	man/libsiwarp.7.in man/gen-btl-man.sh
CLEANFILES += $(nodist_man_MANS)

man_subst = $(AM_V_GEN)$(MKDIR_P) man && sed -e 's|@VERSION[@]|$(VERSION)|g'
man/siwarp-perf.1: man/siwarp-perf.1.in Makefile
	$(man_subst) $(top_srcdir)/man/siwarp-perf.1.in >$@
man/siwarp-rping.1: man/siwarp-rping.1.in Makefile
	$(man_subst) $(top_srcdir)/man/siwarp-rping.1.in >$@
man/siwarp-perftest.1: man/siwarp-perftest.1.in Makefile
	$(man_subst) $(top_srcdir)/man/siwarp-perftest.1.in >$@
man/libsiwarp.7: man/libsiwarp.7.in Makefile
	$(man_subst) $(top_srcdir)/man/libsiwarp.7.in >$@

if HAVE_OMPI
nodist_man_MANS += man/siwarp-btl.7
# dated by the parameter table it documents
man/siwarp-btl.7: man/gen-btl-man.sh btl_siwarp/mca_btl_siwarp.la
	$(AM_V_GEN)$(MKDIR_P) man && $(SHELL) $(top_srcdir)/man/gen-btl-man.sh \
	    $(abs_top_builddir)/btl_siwarp/.libs '$(OMPI_INFO)' '$(VERSION)' \
	    "`date -u -r $(top_srcdir)/btl_siwarp/btl_siwarp_params.c +%Y-%m-%d`" >$@.tmp && \
	    mv $@.tmp $@
endif
