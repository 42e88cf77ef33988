#!/bin/sh
# test_install.sh - `make install` into a staging directory (DESTDIR) puts
# every file under the configured prefix (the Open MPI component alone may
# go to its own directory), with a man page for every installed program and
# every option it takes, siwarp-btl(7) listing exactly the parameters
# ompi_info lists, a siwarp.pc with which the README's example program
# builds and runs against the staged library; then `make uninstall` removes
# every file it put.  TAP.

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
top_srcdir=$(cd "$top_srcdir" && pwd)
MAKE=${MAKE:-make}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/stage

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }

echo "1..11"

# the directories as make sees them (configure's choices)
eval "$($MAKE -s -C "$top_builddir" pkg-print-dirs)"
[ -n "$prefix" ] || { echo "Bail out! make pkg-print-dirs said nothing"; exit 1; }

if timeout 300 $MAKE -s -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
    ok "make install DESTDIR=... ($prefix)"
else
    notok "make install DESTDIR=..."; sed 's/^/# /' "$tmp/install.log" | tail -20
    exit 1
fi
(cd "$dest" && find . -type f -o -type l) | sed 's|^\.||' | sort >"$tmp/files"
sed 's/^/# installed: /' "$tmp/files"

# 2: nothing outside the prefix but the Open MPI component and the UCX
# module, each in its own directory
awk -v p="$prefix/" -v c="$btlsiwarpdir/" -v u="$uctsiwarpdir/" '
    index($0, p) == 1 { next }
    c != "/" && index($0, c) == 1 && substr($0, length(c) + 1) ~ /^mca_btl_siwarp\.(so|la)$/ { next }
    u != "/" && index($0, u) == 1 && substr($0, length(u) + 1) ~ /^libuct_siwarp\.(so[.0-9]*|la)$/ { next }
    { print; bad = 1 } END { exit bad }' "$tmp/files" >"$tmp/outside"
check "every file under $prefix (component: ${btlsiwarpdir:-none}; UCX module: ${uctsiwarpdir:-none})" test ! -s "$tmp/outside"
sed 's/^/# outside the prefix: /' "$tmp/outside"

# 3: what a user of the library and of the tools needs is there
missing=
for f in "$libdir/libsiwarp.so" "$includedir/siwarp/siwarp.h" "$libdir/pkgconfig/siwarp.pc" \
         "$mandir/man7/libsiwarp.7"; do
    grep -qx "$f" "$tmp/files" || missing="$missing $f"
done
ls "$dest$libdir"/libsiwarp.so.[0-9]* >/dev/null 2>&1 || missing="$missing $libdir/libsiwarp.so.N"
if [ -n "$btlsiwarpdir" ]; then
    for f in "$btlsiwarpdir/mca_btl_siwarp.so" "$btlsiwarphelpdir/help-mpi-btl-siwarp.txt" \
             "$mandir/man7/siwarp-btl.7"; do
        grep -qx "$f" "$tmp/files" || missing="$missing $f"
    done
fi
check "library, versioned soname link, header, siwarp.pc, component, help file, man pages" \
    test -z "$missing"
[ -z "$missing" ] || echo "# missing:$missing"

# 4: a man page for every installed program
noman=
for p in "$dest$bindir"/*; do
    [ -e "$p" ] || continue
    b=$(basename "$p")
    [ -f "$dest$mandir/man1/$b.1" ] || noman="$noman $b"
done
check "a man page for each program in $bindir" test -z "$noman"
[ -z "$noman" ] || echo "# no man page:$noman"

# 5: every option a tool's getopt table knows is in its man page
undoc=
for t in siwarp-perf:contrib/siwarp-perf.c siwarp-rping:contrib/siwarp-rping.c \
         siwarp-perftest:contrib/siwarp-perftest-main.c; do
    tool=${t%%:*} src=$top_srcdir/${t#*:}
    page=$dest$mandir/man1/$tool.1
    [ -f "$page" ] || { undoc="$undoc $tool(no page)"; continue; }
    longs=$(grep -o '{ *"[a-z0-9-]*", *[a-z_]*_argument' "$src" | sed 's/{ *"\([^"]*\)".*/\1/')
    shorts=$(sed -n 's/.*getopt_long(argc, argv, "\([^"]*\)".*/\1/p' "$src" | tr -d ':' | fold -w1)
    [ -n "$longs" ] && [ -n "$shorts" ] || { undoc="$undoc $tool(no options found in $src)"; continue; }
    # the page's text with roff's escapes taken out: \- is -, fonts go
    sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page" >"$tmp/page"
    for o in $longs; do
        grep -qF -- "--$o" "$tmp/page" || undoc="$undoc $tool:--$o"
    done
    for o in $shorts; do
        grep -qE -- "(^|[^-a-z])-$o([^a-zA-Z0-9]|\$)" "$tmp/page" || undoc="$undoc $tool:-$o"
    done
