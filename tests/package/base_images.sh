#!/usr/bin/env bash
# Makes the base images daemon/Dockerfile names (debian:bookworm, debian:bookworm-slim) when
# the engine has none and no registry is reachable: both from one `debootstrap --variant=
# minbase bookworm` root file system, imported with `docker import` (about a minute, once
# per machine; the tarball is kept in TRAINWATCH_TEST_ROOTFS_CACHE, default
# /var/cache/trainwatch-tests). Debian's own images are also minbase debootstraps, with apt's
# sources set; this one points apt at the same mirror. Images already there are left alone.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tarball=${TRAINWATCH_TEST_ROOTFS_CACHE:-/var/cache/trainwatch-tests}/bookworm-minbase-1.tar

missing=()
for image in debian:bookworm debian:bookworm-slim; do
  docker image inspect "$image" >/dev/null 2>&1 || missing+=("$image")
done
[ ${#missing[@]} -eq 0 ] && exit 0

make_rootfs_tarball "$tarball" || exit 1
for image in "${missing[@]}"; do
  echo "base_images: $image imported from $tarball" >&2
  docker import "$tarball" "$image" >/dev/null
done
