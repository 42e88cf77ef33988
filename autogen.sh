#!/bin/sh
# autogen.sh - regenerate configure and Makefile.in from a fresh clone.
# Copies the auxiliary scripts (including build-aux/tap-driver.sh) in.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf --install --force
# autoreconf runs automake --add-missing, which only copies tap-driver.sh if
# a Makefile.am names it; make sure it is there regardless.
if [ ! -f build-aux/tap-driver.sh ]; then
    automake --add-missing --copy >/dev/null 2>&1 || true
    am_dir=$(automake --print-libdir)
    cp "$am_dir/tap-driver.sh" build-aux/tap-driver.sh
fi
echo "autogen.sh: done; now run ./configure"
