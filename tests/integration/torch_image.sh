#!/usr/bin/env bash
# Makes the image IMAGE (default trainwatch-test-torch:1) a containerised training job runs in:
# Debian 12 with python3-torch and python3.11-dbg (the debug information py-bt needs), from
# one `debootstrap --variant=minbase` root file system imported with `docker import` (about 3
# minutes, once per machine: the tarball is kept in TRAINWATCH_TEST_ROOTFS_CACHE, default
# /var/cache/trainwatch-tests). No registry is needed. An image already there is left alone.
set -euo pipefail
source "$(dirname "$0")/../package/lib.sh"
image=${1:-trainwatch-test-torch:1}
tarball=${TRAINWATCH_TEST_ROOTFS_CACHE:-/var/cache/trainwatch-tests}/bookworm-torch-1.tar

docker image inspect "$image" >/dev/null 2>&1 && exit 0
make_rootfs_tarball "$tarball" python3-torch,python3.11-dbg usr/share/doc usr/share/man \
  usr/share/locale || exit 1
echo "torch_image: $image imported from $tarball" >&2
docker import "$tarball" "$image" >/dev/null
