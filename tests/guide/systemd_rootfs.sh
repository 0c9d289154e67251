#!/usr/bin/env bash
# Prints the path of a Debian 12 root file system with systemd, for the guide test to boot
# with `systemd-nspawn -b`; builds it with debootstrap when it is missing (about 2.5 min
# and 1.7 GB, most of it PyTorch for the guide's `trainwatch wrap` of the demo job). It is
# kept between runs on the same machine (TRAINWATCH_TEST_ROOTFS_CACHE, default
# /var/cache/trainwatch-tests) and only ever booted with a throw-away overlay
# (--volatile=overlay), so one run leaves nothing for the next. Built under a temporary
# name and renamed when complete: an interrupted build is never taken for a cached one.
# Besides systemd: what the guide's commands use (man, python3 with PyTorch and tqdm, curl,
# zstd for tar --zstd), the package's Recommends (gdb, python3.11-dbg, elfutils: some 150 MB
# the guide's install would otherwise download each run), Debian's prometheus-node-exporter
# to serve the metrics, and apt's
# package lists, so the guide's `apt-get install ./trainwatch_*.deb` resolves its
# dependencies (it downloads them: the machine must reach Debian's mirror).
set -euo pipefail

cache=${TRAINWATCH_TEST_ROOTFS_CACHE:-/var/cache/trainwatch-tests}
# Bumped when the package list changes, so an older cache is not used.
rootfs=$cache/bookworm-systemd-2
packages=systemd,systemd-sysv,dbus,man-db,python3-torch,python3-tqdm,prometheus-node-exporter
packages+=,curl,ca-certificates,zstd,procps
mirror=${TRAINWATCH_TEST_MIRROR:-http://deb.debian.org/debian}

if [ -x "$rootfs/lib/systemd/systemd" ] && [ -f "$rootfs/.complete" ]; then
  echo "$rootfs"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed" >&2; exit 1; }
mkdir -p "$cache"
scratch=$rootfs.partial
rm -rf "$scratch"
echo "systemd_rootfs: debootstrap of bookworm into $scratch (once per machine)" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$scratch" "$mirror" \
  >"$cache/debootstrap.out" 2>&1 || { tail -20 "$cache/debootstrap.out" >&2; exit 1; }
cp /etc/resolv.conf "$scratch/etc/resolv.conf"
chroot "$scratch" apt-get update -qq >&2
# Through apt, not debootstrap's --include: its resolver cannot take gdb's dependency on a
# virtual package (libboost-regex1.74.0-icu72).
DEBIAN_FRONTEND=noninteractive chroot "$scratch" \
  apt-get install -y -qq --no-install-recommends gdb python3.11-dbg elfutils >&2
# The machine's name inside, and no first-boot questions.
echo trainwatch-guide >"$scratch/etc/hostname"
rm -f "$scratch/etc/machine-id" && : >"$scratch/etc/machine-id"
touch "$scratch/.complete"
rm -rf "$rootfs" && mv "$scratch" "$rootfs"
echo "$rootfs"
