#!/usr/bin/env bash
# What dpkg will see in the .deb: Depends computed by dpkg-shlibdeps from the binary's shared
# libraries, the config as a conffile, the files at their Debian paths, maintainer scripts.
# Usage: deb_contents_test.sh DEB_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_tool dpkg-deb dpkg-shlibdeps file
shopt -s nullglob
debs=("$1"/trainwatch_*.deb)
[ ${#debs[@]} -eq 1 ] || fail "no .deb in $1 (package.deb_build did not run or failed)"
deb=${debs[0]}
make_work_dir

dpkg-deb -I "$deb"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for library in libuv1 libre2-9 libyaml-cpp0.7 libarchive13 libc6 libstdc++6 libcurl4; do
  [[ ", $depends," == *", $library "* || ", $depends," == *", $library,"* ]] ||
    fail "Depends lacks $library"
done
# sd_notify's protocol is spoken directly (src/ops/service_notify.h): libsystemd and the
# libraries it loads (~1 MiB resident) are no longer the daemon's.
[[ "$depends" != *libsystemd0* ]] || fail "Depends still names libsystemd0"
# The prefilter is Hyperscan on amd64, Vectorscan elsewhere (.ci/install-deps).
[[ "$depends" =~ lib(hyperscan|vectorscan)5 ]] || fail "Depends lacks libhyperscan5/libvectorscan5"
[ "$(dpkg-deb -f "$deb" Section)" = admin ] || fail "Section is not admin"
[ -n "$(dpkg-deb -f "$deb" Maintainer)" ] || fail "no Maintainer"
dpkg-deb -f "$deb" Recommends | grep -q zstd || fail "Recommends lacks zstd"

dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/trainwatch/trainwatch.yaml "$work/control/conffiles" || fail "conffiles lacks the config"
for script in postinst prerm postrm; do
  [ -x "$work/control/$script" ] || fail "$script missing or not executable"
  sh -n "$work/control/$script" || fail "$script is not valid sh"
done

dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$work/files"
for path in /usr/bin/trainwatch /etc/trainwatch/trainwatch.yaml \
  /usr/share/trainwatch/trainwatch.yaml /usr/share/trainwatch/rules/README.md \
  /usr/share/trainwatch/rules/pytorch.yaml /usr/share/trainwatch/python/sitecustomize.py \
  /usr/share/trainwatch/prometheus/trainwatch-alerts.yml \
  /lib/systemd/system/trainwatch.service \
  /usr/share/doc/trainwatch/README.md /usr/share/doc/trainwatch/docs/operator-guide.md \
  /usr/share/man/man1/trainwatch.1.gz /usr/share/man/man5/trainwatch-rules.5.gz; do
  grep -qx "$path" "$work/files" || fail "$path is not in the .deb"
done
# Owned by root, whoever built it (CPack builds the tar as root:root).
if dpkg-deb -c "$deb" | awk '{print $2}' | grep -qv '^root/root$'; then
  fail "files in the .deb not owned by root/root"
fi
echo "deb contents OK"
