#!/usr/bin/env bash
# `cmake --install BUILD --prefix /usr` into a DESTDIR lays out the Debian paths, and the
# installed binary finds its rules and shipped config next to itself with no flag.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
build_dir=$1
need_tool cmake

make_work_dir
root="$work/root"
DESTDIR="$root" cmake --install "$build_dir" --prefix /usr >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }

expect_path "$root" \
  /usr/bin/trainwatch \
  /usr/share/trainwatch/trainwatch.yaml \
  /usr/share/trainwatch/rules/README.md \
  /usr/share/trainwatch/rules/python.yaml \
  /usr/share/trainwatch/rules/hangs.yaml \
  /usr/share/trainwatch/python/sitecustomize.py \
  /usr/share/trainwatch/prometheus/trainwatch-alerts.yml \
  /etc/trainwatch/trainwatch.yaml \
  /lib/systemd/system/trainwatch.service \
  /usr/share/man/man1/trainwatch.1.gz \
  /usr/share/man/man5/trainwatch-rules.5.gz \
  /usr/share/doc/trainwatch/README.md
# Every shipped pack and every page of docs/, and nothing installed under the wrong root
# (GNUInstallDirs' /usr/etc).
for pack in "$(dirname "$0")"/../../rules/*.yaml; do
  expect_path "$root" "/usr/share/trainwatch/rules/$(basename "$pack")"
done
for page in "$(dirname "$0")"/../../docs/*.md; do
  expect_path "$root" "/usr/share/doc/trainwatch/docs/$(basename "$page")"
done
[ ! -e "$root/usr/etc" ] || fail "the config went to /usr/etc, not /etc"
cmp -s "$root/etc/trainwatch/trainwatch.yaml" "$build_dir/etc/trainwatch.yaml" ||
  fail "/etc/trainwatch/trainwatch.yaml is not the host config made from daemon/trainwatch.yaml"

# No flags, no $TRAINWATCH_CONFIG: the rules must come from ../share/trainwatch/rules.
installed="$root/usr/bin/trainwatch"
unset TRAINWATCH_CONFIG
"$installed" --version
"$installed" check || fail "installed trainwatch check failed"
env -u TRAINWATCH_STATE_DIR -u STATE_DIRECTORY \
  "$installed" check --config "$root/etc/trainwatch/trainwatch.yaml" >"$work/etc-check.out" ||
  fail "installed trainwatch check --config /etc/trainwatch/trainwatch.yaml failed"
# The host's config keeps its state where the unit's StateDirectory= is, whoever runs it
# (root's `trainwatch status` must find the service's socket), not under a home directory.
grep -q "state in /var/lib/trainwatch$" "$work/etc-check.out" ||
  { cat "$work/etc-check.out"; fail "/etc/trainwatch/trainwatch.yaml does not keep state in /var/lib/trainwatch"; }
grep -q "/var/log/habana_logs" "$root/etc/trainwatch/trainwatch.yaml" ||
  fail "/etc/trainwatch/trainwatch.yaml does not default HABANA_LOGS to /var/log/habana_logs"

# Proof that it read the installed packs (the source tree's would pass too): a broken file
# dropped next to them must make `check` fail and name it.
printf 'rules:\n  - id: broken\n' >"$root/usr/share/trainwatch/rules/zz-broken.yaml"
if "$installed" check >"$work/check.out" 2>&1; then
  fail "check passed with a broken installed rule file: it did not read the installed rules"
fi
grep -q "zz-broken.yaml" "$work/check.out" || { cat "$work/check.out"; fail "the error does not name zz-broken.yaml"; }
echo "install layout OK"
