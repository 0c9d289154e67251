#include "cli/slurm_epilog_command.h"

#include <chrono>
#include <cstdlib>

#include "cli/cli_config.h"
#include "core/quantity.h"
#include "ops/incident_log.h"
#include "slurm/job_outcome.h"

namespace trainwatch::cli {
namespace {

constexpr std::chrono::milliseconds kPoll{250};

bool IsSlurmJobId(const std::string& id) {
  return !id.empty() && id.size() <= 32 && id.find_first_not_of("0123456789_") == std::string::npos;
}

}  // namespace

int RunSlurmEpilog(const SlurmEpilogOptions& options, std::ostream& out, std::ostream& err) {
  std::string job = options.job;
  if (job.empty()) {
    const char* from_slurm = std::getenv("SLURM_JOB_ID");
    job = from_slurm != nullptr ? from_slurm : "";
  }
  if (!IsSlurmJobId(job)) {
    err << "trainwatch slurm-epilog: no Slurm job id (--job, or SLURM_JOB_ID as slurmd sets it "
           "for an Epilog)"
        << (job.empty() ? "" : ": '" + job.substr(0, 64) + "' is not one") << "\n";
    return 2;
  }
  const Result<Duration> wait = ParseDuration(options.wait);
  const Result<Duration> settle = ParseDuration(options.settle);
  if (!wait || !settle || *wait > std::chrono::minutes(10) || *settle > *wait) {
    err << "trainwatch slurm-epilog: --wait and --settle are durations (settle <= wait <= 10m), "
           "like 60s and 5s\n";
    return 2;
  }
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    return 2;
  }
  const std::string path = config->state_dir + "/incidents.jsonl";
  const auto start = options.steady_now();
  slurm::JobOutcome outcome;
  while (true) {
    Result<std::string> text = ops::IncidentLog(path).ReadTail();
    if (!text) {
      err << "trainwatch slurm-epilog: " << text.error().message << "\n";
      return 2;
    }
    outcome = slurm::JobOutcomeOf(*text, job);
    if (!config->capture.enabled) {
      outcome.concluded = outcome.found;  // no bundle is ever written
    }
    const auto waited = options.steady_now() - start;
    if ((outcome.found && outcome.concluded) || (!outcome.found && waited >= *settle) ||
        waited >= *wait) {
      break;
    }
    options.pause(kPoll);
  }
  if (!outcome.found) {
    out << "trainwatch: no failure of job " << job << " recorded on this node\n";
    return 0;
  }
  out << "trainwatch: job " << job << ": " << outcome.kind << " incident " << outcome.incident_id
      << ": " << outcome.summary << " (cause " << outcome.cause << ", action " << outcome.action
      << ")\n";
  if (outcome.concluded) {
    out << "trainwatch: bundle " << (outcome.bundle.empty() ? "none" : outcome.bundle) << "\n";
  } else {
    out << "trainwatch: its bundle was not written within " << options.wait << "\n";
  }
  if (!outcome.drained.empty()) {
    out << "trainwatch: " << outcome.drained << "\n";
  }
  if (outcome.node_fault) {
    out << "trainwatch: the node is at fault: failing the Epilog (Slurm drains the node)\n";
    return 1;
  }
  out << "trainwatch: the node is not at fault\n";
  return 0;
}

}  // namespace trainwatch::cli
