#!/usr/bin/env bash
# The operator guide (docs/operator-guide.md), run on real parts: every ```sh block after a
# `<!-- guide -->` marker runs, in order and in one shell (variables carry from block to
# block), with `set -e`, inside a booted Debian 12 systemd (`systemd-nspawn -b` on a
# debootstrap root file system, systemd_rootfs.sh), so `apt-get install` of the .deb,
# `systemctl`, `journalctl` and `systemd-analyze` are the real ones and the unit runs with its
# whole sandbox. Before the
# guide's last block (the removal) checks.sh looks at what the guide cannot show: the unit's
# user, capabilities and seccomp in /proc, another user's 0700 log directory, the watchdog
# restarting a stopped daemon that then resumes from its offsets, `systemctl reload` of a
# broken config, node_exporter serving the series.
# The other markers: `guide: host` blocks (building the .deb) run here, on the machine with
# the build; `guide: destdir` ones too, with DESTDIR set to a scratch directory so "install
# from source" does not land on the machine; `guide: docker` and `guide: kubectl` blocks are
# run by tests/package/image_test.sh with the real engine.
# The container boots with a throw-away overlay on the cached root file system
# (--volatile=overlay): nothing the guide does outlives the test, on the machine or in the
# cache. The checkout and the build are bound in read-only at their own paths.
# Usage: guide_test.sh SOURCE_DIR BUILD_DIR. Exit 77 (skip, with the reason) unless root
# with TRAINWATCH_TEST_DPKG_INSTALL=1 (CI sets it), and where systemd-nspawn, debootstrap or
# Debian's mirror (for the first root file system and the .deb's dependencies) are missing.
set -euo pipefail
source_dir=$(cd "$1" && pwd) build_dir=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIP: $*"; exit 77; }

if [ "$(id -u)" -ne 0 ] || [ "${TRAINWATCH_TEST_DPKG_INSTALL:-}" != 1 ]; then
  skip "boots a container as root and installs the .deb in it; set TRAINWATCH_TEST_DPKG_INSTALL=1 as root"
fi
command -v systemd-nspawn >/dev/null || skip "no systemd-nspawn (apt-get install systemd-container)"
command -v debootstrap >/dev/null || skip "no debootstrap (apt-get install debootstrap)"
[ -r /dev/kmsg ] || skip "no readable /dev/kmsg to bind into the container"
rootfs=$(bash "$here/systemd_rootfs.sh") ||
  skip "no Debian 12 root file system could be made with debootstrap (is Debian's mirror reachable?)"

work=$(mktemp -d /tmp/trainwatch-guide.XXXXXX)
mkdir -p "$work/checkout" "$work/destdir"
for entry in "$source_dir"/* "$source_dir"/.ci; do
  ln -s "$entry" "$work/checkout/$(basename "$entry")"
done
rm -f "$work/checkout/build"
ln -s "$build_dir" "$work/checkout/build"

nspawn_pid=""
cleanup() {
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null || true  # the container's systemd powers off
    for _ in $(seq 60); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$nspawn_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The blocks, by where they run.
python3 - "$source_dir/docs/operator-guide.md" "$work" "$here/checks.sh" <<'PY'
import re, sys
guide, work, checks = sys.argv[1:]
text = open(guide).read()
blocks = re.findall(r"<!-- guide(?:: (\w+))? -->\n```sh\n(.*?)```", text, re.S)
if not blocks:
    sys.exit("guide: no <!-- guide --> blocks in docs/operator-guide.md")
host = open(f"{work}/host.sh", "w")
inside = [(n, body) for n, (mode, body) in enumerate(blocks, 1) if not mode]
for number, (mode, body) in enumerate(blocks, 1):
    if mode in ("host", "destdir"):
        host.write(f"echo '--- guide block {number} (here)'\n")
        host.write('export DESTDIR="$GUIDE_DESTDIR"\n' if mode == "destdir" else "")
        host.write(body)
        host.write("unset DESTDIR\n" if mode == "destdir" else "")
    elif mode not in ("", None, "docker", "kubectl"):
        sys.exit(f"guide: block {number}: unknown marker 'guide: {mode}'")
with open(f"{work}/guide.sh", "w") as out:
    for number, body in inside:
        if (number, body) == inside[-1]:
            out.write(f"echo '--- checks before the last block'\nsource {checks}\n")
        out.write(f"echo '--- guide block {number} (in the container)'\n")
        out.write(body)
print(f"guide: {len(blocks)} blocks, {len(inside)} in the container", file=sys.stderr)
PY

cd "$work/checkout"
echo "guide: the blocks that run here"
GUIDE_DESTDIR=$work/destdir bash -euo pipefail -x "$work/host.sh"

# Boot. CAP_SYSLOG and /dev/kmsg for the kernel source; the network is the machine's own
# (apt reaches Debian's mirror, node_exporter listens on localhost:9100).
binds=(--bind-ro="$source_dir" --bind-ro="$build_dir" --bind-ro="$work")
promtool=$(command -v promtool || true)
[ -n "$promtool" ] && binds+=(--bind-ro="$promtool:/usr/local/bin/promtool")
machine=tw-guide-$$
systemd-nspawn -b -D "$rootfs" --volatile=overlay --keep-unit --register=no -M "$machine" \
  --capability=CAP_SYSLOG --bind-ro=/dev/kmsg "${binds[@]}" >"$work/console.log" 2>&1 &
nspawn_pid=$!
leader=""
for _ in $(seq 120); do
  leader=$(pgrep -P "$nspawn_pid" | head -n 1 || true)
  if [ -n "$leader" ]; then
    state=$(nsenter -t "$leader" -a systemctl is-system-running 2>/dev/null || true)
    case $state in running | degraded) break ;; esac
  fi
  kill -0 "$nspawn_pid" 2>/dev/null || { cat "$work/console.log"; echo "guide: the container did not boot"; exit 1; }
  sleep 0.5
done
echo "guide: $machine booted ($state), its PID 1 is $leader here"
in_container() {
  nsenter -t "$leader" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
if ! in_container bash -c "cd '$work/checkout' && bash -euo pipefail -x '$work/guide.sh'"; then
  echo "guide: failed; the daemon's journal:"
  in_container journalctl -u trainwatch --no-pager -n 60 || true
  exit 1
fi
# The hardened unit must let the daemon run its compile helper (core/prefilter_compiler.h):
# a helper it could not start is no failure to the guide (the compile falls back to the
# daemon's own memory), so it is looked for here.
if in_container journalctl -u trainwatch --no-pager | grep "prefilter compile helper failed"; then
  echo "guide: under the hardened unit the daemon could not run its compile helper"
  exit 1
fi
echo "guide: every block ran, on a booted systemd"
