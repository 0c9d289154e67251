#!/usr/bin/env bash
# Installs the .deb for real with apt (which resolves its Depends), runs the installed
# trainwatch, and purges it again. Changes the machine, so only as root and when asked:
# TRAINWATCH_TEST_DPKG_INSTALL=1 (.ci/run sets it). Leaves the machine as found: it refuses
# to run where trainwatch or its files are already installed, and purges (not just
# removes: the conffile would stay) at the end.
# Usage: deb_install_test.sh DEB_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "${TRAINWATCH_TEST_DPKG_INSTALL:-0}" = 1 ] || skip "set TRAINWATCH_TEST_DPKG_INSTALL=1 to install the .deb"
[ "$(id -u)" -eq 0 ] || skip "installing a .deb needs root"
need_tool apt-get dpkg dpkg-shlibdeps file
shopt -s nullglob
debs=("$1"/trainwatch_*.deb)
[ ${#debs[@]} -eq 1 ] || fail "no .deb in $1 (package.deb_build did not run or failed)"
deb=$(realpath "${debs[0]}")
if dpkg-query -W -f='${Status}' trainwatch 2>/dev/null | grep -q installed; then
  skip "trainwatch is already installed here; not touching it"
fi
for path in /usr/bin/trainwatch /etc/trainwatch /usr/share/trainwatch /lib/systemd/system/trainwatch.service; do
  [ ! -e "$path" ] || skip "$path exists already; not touching it"
done
make_work_dir
trap 'dpkg --purge trainwatch >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# Dependencies this machine lacks would need the network; the build machine has them all.
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb" ||
  fail "apt-get install $deb failed"
dpkg-query -W -f='${Conffiles}\n' trainwatch | grep -q /etc/trainwatch/trainwatch.yaml ||
  fail "dpkg does not list /etc/trainwatch/trainwatch.yaml as a conffile"

cd "$work"
unset TRAINWATCH_CONFIG
/usr/bin/trainwatch check || fail "installed trainwatch check failed"
/usr/bin/trainwatch check --config /etc/trainwatch/trainwatch.yaml || fail "check --config failed"
cat >train.log <<'LOG'
epoch 1 step 10 loss 2.31
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
LOG
status=0
/usr/bin/trainwatch scan train.log >scan.out || status=$?
cat scan.out
[ "$status" -eq 1 ] || fail "scan of a CUDA OOM traceback exited $status, not 1"
grep -q "out of memory" scan.out || fail "scan did not report the OOM"

if command -v man >/dev/null; then
  if [ -e /usr/share/man/man1/trainwatch.1.gz ]; then
    man -w trainwatch || fail "man -w trainwatch found no page"
    man -w 5 trainwatch-rules || fail "man -w 5 trainwatch-rules found no page"
  else
    echo "note: dpkg excluded /usr/share/man here (a minimised image); man -w not checked"
  fi
fi

dpkg --purge trainwatch
for path in /usr/bin/trainwatch /etc/trainwatch /usr/share/trainwatch /lib/systemd/system/trainwatch.service; do
  [ ! -e "$path" ] || fail "$path is still there after dpkg --purge"
done
echo "deb install OK"
