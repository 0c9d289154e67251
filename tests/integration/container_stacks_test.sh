#!/usr/bin/env bash
# Ranks in a Docker container, the daemon on the host (the issue's row "0 of 4 ranks with a
# Python or native stack"). Four gloo ranks run tests/integration/jobs/rank_failures.py's
# `mismatch` in an image of their own (torch_image.sh: Debian's python3-torch and
# python3.11-dbg, a build of python3.11 other than the host's), writing their log to a
# folder the host's daemon watches. Twice: by gdb (its libraries read inside its mount
# namespace, its executable and debug information from copies), and by trainwatch's Python hook loaded in the
# container (its dump named by the container's pid). Each bundle must hold every rank's Python
# and native stacks and the stacks' verdict: rank 2's broadcast against the others' all_reduce.
# Starts dockerd when none answers (and stops it after). Exit 77 (skip, with the reason)
# unless root with TRAINWATCH_TEST_DPKG_INSTALL=1 (it runs containers as root), or without
# docker.io, gdb or debootstrap. About 4 minutes the first time on a machine (the image),
# 80 s after.
# Usage: container_stacks_test.sh TRAINWATCH SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../package/lib.sh"
trainwatch=$1
source_dir=$(cd "$2" && pwd)

if [ "$(id -u)" -ne 0 ] || [ "${TRAINWATCH_TEST_DPKG_INSTALL:-}" != 1 ]; then
  skip "runs containers as root; set TRAINWATCH_TEST_DPKG_INSTALL=1 as root"
fi
need_tool docker gdb python3
make_work_dir
tag=$$
daemon_pid=""
stop() {
  docker rm -f "tw-ranks-$tag" >/dev/null 2>&1 || true
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  stop_dockerd
  rm -rf "$work"
}
trap stop EXIT
start_dockerd
image=trainwatch-test-torch:1
bash "$here/torch_image.sh" "$image" || skip "no image with python3-torch: no registry, and debootstrap could not make one"

mkdir -p "$work/job"
cp "$here/jobs/rank_failures.py" "$work/job/"
cat >"$work/test-rules.yaml" <<'YAML'
rules:
  - id: test.stall
    kind: hang
    tags: [train]
    description: A bar that stops for 3s (the shipped rule waits 10m)
    progress: {stall_after: 3s, startup_grace: 60s}
YAML

# run_phase NAME PYTHON_ROUTE [DOCKER_RUN_ARGS...]: a daemon of its own (state in
# $work/NAME), the job in a new container, the bundle checked: every rank's Python stack by
# PYTHON_ROUTE, and the stacks' verdict.
run_phase() {
  local name=$1 route=$2
  shift 2
  mkdir -p "$work/$name/logs"
  cat >"$work/$name/trainwatch.yaml" <<YAML
state_dir: $work/$name/state
rules: [$source_dir/rules, $work/test-rules.yaml]
incident: {settle: 2s}
capture: {commands: [], habana_logs: none}
sources:
  - name: train
    tags: [train]
    paths: ["$work/$name/logs/console.log"]
    start_at: beginning
YAML
  "$trainwatch" daemon --config "$work/$name/trainwatch.yaml" >"$work/$name/daemon.log" 2>&1 &
  daemon_pid=$!
  wait_for 30 "$trainwatch" status --config "$work/$name/trainwatch.yaml" ||
    { tail -20 "$work/$name/daemon.log"; fail "$name: the daemon does not answer"; }
  docker run -d --name "tw-ranks-$tag" -v "$work/job:/job:ro" -v "$work/$name/logs:/logs" "$@" \
    "$image" sh -c '/usr/bin/python3 /job/rank_failures.py --scenario mismatch \
      --log-dir /tmp/ranks --ranks 4 --culprit 2 >>/logs/console.log 2>&1' >/dev/null
  bundle_written() { grep -q '"bundle_for"' "$work/$name/state/incidents.jsonl"; }
  wait_for 180 bundle_written || {
    tail -5 "$work/$name/logs/console.log"
    tail -30 "$work/$name/daemon.log"
    fail "$name: no bundle for the ranks' hang"
  }
  python3 - "$work/$name" "$route" <<'PY'
import json, subprocess, sys
work, route = sys.argv[1], sys.argv[2]
record = [json.loads(line) for line in open(f"{work}/state/incidents.jsonl")
          if '"bundle_for"' in line][0]
subprocess.run(["tar", "--zstd", "-xf", record["bundle"], "-C", work, "manifest.json"],
               check=True)
ranks = json.load(open(f"{work}/manifest.json"))["ranks"]["ranks"]
problems = []
if len(ranks) != 4:
    problems.append(f"{len(ranks)} ranks in the bundle, not 4")
for rank in ranks:
    if rank["python_route"] != route or not rank["native_route"]:
        problems.append(f"{rank['label']}: python by '{rank['python_route']}', native by "
                        f"'{rank['native_route']}': {rank['route_notes']}")
said = record.get("stacks_say", {})
if said.get("kind") != "collective_mismatch" or said.get("culprits") != ["rank 2"]:
    problems.append(f"the stacks say {said}")
if "rank 2 in broadcast at rank_failures.py:" not in said.get("says", ""):
    problems.append(f"no call site: {said.get('says')}")
if problems:
    print(f"FAIL ({route}): " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"container_stacks: 4 ranks in a container, Python stacks by {route}; {said['says']}; "
      f"bundle {record['firing_to_bundle_seconds']:.1f} s after the stall")
PY
  docker rm -f "tw-ranks-$tag" >/dev/null
  kill "$daemon_pid"
  wait "$daemon_pid" || true
  daemon_pid=""
}

# gdb from the host, reading the container's own libraries and debug files.
run_phase gdb gdb
# trainwatch's Python hook inside the container (mounted read-only, as a wrap would give it): the
# rank names its dump by its own pid (the container's), which the daemon maps through NSpid and
# reads under the rank's root.
run_phase hook faulthandler -v "$source_dir/daemon/python:/hook:ro" -e PYTHONPATH=/hook \
  -e TRAINWATCH_STACKS_DIR=/tmp -e TRAINWATCH_STACKS_SIGNAL=37
