#include "source/tail_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/unique_fd.h"

namespace trainwatch::source {
namespace {

constexpr int kSchemaVersion = 1;

Status WriteAll(int fd, std::string_view data, const std::string& file) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Error{file + ": " + std::strerror(errno)};
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Result<LoadedTailState> LoadTailState(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    if (errno == ENOENT) {
      return LoadedTailState{};
    }
    return Error{file + ": " + std::strerror(errno)};
  }
  std::stringstream text;
  text << in.rdbuf();
  LoadedTailState loaded;
  loaded.first_start = false;
  try {
    const nlohmann::json json = nlohmann::json::parse(text.str());
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

Status SaveTailState(const std::string& file, const TailState& state) {
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
  const std::string text =
      nlohmann::json{{"version", kSchemaVersion}, {"tails", std::move(tails)}}.dump() + "\n";
  // No fsync: the rename is atomic against a crash of this process (kill -9), which is what
  // the state must survive; after a power loss the journal of the training job is gone too.
  const std::string temporary = file + ".tmp";
  {
    UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
      return Error{temporary + ": " + std::strerror(errno)};
    }
    if (Status written = WriteAll(fd.get(), text, temporary); !written) {
      return written;
    }
  }
  if (::rename(temporary.c_str(), file.c_str()) != 0) {
    return Error{file + ": " + std::strerror(errno)};
  }
  return Status::Ok();
}

}  // namespace trainwatch::source
