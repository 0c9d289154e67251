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
  dockerd >"$work/dockerd.log" 2>&1 &
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