done
check "every option of siwarp-perf, siwarp-rping and siwarp-perftest documented" test -z "$undoc"
[ -z "$undoc" ] || echo "# undocumented:$undoc"

# 6: the pages format without a warning
warn=
for page in "$dest$mandir"/man*/*; do
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
    [ -z "$w" ] || { warn="$warn $(basename "$page")"; echo "$w" | sed 's/^/# /'; }
done
check "man pages format without groff warnings" test -z "$warn"

# 7: siwarp-btl(7) has exactly the parameters ompi_info lists
if [ -n "$btlsiwarpdir" ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_mca_base_component_path=$dest$btlsiwarpdir \
        timeout 120 ompi_info --param btl siwarp --level 9 2>&1 |
        sed -n 's/.*MCA btl siwarp: parameter "\([^"]*\)".*/\1/p' | sort >"$tmp/oi"
    sed -n '/^\.SH PARAMETERS/,/^\.SH/s/^\.B \(btl_siwarp_[a-z0-9_]*\)$/\1/p' \
        "$dest$mandir/man7/siwarp-btl.7" |
        sort >"$tmp/man"
    if [ -s "$tmp/oi" ] && cmp -s "$tmp/oi" "$tmp/man"; then
        ok "siwarp-btl(7) lists the $(wc -l <"$tmp/oi") parameters ompi_info lists"
    else
        notok "siwarp-btl(7) and ompi_info --param btl siwarp --level 9 disagree"
        diff "$tmp/oi" "$tmp/man" | sed 's/^/# (< ompi_info, > man page) /' | head -20
    fi
else
    ok "siwarp-btl(7) against ompi_info # SKIP built without Open MPI"
fi

# 8-9: the README's example through pkg-config, against the staged library
pcdir=$dest$libdir/pkgconfig
flags=$(PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_SYSROOT_DIR=$dest pkg-config --cflags --libs siwarp 2>"$tmp/pc.err")
check "pkg-config --cflags --libs siwarp: $flags" test -n "$flags"
sed 's/^/# /' "$tmp/pc.err"
# shellcheck disable=SC2086
if ${CC:-cc} -Wall -Werror -o "$tmp/hello" "$top_srcdir/contrib/examples/siwarp-hello.c" $flags \
        >"$tmp/cc.log" 2>&1 &&
   LD_LIBRARY_PATH=$dest$libdir timeout 30 "$tmp/hello" >"$tmp/hello.log" 2>&1 &&
   LD_LIBRARY_PATH=$dest$libdir ldd "$tmp/hello" | grep -q "=> $dest$libdir/libsiwarp.so"; then
    ok "contrib/examples/siwarp-hello.c builds with pkg-config and runs on the staged library"
else
    notok "contrib/examples/siwarp-hello.c with pkg-config"
    sed 's/^/# /' "$tmp/cc.log" "$tmp/hello.log" 2>/dev/null | tail -20
fi

# 10-11: uninstall leaves no file behind
if timeout 300 $MAKE -s -C "$top_builddir" uninstall DESTDIR="$dest" >"$tmp/uninstall.log" 2>&1; then
    ok "make uninstall DESTDIR=..."
else
    notok "make uninstall DESTDIR=..."; sed 's/^/# /' "$tmp/uninstall.log" | tail -20
fi
left=$(cd "$dest" && find . -type f -o -type l)
check "make uninstall removed every file make install put" test -z "$left"
[ -z "$left" ] || echo "$left" | sed 's/^/# left: /'
