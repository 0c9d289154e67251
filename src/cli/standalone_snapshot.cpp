#include "cli/standalone_snapshot.h"

#include <uv.h>

#include <chrono>
#include <filesystem>

#include "capture/capturer.h"
#include "core/posix_env.h"
#include "core/quantity.h"
#include "detect/incident_builder.h"
#include "source/glob.h"

namespace trainwatch::cli {

int RunStandaloneSnapshot(const config::DaemonConfig& config, const ControlOptions& options,
                          std::ostream& out, std::ostream& err) {
  config::CaptureConfig capture = config.capture;
  if (!options.out_dir.empty()) {
    capture.bundles_dir = std::filesystem::absolute(options.out_dir).lexically_normal().string();
  }
  // Checked here, to fail before anything is captured (RE2 alone: the capture builds its own
  // redactor with the prefilter).
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create(
      {capture.redact_names, capture.redact_patterns}, collect::RedactorMatching::kRe2Only);
  if (!redactor) {
    err << "trainwatch snapshot: capture redact: " << redactor.error().message << "\n";
    return 2;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto env = std::make_unique<PosixEnv>(&loop);
  capture::CaptureRequest request;
  detect::IncidentBuilder builder({});
  request.incident = builder.Manual(options.reason, env->WallNow());
  request.reason = options.reason;
  request.container = options.container;
  request.extra_paths = options.copy;
  request.pause_ranks = options.stacks;
  request.extra_logs = options.logs;
  // The logs the config watches, as the daemon would have them.
  for (const config::SourceConfig& source : config.sources) {
    for (const std::string& pattern : source.paths) {
      for (std::string& file : source::ExpandGlob(pattern)) {
        request.log_files.push_back(std::move(file));
      }
      request.watched_dirs.push_back(source::LiteralDirOf(pattern));
    }
  }
  capture::CaptureOutcome result;
  {
    capture::Capturer capturer(*env, capture);
    capturer.Capture(std::move(request),
                     [&](const capture::CaptureOutcome& outcome) { result = outcome; });
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the handles the capturer closed
  uv_loop_close(&loop);
  for (const std::string& name : result.timed_out) {
    err << "trainwatch snapshot: " << name << " was killed at its deadline\n";
  }
  if (result.path.empty()) {
    err << "trainwatch snapshot: no bundle: " << result.error << "\n";
    return 1;
  }
  if (result.reduced) {
    err << "trainwatch snapshot: reduced bundle: " << result.error << "\n";
  }
  out << "bundle " << result.path << " (" << FormatByteSize(result.bytes) << ", "
      << static_cast<int>(result.capture_seconds * 1000) << " ms)\n";
  return 0;
}

}  // namespace trainwatch::cli
