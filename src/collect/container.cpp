#include "collect/container.h"

#include <re2/re2.h>

#include <fstream>
#include <sstream>

namespace trainwatch::collect {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<ContainerId> ContainerFromCgroup(std::string_view cgroup_text) {
  // Docker (cgroupfs driver), Docker (systemd driver), containerd/CRI and Kubernetes pods,
  // Podman (libpod).
  static const RE2 docker("/docker/([0-9a-f]{64})");
  static const RE2 docker_scope("docker-([0-9a-f]{64})\\.scope");
  static const RE2 kubernetes(
      "kubepods[^\\n]*[/-](?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})");
  static const RE2 containerd("cri-containerd-([0-9a-f]{64})");
  static const RE2 podman("libpod-([0-9a-f]{64})");
  std::string id;
  const re2::StringPiece text(cgroup_text.data(), cgroup_text.size());
  if (RE2::PartialMatch(text, kubernetes, &id)) {
    return ContainerId{id, "kubernetes"};
  }
  if (RE2::PartialMatch(text, docker, &id) || RE2::PartialMatch(text, docker_scope, &id)) {
    return ContainerId{id, "docker"};
  }
  if (RE2::PartialMatch(text, containerd, &id)) {
    return ContainerId{id, "containerd"};
  }
  if (RE2::PartialMatch(text, podman, &id)) {
    return ContainerId{id, "podman"};
  }
  return std::nullopt;
}

std::optional<ContainerId> ContainerFromMountinfo(std::string_view mountinfo_text) {
  static const RE2 mount("/containers/([0-9a-f]{64})/(?:hostname|hosts|resolv\\.conf)");
  std::string id;
  if (RE2::PartialMatch(re2::StringPiece(mountinfo_text.data(), mountinfo_text.size()), mount,
                        &id)) {
    return ContainerId{id, "docker"};
  }
  return std::nullopt;
}

std::optional<ContainerId> ContainerOfProcess(const std::string& pid,
                                              const std::string& proc_root) {
  if (auto found = ContainerFromCgroup(ReadSmallFile(proc_root + "/" + pid + "/cgroup"))) {
    return found;
  }
  return ContainerFromMountinfo(ReadSmallFile(proc_root + "/" + pid + "/mountinfo"));
}

}  // namespace trainwatch::collect
