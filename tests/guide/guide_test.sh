#!/usr/bin/env bash
# The README's operator guide, run: every ```sh block that follows a `<!-- guide -->` marker,
# in order, in one shell (variables carry from block to block), with `set -e`, from a
# directory that looks like the checkout with the build in `build/`. As the guide says, as
# root on Debian 12: it really installs the .deb it builds, then removes it and what the
# guide created. systemctl, journalctl, docker and kubectl are shims (shims/: what they can
# check without systemd, a container engine or a cluster, and why).
# A block marked `<!-- guide: destdir -->` runs with DESTDIR set to a scratch directory, so
# "install from source" does not land on the machine beside the package.
# Usage: guide_test.sh SOURCE_DIR BUILD_DIR. Exit 77 (skip) unless root with
# TRAINWATCH_TEST_DPKG_INSTALL=1 (CI sets it): it changes the machine.
set -euo pipefail
source_dir=$(cd "$1" && pwd) build_dir=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ] || [ "${TRAINWATCH_TEST_DPKG_INSTALL:-}" != 1 ]; then
  echo "SKIP: runs the operator guide as root and installs the .deb; set TRAINWATCH_TEST_DPKG_INSTALL=1 as root"
  exit 77
fi
if dpkg-query -W -f='${Status}' trainwatch 2>/dev/null | grep -q "ok installed"; then
  echo "SKIP: a trainwatch package is already installed here; the guide installs its own"
  exit 77
fi
# What the guide creates, removed after it: none may be there before.
created=(/etc/trainwatch /etc/systemd/system/trainwatch.service.d /var/lib/trainwatch
  /var/lib/private/trainwatch /var/log/training /srv/incidents
  /var/lib/prometheus/node-exporter/trainwatch.prom /tmp/bundle /tmp/replay.log
  /tmp/trainwatch-status.json)
for path in "${created[@]}"; do
  if [ -e "$path" ]; then
    echo "SKIP: $path exists; the guide would change or remove it"
    exit 77
  fi
done

work=$(mktemp -d /tmp/trainwatch-guide.XXXXXX)
shim_state=$work/shim
mkdir -p "$shim_state" "$work/checkout"
for entry in "$source_dir"/* "$source_dir"/.ci; do
  ln -s "$entry" "$work/checkout/$(basename "$entry")"
done
rm -f "$work/checkout/build"
ln -s "$build_dir" "$work/checkout/build"

cleanup() {
  GUIDE_SHIM_STATE=$shim_state "$here/shims/systemctl" stop trainwatch >/dev/null 2>&1 || true
  if dpkg-query -W -f='${Status}' trainwatch 2>/dev/null | grep -q "ok installed"; then
    dpkg --purge trainwatch >/dev/null || echo "guide: could not purge the package" >&2
  fi
  rm -rf "${created[@]}" "$work"
  rmdir /var/lib/prometheus/node-exporter /var/lib/prometheus 2>/dev/null || true
}
trap cleanup EXIT

# The blocks, each as "marker<TAB>line" records, split on the marker lines.
script=$work/guide.sh
python3 - "$source_dir/README.md" "$script" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"<!-- guide(?:: (\w+))? -->\n```sh\n(.*?)```", text, re.S)
if not blocks:
    sys.exit("guide: no <!-- guide --> blocks in README.md")
with open(sys.argv[2], "w") as out:
    for number, (mode, body) in enumerate(blocks, 1):
        out.write(f"echo '--- guide block {number}'\n")
        if mode == "destdir":
            out.write('export DESTDIR="$GUIDE_DESTDIR"\n')
        out.write(body)
        if mode == "destdir":
            out.write("unset DESTDIR\n")
print(f"guide: {len(blocks)} blocks", file=sys.stderr)
PY

cd "$work/checkout"
export GUIDE_SHIM_STATE=$shim_state GUIDE_DESTDIR=$work/destdir
# A Debian root's PATH (not this shell's: python3 must be Debian's, with its PyTorch).
export PATH=$here/shims:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
bash -euo pipefail -x "$script"
echo "guide: every block ran"
