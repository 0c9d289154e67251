#!/usr/bin/env bash
# Makes the image IMAGE (default trainwatch-test-torch:1) a containerised training job runs in:
# Debian 12 with python3-torch and python3.11-dbg (the debug information py-bt needs), from
# one `debootstrap --variant=minbase` root file system imported with `docker import` (about 3
# minutes, once per machine: the tarball is kept in TRAINWATCH_TEST_ROOTFS_CACHE, default
# /var/cache/trainwatch-tests). No registry is needed. An image already there is left alone.
set -euo pipefail
image=${1:-trainwatch-test-torch:1}
cache=${TRAINWATCH_TEST_ROOTFS_CACHE:-/var/cache/trainwatch-tests}
mirror=${TRAINWATCH_TEST_MIRROR:-http://deb.debian.org/debian}
tarball=$cache/bookworm-torch-1.tar

docker image inspect "$image" >/dev/null 2>&1 && exit 0
if [ ! -f "$tarball" ]; then
  command -v debootstrap >/dev/null || { echo "torch_image: no debootstrap" >&2; exit 1; }
  mkdir -p "$cache"
  scratch=$(mktemp -d "$cache/torch.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  echo "torch_image: debootstrap bookworm with python3-torch (once per machine)" >&2
  debootstrap --variant=minbase --include=python3-torch,python3.11-dbg bookworm "$scratch/root" \
    "$mirror" >"$scratch/debootstrap.out" 2>&1 || { tail -20 "$scratch/debootstrap.out" >&2; exit 1; }
  rm -rf "$scratch/root/var/cache/apt/archives/"*.deb "$scratch/root/var/lib/apt/lists/"* \
    "$scratch/root/usr/share/doc" "$scratch/root/usr/share/man" "$scratch/root/usr/share/locale"
  tar -C "$scratch/root" -cf "$scratch/rootfs.tar" .
  mv "$scratch/rootfs.tar" "$tarball"
fi
echo "torch_image: $image imported from $tarball" >&2
docker import "$tarball" "$image" >/dev/null
