// A temp directory with a daemon config for integration tests: logs/ for the job logs,
// state/ for the daemon, the shipped rule packs plus a test pack with short deadlines (the
// shipped ones wait minutes), and a daemon started on it.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/daemon_process.h"
#include "support/run_binary.h"
#include "support/temp_dir.h"

namespace trainwatch::testing {

struct DaemonSettings {
  std::string settle = "300ms";
  std::string cooldown = "1m";
  std::string follow_up = {};  // empty: the default
  std::string paths = "logs/**/*.log";
  std::string extra_rules = {};  // appended to the test pack
  std::string watch_mode = "auto";
  std::string rescan = "1s";
  // The config's capture section; off unless a test is about bundles (captures cost time).
  std::string capture = "capture: {enabled: false}\n";
  std::string extra_sources = {};  // appended to the sources (entries of the list)
};

class DaemonTest : public ::testing::Test {
 protected:
  std::string Dir(const std::string& name) const { return temp_.PathOf(name); }
  std::string state() const { return Dir("state"); }
  std::string config() const { return Dir("trainwatch.yaml"); }

  void WriteConfig(const DaemonSettings& settings) {
    std::filesystem::create_directories(Dir("logs"));
    std::ofstream(Dir("test-rules.yaml"))
        << "rules:\n"
           "  - id: test.stall\n"
           "    kind: hang\n"
           "    tags: [train]\n"
           "    description: A bar that stops for 3s (the shipped rule waits 10m)\n"
           "    progress: {stall_after: 3s, startup_grace: 60s}\n"
           "  - id: test.silence\n"
           "    kind: hang\n"
           "    tags: [quiet]\n"
           "    description: No output for 3s\n"
           "    silence: {after: 3s}\n"
           "  - id: test.marker\n"
           "    kind: crash\n"
           "    cause: application\n"
           "    action: cancel_retries\n"
           "    tags: [train]\n"
           "    description: A numbered marker line\n"
           "    pattern: 'MARK \\d+ FIRE'\n"
           "    examples: {fires: ['MARK 100 FIRE'], quiet: ['line 100']}\n"
        << settings.extra_rules;
    std::ofstream(config()) << "state_dir: state\n"
                               "rules: [" TRAINWATCH_TEST_RULES_DIR
                               ", test-rules.yaml]\n"
                               "incident: {settle: "
                            << settings.settle << ", cooldown: " << settings.cooldown
                            << (settings.follow_up.empty() ? ""
                                                           : ", follow_up: " + settings.follow_up)
                            << ", context_lines: 5}\n"
                            << "watch: {mode: " << settings.watch_mode
                            << ", poll_interval: 200ms, rescan_interval: " << settings.rescan
                            << "}\n"
                            << settings.capture
                            << "sources:\n"
                               "  - name: train\n"
                               "    tags: [train]\n"
                               "    paths: [\""
                            << settings.paths
                            << "\"]\n"
                               "    start_at: beginning\n"
                               "  - name: quiet\n"
                               "    tags: [quiet]\n"
                               "    paths: [\"quiet/*.log\"]\n"
                            << settings.extra_sources;
  }

  // Whether the daemon hears how processes end (the kernel's process events: root with
  // CAP_NET_ADMIN in the host's network namespace); exit causes are said only then.
  bool HearsExits() const {
    return daemon_ &&
           daemon_->Log().find("following the kernel's process events") != std::string::npos;
  }

  DaemonProcess& StartDaemon(const std::vector<std::string>& env = {}) {
    daemon_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"daemon", "--config", config()}, Dir("daemon.log"), env);
    EXPECT_TRUE(daemon_->WaitReady(state())) << daemon_->Log();
    return *daemon_;
  }

  // The records of the bundles written (or not: their "error"), as incidents.jsonl has them.
  std::vector<Json> BundleRecords() const {
    std::vector<Json> records;
    std::ifstream in(state() + "/incidents.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) {
        break;  // a record still being appended
      }
      Json record = Json::parse(line, nullptr, false);
      if (record.is_object() && record.contains("bundle_for")) {
        records.push_back(std::move(record));
      }
    }
    return records;
  }
  // Whether a bundle file was written for some incident.
  bool SomeBundleWritten() const {
    for (const Json& record : BundleRecords()) {
      if (record["bundle"].is_string()) {
        return true;
      }
    }
    return false;
  }

  // `trainwatch scan` of the logs a live job wrote gives the daemon's answer: one incident, of
  // the same kind, summary, verdict, first failing rank and fingerprint (with the same rules and
  // the config's incident settings).
  void ExpectScanGivesTheSameAnswer(const Json& incident, const std::vector<std::string>& logs) {
    std::vector<std::string> argv = {TrainwatchBinary(),
                                     "scan",
                                     "--rules",
                                     TRAINWATCH_TEST_RULES_DIR,
                                     "--rules",
                                     Dir("test-rules.yaml"),
                                     "--config",
                                     config(),
                                     "--tag",
                                     "train",
                                     "--format",
                                     "jsonl"};
    argv.insert(argv.end(), logs.begin(), logs.end());
    const RunResult scan = RunBinary(argv);
    std::vector<Json> replayed;
    std::istringstream lines(scan.out);
    for (std::string line; std::getline(lines, line);) {
      Json record = Json::parse(line, nullptr, false);
      if (record.is_object() && record.contains("firings")) {
        replayed.push_back(std::move(record));
      }
    }
    ASSERT_EQ(replayed.size(), 1u) << scan.out << scan.err;
    for (const char* key : {"kind", "summary", "cause", "action", "first_failing_rank",
                            "straggler_rank", "fingerprint"}) {
      EXPECT_EQ(replayed[0].value(key, Json()), incident.value(key, Json()))
          << key << " differs: scan's\n"
          << replayed[0].dump(1) << "\nthe daemon's\n"
          << incident.dump(1);
    }
  }

  // Incidents that have `rule` among their rules.
  std::vector<Json> IncidentsOf(const std::string& rule) const {
    std::vector<Json> found;
    for (const Json& incident : ReadIncidents(state())) {
      for (const Json& r : incident["rules"]) {
        if (r == rule) {
          found.push_back(incident);
          break;
        }
      }
    }
    return found;
  }

  TempDir temp_;
  std::unique_ptr<DaemonProcess> daemon_;
};

}  // namespace trainwatch::testing
