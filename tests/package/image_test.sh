#!/usr/bin/env bash
# The container image with the real engine: the operator guide's `guide: docker` blocks build
# daemon/Dockerfile (base images from base_images.sh when no registry answers), then the
# image runs as the guide says, with a log and a state volume: a crash appended to the log
# becomes an incident and a bundle, in which dmesg (no CAP_SYSLOG in a container) is
# not_permitted, not failed. `--user 1000:1000` on a fresh (root's) state volume exits 2
# naming the directory's owner and mode. Then the sidecar shape: a job and the sidecar in one
# PID namespace (held by a third container, as Kubernetes' pause container holds a pod's),
# the sidecar with a read-only root and no capability but SYS_PTRACE; the job is SIGKILLed
# mid-bar and the sidecar records writer.exited with the job's environment, its secret
# redacted. The `guide: kubectl` block runs with the stand-in kubectl (no cluster here).
# Starts dockerd when none answers (and stops it after). Exit 77 (skip, with the reason)
# unless root with TRAINWATCH_TEST_DPKG_INSTALL=1, or without docker.io.
# Usage: image_test.sh SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ] || [ "${TRAINWATCH_TEST_DPKG_INSTALL:-}" != 1 ]; then
  skip "builds and runs containers as root; set TRAINWATCH_TEST_DPKG_INSTALL=1 as root"
fi
need_tool docker
make_work_dir
tag=$$
stop() {
  docker rm -f "tw-daemon-$tag" "tw-pod-$tag" "tw-job-$tag" "tw-sidecar-$tag" >/dev/null 2>&1 || true
  docker volume rm "tw-state-$tag" "tw-fresh-$tag" "tw-logs-$tag" "tw-sidecar-state-$tag" >/dev/null 2>&1 || true
  docker rmi trainwatch:0.1.0 >/dev/null 2>&1 || true
  stop_dockerd
  rm -rf "$work"
}
trap stop EXIT
start_dockerd
docker image inspect trainwatch:0.1.0 >/dev/null 2>&1 &&
  skip "an image trainwatch:0.1.0 is already here; the test builds and removes its own"
bash "$here/base_images.sh" || skip "no base images: no registry, and debootstrap could not make them"

# The guide's blocks, as written.
python3 - "$source_dir/docs/operator-guide.md" "$work" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for mode in ("docker", "kubectl"):
    blocks = re.findall(r"<!-- guide: %s -->\n```sh\n(.*?)```" % mode, text, re.S)
    if not blocks:
        sys.exit(f"image_test: no <!-- guide: {mode} --> block in docs/operator-guide.md")
    open(f"{sys.argv[2]}/{mode}.sh", "w").write("".join(blocks))
PY
build_started=$SECONDS
(cd "$source_dir" && bash -euxo pipefail "$work/docker.sh") >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; fail "the guide's docker build failed"; }
echo "image: built in $((SECONDS - build_started)) s, $(docker image inspect -f '{{.Size}}' trainwatch:0.1.0) bytes"
grep -q 'Sending build context to Docker daemon' "$work/build.log" &&
  { context=$(grep -o 'Sending build context to Docker daemon *[0-9.]* *[kMG]*B' "$work/build.log" | tail -1)
    echo "image: $context"
    grep -Eq 'daemon +[0-9.]+ *(kB|B)$|daemon +[0-9](\.[0-9]+)? *MB$' <<<"$context" ||
      fail "the build context is not small ($context): .dockerignore not applied?"; }
(cd "$source_dir" && PATH="$source_dir/tests/guide/shims:$PATH" bash -euo pipefail "$work/kubectl.sh") ||
  fail "the guide's kubectl block failed"

# No apt cache or package lists left in the image.
leftovers=$(docker run --rm --entrypoint sh trainwatch:0.1.0 -c \
  'ls /var/cache/apt/archives/*.deb /var/lib/apt/lists/*_Packages* 2>/dev/null | wc -l')
[ "$leftovers" = 0 ] || fail "the image keeps $leftovers apt cache files"

# As the guide runs it: logs and state from the host.
mkdir -p "$work/logs"
docker run -d --name "tw-daemon-$tag" -v "$work/logs:/logs:ro" -v "tw-state-$tag:/var/lib/trainwatch" \
  trainwatch:0.1.0 >/dev/null
