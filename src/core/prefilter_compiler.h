// Compiling a prefilter database (core/multi_regex.h), in this process or in a helper process.
// Hyperscan's compiler needs megabytes of code and scratch for a moment; a process that stays
// up for months (the daemon) hands that moment to a short-lived helper — its own binary run
// as `trainwatch compile-prefilter` — so its memory never holds the compiler and its first
// start peaks no higher than a start that loads the compiled rules from the cache. The helper
// reads the expressions on stdin and writes the serialized database, or the compiler's error,
// on stdout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/hyperscan_handles.h"

namespace trainwatch {

struct PrefilterCompileRequest {
  std::vector<const char*> expressions;
  std::vector<unsigned> flags;
  std::vector<unsigned> ids;
};

struct PrefilterCompileResult {
  HsDatabase database;     // null when the compile failed
  int failed_index = -1;   // the expression the compiler refused, or -1 when not one's fault
  std::string message;     // the compiler's error
  std::string serialized;  // the database as the helper wrote it (empty when compiled here)
};

// The process-wide choice, made once at start (the daemon) before any compile: `command`
// (the helper's argv, e.g. {"/proc/self/exe", "compile-prefilter"}) runs each compile; empty
// (the default): compile in this process. A helper that cannot run, crashes, answers
// nonsense or is still at work past `deadline` (it is killed then) costs the memory it was to
// save, not the prefilter: the compile is done here then, with a warning in the log. After a
// helper missed its deadline, later compiles are done here too (a start compiles one set per
// source, and the whole start must stay within systemd's 90 s TimeoutStartSec).
void CompilePrefiltersWith(std::vector<std::string> command,
                           std::chrono::milliseconds deadline = std::chrono::seconds(30));

// Compiles in block mode, in the helper when one is set and `in_helper`. Any thread.
PrefilterCompileResult CompilePrefilter(const PrefilterCompileRequest& request,
                                        bool in_helper = true);

// The helper's side: reads one request from `in_fd` until end of file, compiles it, writes the
// answer to `out_fd`. Returns the process's exit code: 0 when the answer (a database or the
// compiler's error) was written, 1 for a request it cannot read (a message on stderr).
int RunPrefilterCompilerHelper(int in_fd, int out_fd);

// The wire format, exposed for tests.
std::string EncodePrefilterRequest(const PrefilterCompileRequest& request);

}  // namespace trainwatch
