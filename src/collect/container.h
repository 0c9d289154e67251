// Which container a process runs in, from what the kernel shows of it: the cgroup path
// (`/docker/<id>`, `docker-<id>.scope`, containerd and Kubernetes forms; cgroup v1 and v2)
// and, for this process under cgroup v2's private namespace where the cgroup says only "/",
// the mount table (`/containers/<id>/hostname`). Pure functions of the files' text plus
// readers of /proc; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::collect {

struct ContainerId {
  std::string id;       // 64 hex digits
  std::string runtime;  // "docker", "containerd", "kubernetes", "podman"
};

std::optional<ContainerId> ContainerFromCgroup(std::string_view cgroup_text);
std::optional<ContainerId> ContainerFromMountinfo(std::string_view mountinfo_text);
// The container of process `pid` ("self" for this one): cgroup, then mountinfo.
std::optional<ContainerId> ContainerOfProcess(const std::string& pid,
                                              const std::string& proc_root = "/proc");

}  // namespace trainwatch::collect
