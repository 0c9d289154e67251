// Daemon logging: lines on stderr, which systemd's journal and container runtimes collect;
// flushed per line so a crash of the daemon itself loses none. Human lines or one JSON object
// per line; under the journal each line starts with its syslog priority ("<3>"), which
// journald strips and files the entry under. Set up once by main(), before any thread runs.
#pragma once

#include <memory>

namespace spdlog {
class formatter;
}

namespace trainwatch {

enum class LogFormat { kHuman, kJson };

// Makes the default logger ("trainwatch") write to stderr in `format`. Calling it again
// replaces that logger.
void SetUpLogging(LogFormat format = LogFormat::kHuman);

// The formatter SetUpLogging installs; `journal`: stderr is connected to the journal.
// kHuman: "2024-05-01 12:00:00.123 info message" (local time), or "<6>info message" for the
// journal, which stamps each entry itself. kJson: {"time": "2024-05-01T12:00:00.123Z",
// "level": "info", "message": "...", "logger": "trainwatch", "pid": 42}.
std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format, bool journal);

// Whether `fd` is the stream systemd connected to the journal: `journal_stream` (the value
// of $JOURNAL_STREAM, may be null) names its device and inode as "DEV:INO".
bool IsJournalStream(int fd, const char* journal_stream);

}  // namespace trainwatch
