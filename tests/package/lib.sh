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
