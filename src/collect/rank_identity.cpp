#include "collect/rank_identity.h"

#include <charconv>
#include <map>

#include "core/split.h"

namespace trainwatch::collect {
namespace {

constexpr const char* kDeviceVariables[] = {"HABANA_VISIBLE_MODULES",    "HABANA_VISIBLE_DEVICES",
                                            "CUDA_VISIBLE_DEVICES",      "NVIDIA_VISIBLE_DEVICES",
                                            "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES",
                                            "ROCR_VISIBLE_DEVICES",      "HIP_VISIBLE_DEVICES"};

// A whole non-negative number, or nullopt.
std::optional<int> NonNegative(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> Number(const std::map<std::string_view, std::string_view>& env,
                          std::string_view name) {
  const auto found = env.find(name);
  return found == env.end() ? std::nullopt : NonNegative(found->second);
}

std::optional<int> FirstNumber(const std::map<std::string_view, std::string_view>& env,
                               std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (std::optional<int> value = Number(env, name)) {
      return value;
    }
  }
  return std::nullopt;
}

std::string Text(const std::map<std::string_view, std::string_view>& env, std::string_view name) {
  const auto found = env.find(name);
  return found == env.end() ? std::string() : std::string(found->second);
}

// NAME -> value of NUL-separated NAME=value entries; the first of a name counts.
std::map<std::string_view, std::string_view> EnvironEntries(std::string_view environ) {
  std::map<std::string_view, std::string_view> env;
  ForEachPiece(environ, '\0', [&](std::string_view entry) {
    if (const std::size_t equals = entry.find('='); equals != std::string_view::npos) {
      env.emplace(entry.substr(0, equals), entry.substr(equals + 1));
    }
  });
  return env;
}

}  // namespace

std::string EnvironVariable(std::string_view environ, std::string_view name) {
  return Text(EnvironEntries(environ), name);
}

std::optional<int> RankInEnviron(std::string_view environ) {
  constexpr std::size_t kVariables = std::size(kRankVariables);
  std::size_t best = kVariables;  // the index in kRankVariables of the rank taken so far
  std::optional<int> rank;
  bool seen[kVariables] = {};  // the first entry of a name counts, as EnvironEntries has it
  ForEachPiece(environ, '\0', [&](std::string_view entry) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos) {
      return;
    }
    for (std::size_t i = 0; i < best; ++i) {
      if (!seen[i] && entry.substr(0, equals) == kRankVariables[i]) {
        seen[i] = true;
        if (std::optional<int> value = NonNegative(entry.substr(equals + 1))) {
          rank = value;
          best = i;
        }
        return;
      }
    }
  });
  return rank;
}

RankIdentity ParseRankIdentity(std::string_view environ) {
  const std::map<std::string_view, std::string_view> env = EnvironEntries(environ);
  RankIdentity identity;
  for (const char* name : kRankVariables) {
    if (std::optional<int> rank = Number(env, name)) {
      identity.rank = rank;
      identity.rank_source = name;
      break;
    }
  }
  identity.local_rank = FirstNumber(
      env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
  identity.world_size =
      FirstNumber(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  identity.node_rank = FirstNumber(env, {"GROUP_RANK", "NODE_RANK", "SLURM_NODEID"});
  identity.local_world_size =
      FirstNumber(env, {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"});
  identity.run_id = Text(env, "TORCHELASTIC_RUN_ID");
  if (const std::string addr = Text(env, "MASTER_ADDR"); !addr.empty()) {
    identity.master = addr;
    if (const std::string port = Text(env, "MASTER_PORT"); !port.empty()) {
      identity.master += ":" + port;
    }
  }
  identity.slurm_job = Text(env, "SLURM_JOB_ID");
  for (const char* name : kDeviceVariables) {
    if (const auto found = env.find(name); found != env.end()) {
      identity.devices.emplace_back(name, std::string(found->second));
    }
  }
  return identity;
}

int RankSourcePriority(const std::string& source) {
  int index = 0;
  for (const char* name : kRankVariables) {
    if (source == name) {
      return index;
    }
    ++index;
  }
  return index;  // "spawn order" and the like: after every variable
}

std::string RankLabel(const std::optional<int>& rank, int pid) {
  std::string label = rank ? "rank " : "pid ";
  label += std::to_string(rank ? *rank : pid);
  return label;
}

}  // namespace trainwatch::collect
