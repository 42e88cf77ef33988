#!/bin/sh
# test_exports.sh - libsiwarp's ABI surface: a versioned soname, exactly the
# functions siwarp.h declares exported (so an internal swp_* symbol that
# leaks, or a public function left out of the export list, fails), and the
# Open MPI component exporting only the one symbol Open MPI looks up.  TAP.

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
lib=$top_builddir/.libs/libsiwarp.so
hdr=$top_srcdir/include/siwarp/siwarp.h
comp=$top_builddir/btl_siwarp/.libs/mca_btl_siwarp.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_exports.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }

echo "1..4"
[ -f "$lib" ] || { echo "Bail out! no $lib (make first)"; exit 1; }

soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
case $soname in
    libsiwarp.so.[0-9]*) ok "soname $soname" ;;
    *) notok "soname: want libsiwarp.so.N, got '$soname'" ;;
esac

nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u >"$tmp/exported"
leak=$(grep -v '^siwarp_' "$tmp/exported")
if [ -z "$leak" ] && [ -s "$tmp/exported" ]; then
    ok "libsiwarp exports only siwarp_* ($(wc -l <"$tmp/exported") symbols)"
else
    notok "libsiwarp exports symbols outside siwarp_*"
    echo "$leak" | head -20 | sed 's/^/# leaked: /'
fi

# every function the header declares: a name followed by "(" in a
# declaration (comments and macros stripped first)
sed -e 's|/\*.*\*/||g' -e '/\/\*/,/\*\//d' -e '/^#/d' "$hdr" |
    grep -o '\bsiwarp_[a-z0-9_]*[ ]*(' | grep -v '_fn[ ]*($' | tr -d ' (' | sort -u >"$tmp/declared"
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
if [ -z "$missing" ] && [ -z "$extra" ]; then
    ok "exported set = the $(wc -l <"$tmp/declared") functions siwarp.h declares"
else
    notok "exported set differs from siwarp.h's functions"
    [ -z "$missing" ] || echo "$missing" | sed 's/^/# declared, not exported: /'
    [ -z "$extra" ] || echo "$extra" | sed 's/^/# exported, not declared: /'
fi

if [ -f "$comp" ]; then
    got=$(nm -D --defined-only "$comp" | awk '{ print $NF }' | tr '\n' ' ')
    if [ "$got" = "mca_btl_siwarp_component " ]; then
        ok "the component exports only mca_btl_siwarp_component"
    else
        notok "the component exports: $(echo "$got" | cut -c1-300)"
    fi
else
    ok "component exports # SKIP built without Open MPI"
fi
