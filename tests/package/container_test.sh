#!/usr/bin/env bash
# The container files, read without an engine or a cluster (image_test.sh builds and runs the
# image with the real engine; no cluster is here for the Pod): the sidecar
# ConfigMap's trainwatch.yaml passes `trainwatch check --config`, the Pod shares its process
# namespace and is not privileged, and the Dockerfile builds with the commands the other
# package tests run (cpack -G DEB -B, install-deps --build-only).
# Usage: container_test.sh TRAINWATCH SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trainwatch=$1 source_dir=$2
need_tool python3
python3 -c 'import yaml' 2>/dev/null || skip "python3 has no yaml module (python3-yaml)"
make_work_dir

manifest="$source_dir/daemon/k8s/trainwatch-sidecar.yaml"
python3 - "$manifest" "$work/trainwatch.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
config = kinds["ConfigMap"]["data"]["trainwatch.yaml"]
open(sys.argv[2], "w").write(config)
pod = kinds["Pod"]["spec"]
assert pod.get("shareProcessNamespace") is True, "shareProcessNamespace must be true"
names = {c["name"]: c for c in pod["containers"]}
sidecar = names["trainwatch"]
assert sidecar["args"][0] == "daemon", "the sidecar must run trainwatch daemon"
assert "--config" in sidecar["args"], "the sidecar must name the ConfigMap's config"
context = sidecar.get("securityContext", {})
assert not context.get("privileged", False), "the sidecar must not be privileged"
config_mount = [m for m in sidecar["volumeMounts"] if m["name"] == "config"][0]
config_path = sidecar["args"][sidecar["args"].index("--config") + 1]
assert config_path.startswith(config_mount["mountPath"] + "/"), "--config is not in the ConfigMap mount"
volumes = {v["name"]: v for v in pod["volumes"]}
assert "emptyDir" in volumes["logs"], "the log volume must be a shared emptyDir"
for container in names.values():
    assert any(m["name"] == "logs" for m in container["volumeMounts"]), container["name"] + " lacks the log volume"
assert "hostPath" in volumes["bundles"] or "persistentVolumeClaim" in volumes["bundles"]
# The sources must watch the shared log volume.
parsed = yaml.safe_load(config)
logs_mount = [m for m in sidecar["volumeMounts"] if m["name"] == "logs"][0]["mountPath"]
for source in parsed["sources"]:
    for path in source.get("paths", []):
        assert path.startswith(logs_mount + "/"), path + " is not on the shared log volume"
print("k8s manifest OK")
PY
env -u TRAINWATCH_CONFIG "$trainwatch" check --config "$work/trainwatch.yaml" ||
  fail "the ConfigMap's trainwatch.yaml does not pass trainwatch check --config"

dockerfile="$source_dir/daemon/Dockerfile"
expect_line() {
  grep -Eq -- "$1" "$dockerfile" || fail "daemon/Dockerfile lacks: $1"
}
expect_line '^FROM debian:bookworm AS build$'
expect_line '^FROM debian:bookworm-slim$'
expect_line 'bash \.ci/install-deps --build-only'
expect_line 'cmake -S \. -B /build -DCMAKE_BUILD_TYPE=Release -DTRAINWATCH_BUILD_TESTS=OFF'
# The same cpack invocation as tests/package/deb_build_test.sh.
expect_line 'cpack --config /build/CPackConfig.cmake -G DEB -B /build/packages'
# shellcheck disable=SC2016 # the literal command text
grep -q 'cpack --config "$build_dir/CPackConfig.cmake" -G DEB -B "$out_dir"' \
  "$source_dir/tests/package/deb_build_test.sh" || fail "deb_build_test.sh changed its cpack command"
expect_line '^COPY --from=build /build/packages/trainwatch_\*\.deb /tmp/$'
expect_line 'apt-get install -y --no-install-recommends /tmp/trainwatch_\*\.deb zstd procps gdb elfutils'
expect_line '^ENV TRAINWATCH_STATE_DIR=/var/lib/trainwatch'
expect_line '^VOLUME /var/lib/trainwatch$'
expect_line '^ENTRYPOINT \["trainwatch"\]$'
expect_line '^CMD \["daemon"\]$'
# --build-only must keep what the build stage runs: the toolchain, go-md2man, file.
bash -n "$source_dir/.ci/install-deps" || fail ".ci/install-deps is not valid bash"
for package in go-md2man file cmake; do
  grep -q "$package" "$source_dir/.ci/install-deps" || fail ".ci/install-deps lacks $package"
done
echo "Dockerfile OK"