wait_for 30 docker exec "tw-daemon-$tag" trainwatch status || fail "the daemon in the image does not answer"
started=$SECONDS
printf 'step 1 loss 0.93\nRuntimeError: CUDA error: an illegal memory access was encountered\n' >>"$work/logs/job.log"
bundle_of() { docker exec "$1" sh -c 'ls /var/lib/trainwatch/bundles/*.tar.zst' 2>/dev/null | head -n 1; }
wait_for 60 sh -c "docker exec tw-daemon-$tag sh -c 'ls /var/lib/trainwatch/bundles/*.tar.zst'" ||
  { docker logs "tw-daemon-$tag" | tail -20; fail "no bundle for the crash"; }
echo "image: crash to bundle in $((SECONDS - started)) s"
bundle=$(bundle_of "tw-daemon-$tag")
manifest=$(docker exec "tw-daemon-$tag" tar --zstd -xOf "$bundle" --wildcards '*manifest.json')
python3 - "$manifest" <<'PY' || fail "the manifest's dmesg is not not_permitted"
import json, sys
manifest = json.loads(sys.argv[1])
dmesg = [c for c in manifest["collectors"] if c["name"] == "dmesg"]
assert dmesg and dmesg[0]["status"] == "not_permitted", dmesg
PY

# --user with a fresh volume (root's): exit 2, saying whose the directory is and what to do.
set +e
refused=$(docker run --rm --user 1000:1000 -v "tw-fresh-$tag:/var/lib/trainwatch" trainwatch:0.1.0 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "--user 1000:1000 on a root volume exited $code: $refused"
grep -q 'is owned by uid 0, gid 0 with mode 0755, and this daemon runs as uid 1000, gid 1000' <<<"$refused" ||
  fail "the refusal does not name the owner and mode: $refused"

# The sidecar: one PID namespace (held by a pause-like container), a read-only root, no
# capability but SYS_PTRACE. The job holds its log open and draws a bar as tqdm does in a
# file (\r between updates, so the log ends mid-bar); SIGKILL mid-bar.
docker run -d --name "tw-pod-$tag" --entrypoint sleep trainwatch:0.1.0 infinity >/dev/null
docker run -d --name "tw-job-$tag" --pid "container:tw-pod-$tag" -v "tw-logs-$tag:/logs" \
  -e WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567 --entrypoint sh trainwatch:0.1.0 -c '
    exec 3>>/logs/job.log; i=0
    while :; do i=$((i + 1)); printf "\rEpoch 0:  %d%%|#    | %d/1000 [00:01<00:10, 9.00it/s]" $((i / 10)) $i >&3; sleep 0.2; done' >/dev/null
docker run -d --name "tw-sidecar-$tag" --pid "container:tw-pod-$tag" --read-only --tmpfs /tmp \
  --cap-drop ALL --cap-add SYS_PTRACE -v "tw-logs-$tag:/logs:ro" \
  -v "tw-sidecar-state-$tag:/var/lib/trainwatch" trainwatch:0.1.0 >/dev/null
writer_seen() {
  docker exec "tw-sidecar-$tag" trainwatch status --json | python3 -c '
import json, sys
status = json.load(sys.stdin)
sys.exit(0 if any(f.get("writers") for s in status["sources"] for f in s.get("files", [])) else 1)'
}
wait_for 60 writer_seen || { docker logs "tw-sidecar-$tag" | tail -20; fail "the sidecar never saw the job write its log"; }
docker kill "tw-job-$tag" >/dev/null
wait_for 60 sh -c "docker exec tw-sidecar-$tag sh -c 'ls /var/lib/trainwatch/bundles/*.tar.zst'" ||
  { docker logs "tw-sidecar-$tag" | tail -20
    docker exec "tw-sidecar-$tag" trainwatch status --json || true
    docker exec "tw-sidecar-$tag" sh -c 'for s in /proc/[0-9]*/stat; do cat "$s"; echo; done' || true
    fail "no bundle after the job was killed"; }
grep -q '"rule":"writer.exited"' <(docker exec "tw-sidecar-$tag" cat /var/lib/trainwatch/incidents.jsonl) ||
  fail "the killed job is not a writer.exited incident"
bundle=$(bundle_of "tw-sidecar-$tag")
docker exec "tw-sidecar-$tag" tar --zstd -xOf "$bundle" >"$work/sidecar-bundle.txt"
grep -q 'WANDB_API_KEY' "$work/sidecar-bundle.txt" || fail "the job's environment is not in the bundle"
if grep -q '0123456789abcdef0123456789abcdef01234567' "$work/sidecar-bundle.txt"; then
  fail "the job's WANDB_API_KEY is in the bundle unredacted"
fi
echo "image: every check held"
