# shellcheck shell=bash
# Shared by the tests/package/ scripts (sourced). ctest registers them with
# SKIP_RETURN_CODE 77: a missing tool skips the test with the reason, never fails it.

skip() {
  echo "SKIP: $*"
  exit 77
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

need_tool() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || skip "$tool is not installed (bash .ci/install-deps)"
  done
}

# A temporary directory removed at exit: $work.
make_work_dir() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/trainwatch-package.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# expect_path ROOT PATH...: each PATH exists under ROOT.
expect_path() {
  local root=$1
  shift
  for path in "$@"; do
    [ -e "$root$path" ] || fail "missing $path (under $root)"
  done
}

# Makes sure a Docker engine answers: starts dockerd (its log in $work/dockerd.log) when none
# does, and sets started_dockerd to its pid for stop_dockerd; skips without docker.io or when
# dockerd will not start. Needs make_work_dir first.
started_dockerd=""
start_dockerd() {
  docker info >/dev/null 2>&1 && return 0
  command -v dockerd >/dev/null || skip "no Docker engine answers and dockerd is not installed (docker.io)"
  # At a lower priority: the image's build stage compiles the project on every core, and
  # ctest runs timed tests beside it.
  nice -n 10 dockerd >"$work/dockerd.log" 2>&1 &
  started_dockerd=$!
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && return 0; sleep 0.5; done
  tail -20 "$work/dockerd.log"
  skip "dockerd would not start here"
}

# Stops the dockerd start_dockerd started, if it did.
stop_dockerd() {
  [ -n "$started_dockerd" ] || return 0
  kill "$started_dockerd" 2>/dev/null || true
  for _ in $(seq 40); do kill -0 "$started_dockerd" 2>/dev/null || break; sleep 0.5; done
}

# wait_for SECONDS COMMAND...: runs COMMAND every half second until it succeeds; false when
# SECONDS pass first.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

# make_rootfs_tarball TARBALL [PACKAGES] [TRIM...]: a `debootstrap --variant=minbase bookworm`
# root file system with PACKAGES (comma-separated) as TARBALL, made once (kept there), from
# TRAINWATCH_TEST_MIRROR (default deb.debian.org); apt's downloads and lists and the TRIM paths
# (inside the root) are left out. Returns 1, with debootstrap's last lines, when it cannot.
make_rootfs_tarball() {
  local tarball=$1 packages=${2:-}
  shift 2 || shift $#
  [ -f "$tarball" ] && return 0
  command -v debootstrap >/dev/null || { echo "no debootstrap" >&2; return 1; }
  mkdir -p "$(dirname "$tarball")"
  local scratch
  scratch=$(mktemp -d "$(dirname "$tarball")/rootfs.XXXXXX")
  echo "debootstrap bookworm${packages:+ with $packages} (once per machine)" >&2
  if ! debootstrap --variant=minbase ${packages:+--include="$packages"} bookworm "$scratch/root" \
    "${TRAINWATCH_TEST_MIRROR:-http://deb.debian.org/debian}" >"$scratch/debootstrap.out" 2>&1; then
    tail -20 "$scratch/debootstrap.out" >&2
    rm -rf "$scratch"
    return 1
  fi
  rm -rf "$scratch/root/var/cache/apt/archives/"*.deb "$scratch/root/var/lib/apt/lists/"*
  for trim in "$@"; do rm -rf "${scratch:?}/root/$trim"; done
  tar -C "$scratch/root" -cf "$scratch/rootfs.tar" . && mv "$scratch/rootfs.tar" "$tarball"
  local made=$?
  rm -rf "$scratch"
  return $made
}
