// Runs the real binary over every case of the shared corpus of real training logs (see
// ../shared/corpus/README.md): every failure case must fire a crash, hang or device rule at
// or before its trigger line + 30; every `expect: none` case and every silent hang must
// produce no such event. A `diverged` event (a loss that stays NaN: the run goes on) is none of
// those kinds; a `loss_nan` case must have one. Skips with a message when ../shared is absent (a
// user's checkout).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/run_binary.h"

namespace trainwatch {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kTriggerSlack = 30;

fs::path CorpusDir() { return fs::path(TRAINWATCH_TEST_SHARED_DIR) / "corpus"; }

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(CorpusDir(), ec)) {
    if (fs::exists(entry.path() / "case.yaml")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    names.push_back("(no corpus)");
  }
  return names;
}

class CorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusTest, FiresOnFailuresAndStaysQuietOnHealthyLogs) {
  if (!fs::is_directory(CorpusDir())) {
    GTEST_SKIP() << "no corpus at " << CorpusDir()
                 << ": the shared/ folder sits beside the checkout only in development and CI";
  }
  const fs::path dir = CorpusDir() / GetParam();
  const YAML::Node spec = YAML::LoadFile((dir / "case.yaml").string());
  const bool expect_trigger = spec["expect"].as<std::string>() == "trigger";
  const bool silent =
      spec["notes"] && spec["notes"].as<std::string>().find("SILENT") != std::string::npos;
  std::uint64_t trigger_line = 0;
  std::string trigger_file;
  if (expect_trigger) {
    trigger_line = spec["trigger_line"]["line"].as<std::uint64_t>();
    trigger_file = spec["trigger_line"]["file"].as<std::string>();
  }

  const bool loss_nan = spec["class"] && spec["class"].as<std::string>() == "loss_nan";
  std::uint64_t first_alarm = 0;
  std::string fired_rules;
  std::string diverged;
  for (const auto& file_node : spec["files"]) {
    const std::string file = file_node.as<std::string>();
    const std::string tag = file == "kmsg.log" ? "kmsg" : "train";
    const auto run = testing::RunBinary({testing::TrainwatchBinary(), "scan", "--rules",
                                         TRAINWATCH_TEST_RULES_DIR, "--tag", tag, "--format",
                                         "jsonl", (dir / file).string()});
    ASSERT_FALSE(run.timed_out);
    ASSERT_NE(run.exit_code, 2) << run.err;
    std::istringstream lines(run.out);
    std::string line;
    bool alarm_in_file = false;
    while (std::getline(lines, line)) {
      const auto event = nlohmann::json::parse(line);
      // An incident record (scan's answer after the events) or a warning: no alarm line.
      if (!event.contains("file") || event["kind"] == "warning") {
        continue;
      }
      alarm_in_file = true;
      if (event["kind"] == "diverged") {
        diverged += event["rule"].get<std::string>() + "@" + file + ":" +
                    std::to_string(event["line"].get<std::uint64_t>()) + " ";
        continue;
      }
      fired_rules += event["rule"].get<std::string>() + "@" + file + ":" +
                     std::to_string(event["line"].get<std::uint64_t>()) + " ";
      if (file == trigger_file) {
        const auto at = event["line"].get<std::uint64_t>();
        first_alarm = first_alarm == 0 ? at : std::min(first_alarm, at);
      }
    }
    EXPECT_EQ(run.exit_code, alarm_in_file ? 1 : 0);
  }

  EXPECT_EQ(!diverged.empty(), loss_nan)
      << (loss_nan ? "no diverged event on a loss that goes NaN" : "diverged: " + diverged);
  if (!expect_trigger || silent) {
    EXPECT_TRUE(fired_rules.empty()) << "false alarm: " << fired_rules;
    return;
  }
  ASSERT_NE(first_alarm, 0u) << "no crash, hang or device rule fired; trigger is " << trigger_file
                             << ":" << trigger_line;
  EXPECT_LE(first_alarm, trigger_line + kTriggerSlack) << fired_rules;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name;
                           for (char c : param_info.param) {
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace trainwatch
