#!/usr/bin/env bash
# Builds the .deb into OUT_DIR the way daemon/Dockerfile does (cpack -G DEB -B); the
# fixture the deb_contents and deb_install tests read.
# Usage: deb_build_test.sh BUILD_DIR OUT_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
build_dir=$1 out_dir=$2
need_tool cpack dpkg-deb dpkg-shlibdeps file

rm -rf "$out_dir"
mkdir -p "$out_dir"
cpack --config "$build_dir/CPackConfig.cmake" -G DEB -B "$out_dir" >"$out_dir/cpack.log" 2>&1 ||
  { cat "$out_dir/cpack.log"; fail "cpack -G DEB failed"; }
shopt -s nullglob
debs=("$out_dir"/trainwatch_*_"$(dpkg --print-architecture)".deb)
[ ${#debs[@]} -eq 1 ] || { ls -l "$out_dir"; fail "expected one trainwatch_<version>_<arch>.deb"; }
echo "built ${debs[0]}"
