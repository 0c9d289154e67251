#!/usr/bin/env bash
# Makes the base images daemon/Dockerfile names (debian:bookworm, debian:bookworm-slim) when
# the engine has none and no registry is reachable: both from one `debootstrap --variant=
# minbase bookworm` root file system, imported with `docker import` (about a minute, once
# per machine; the tarball is kept in TRAINWATCH_TEST_ROOTFS_CACHE, default
# /var/cache/trainwatch-tests). Debian's own images are also minbase debootstraps, with apt's
# sources set; this one points apt at the same mirror. Images already there are left alone.
set -euo pipefail
cache=${TRAINWATCH_TEST_ROOTFS_CACHE:-/var/cache/trainwatch-tests}
mirror=${TRAINWATCH_TEST_MIRROR:-http://deb.debian.org/debian}
tarball=$cache/bookworm-minbase-1.tar

missing=()
for image in debian:bookworm debian:bookworm-slim; do
  docker image inspect "$image" >/dev/null 2>&1 || missing+=("$image")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ ! -f "$tarball" ]; then
  command -v debootstrap >/dev/null || { echo "base_images: no debootstrap" >&2; exit 1; }
  mkdir -p "$cache"
  scratch=$(mktemp -d "$cache/minbase.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  echo "base_images: debootstrap --variant=minbase bookworm (once per machine)" >&2
  debootstrap --variant=minbase bookworm "$scratch/root" "$mirror" >"$scratch/debootstrap.out" 2>&1 ||
    { tail -20 "$scratch/debootstrap.out" >&2; exit 1; }
  rm -rf "$scratch/root/var/cache/apt/archives/"*.deb "$scratch/root/var/lib/apt/lists/"*
  tar -C "$scratch/root" -cf "$scratch/rootfs.tar" .
  mv "$scratch/rootfs.tar" "$tarball"
fi
for image in "${missing[@]}"; do
  echo "base_images: $image imported from $tarball" >&2
  docker import "$tarball" "$image" >/dev/null
done
