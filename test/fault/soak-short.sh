#!/bin/sh
# soak-short.sh - the make-check version of contrib/soak.sh: 60 s (SOAK_SECONDS).
exec "${srcdir:-$(dirname "$0")/../..}/contrib/soak.sh" "${SOAK_SECONDS:-60}"
