#include "core/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/time_format.h"

namespace trainwatch {
namespace {

std::string ToString(spdlog::string_view_t text) { return {text.data(), text.size()}; }

// One JSON object per line. nlohmann does the escaping; the `replace` handler turns bytes
// that are not UTF-8 (a log line quoted from a binary file) into U+FFFD instead of throwing,
// so a message can never make the record invalid JSON.
class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::ordered_json record;
    record["time"] = FormatUtc(msg.time);
    record["level"] = ToString(spdlog::level::to_string_view(msg.level));
    record["message"] = ToString(msg.payload);
    record["logger"] = ToString(msg.logger_name);
    record["pid"] = pid_;
    const std::string line =
        record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

 private:
  long pid_ = static_cast<long>(::getpid());
};

// The syslog priority of a level, as sd-daemon.h's SD_ERR ("<3>") and friends spell it.
int SyslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;  // SD_CRIT
    case spdlog::level::err:
      return 3;  // SD_ERR
    case spdlog::level::warn:
      return 4;  // SD_WARNING
    case spdlog::level::info:
      return 6;  // SD_INFO
    default:
      return 7;  // SD_DEBUG: trace and debug
  }
}

// Prefixes every line of the inner formatter's output with "<N>". journald reads a stream
// line by line, so a multi-line message (a rejected reload lists each config error on its
// own line) needs the prefix on each line, or its continuation lines are filed as info.
class JournalFormatter : public spdlog::formatter {
 public:
  explicit JournalFormatter(std::unique_ptr<spdlog::formatter> inner) : inner_(std::move(inner)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    spdlog::memory_buf_t text;
    inner_->format(msg, text);
    char prefix[8];
    const int prefix_length =
        std::snprintf(prefix, sizeof prefix, "<%d>", SyslogPriority(msg.level));
    bool line_start = true;
    for (const char c : text) {
      if (line_start) {
        dest.append(prefix, prefix + prefix_length);
      }
      dest.push_back(c);
      line_start = c == '\n';
    }
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JournalFormatter>(inner_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format, bool journal) {
  if (format == LogFormat::kJson) {
    // The record keeps its own time even in the journal: it is read as a whole elsewhere.
    std::unique_ptr<spdlog::formatter> json = std::make_unique<JsonFormatter>();
    if (journal) {
      return std::make_unique<JournalFormatter>(std::move(json));
    }
    return json;
  }
  if (journal) {
    // The journal stamps each entry itself; a second timestamp would only crowd the line.
    return std::make_unique<JournalFormatter>(std::make_unique<spdlog::pattern_formatter>("%l %v"));
  }
  return std::make_unique<spdlog::pattern_formatter>("%Y-%m-%d %H:%M:%S.%e %l %v");
}

bool IsJournalStream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) {
    return false;
  }
  std::uintmax_t device = 0;
  std::uintmax_t inode = 0;
  char rest = 0;
  if (std::sscanf(journal_stream, "%" SCNuMAX ":%" SCNuMAX "%c", &device, &inode, &rest) != 2) {
    return false;
  }
  struct stat status {};
  return ::fstat(fd, &status) == 0 && status.st_dev == device && status.st_ino == inode;
}

void SetUpLogging(LogFormat format) {
  // systemd sets JOURNAL_STREAM for a unit whose stderr goes to the journal; checking the
  // descriptor too means a child whose stderr was redirected elsewhere (`2>file`) does not
  // prefix lines that no journal will parse.
  const bool journal = IsJournalStream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  auto logger = std::make_shared<spdlog::logger>("trainwatch",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_formatter(MakeLogFormatter(format, journal));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace trainwatch
