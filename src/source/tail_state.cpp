#include "source/tail_state.h"

#include <nlohmann/json.hpp>

#include "core/small_file.h"

namespace trainwatch::source {
namespace {

constexpr int kSchemaVersion = 1;
// An entry is about 200 bytes: room for a hundred thousand followed files.
constexpr std::size_t kMaxStateBytes = 32u << 20;

}  // namespace

Result<LoadedTailState> LoadTailState(const std::string& file, const FileSystem& fs) {
  Result<std::optional<std::string>> text = ReadSmallFile(fs, file, kMaxStateBytes);
  if (!text) {
    return text.error();
  }
  if (!*text) {
    return LoadedTailState{};  // the first start
  }
  LoadedTailState loaded;
  loaded.first_start = false;
  try {
    const nlohmann::json json = nlohmann::json::parse(**text);
    if (json.value("version", 0) != kSchemaVersion) {
      return Error{file + ": unknown state version (expected " + std::to_string(kSchemaVersion) +
                   ")"};
    }
    for (const auto& entry : json.at("tails")) {
      SavedTail tail;
      tail.source = entry.at("source").get<std::string>();
      tail.path = entry.at("path").get<std::string>();
      tail.id.dev = entry.at("dev").get<dev_t>();
      tail.id.ino = entry.at("ino").get<ino_t>();
      tail.fingerprint.length = entry.at("head_bytes").get<std::uint32_t>();
      tail.fingerprint.hash = entry.at("head_hash").get<std::uint64_t>();
      tail.position.offset = entry.at("offset").get<std::uint64_t>();
      tail.position.next_line = entry.at("next_line").get<std::uint64_t>();
      loaded.state.tails.push_back(std::move(tail));
    }
  } catch (const nlohmann::json::exception& error) {
    return Error{file + ": not a trainwatch state file (" + error.what() + ")"};
  }
  return loaded;
}

std::string TailStateText(const TailState& state) {
  nlohmann::json tails = nlohmann::json::array();
  for (const SavedTail& tail : state.tails) {
    tails.push_back({{"source", tail.source},
                     {"path", tail.path},
                     {"dev", tail.id.dev},
                     {"ino", tail.id.ino},
                     {"head_bytes", tail.fingerprint.length},
                     {"head_hash", tail.fingerprint.hash},
                     {"offset", tail.position.offset},
                     {"next_line", tail.position.next_line}});
  }
  return nlohmann::json{{"version", kSchemaVersion}, {"tails", std::move(tails)}}.dump() + "\n";
}

Status SaveTailState(const std::string& file, const TailState& state, const FileSystem& fs) {
  // Atomic against a kill -9 of the daemon, which is what the offsets must survive; after a
  // power loss the training job's own log is gone too.
  return fs.ReplaceWhole(file, TailStateText(state), 0600);
}

}  // namespace trainwatch::source
