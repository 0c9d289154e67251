#include "config/capture_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/daemon_config.h"

namespace trainwatch::config {
namespace {

EnvLookup Env() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") {
      return "/home/u";
    }
    return std::nullopt;
  };
}

std::string Errors(const ConfigLoad& load) {
  std::string text;
  for (const Diagnostic& error : load.errors) {
    text += FormatDiagnostic(error) + "\n";
  }
  return text;
}

TEST(CaptureConfig, DefaultsWithoutASection) {
  ConfigLoad load = ParseDaemonConfig("state_dir: /var/lib/tw\n", "/etc/tw.yaml", Env());
  ASSERT_TRUE(load.config) << Errors(load);
  const CaptureConfig& capture = load.config->capture;
  EXPECT_TRUE(capture.enabled);
  EXPECT_EQ(capture.bundles_dir, "/var/lib/tw/bundles");
  EXPECT_EQ(capture.habana_logs, "/home/u/.habana_logs");
  EXPECT_EQ(capture.max_count, 20u);
  EXPECT_EQ(capture.commands.size(), DefaultCommands().size());
}

TEST(CaptureConfig, ParsesEveryKey) {
  ConfigLoad load = ParseDaemonConfig(
      "state_dir: /s\n"
      "capture:\n"
      "  bundles_dir: bundles\n"
      "  max_count: 7\n"
      "  max_bytes: 1GiB\n"
      "  min_free: 10GiB\n"
      "  log_tail_bytes: 1MiB\n"
      "  habana_logs: /h\n"
      "  extra_paths: [model.yaml]\n"
      "  process_pattern: 'python.*train'\n"
      "  redact: {names: ['*_DSN'], patterns: ['corp-[0-9]+']}\n"
      "  stop_grace: 5s\n"
      "  max_ranks: 8\n"
      "  commands:\n"
      "    - {name: smi, argv: [smi, -q], as: device/smi.txt, timeout: 3s, keep: tail,\n"
      "       max_output_bytes: 1KiB, when: [hang]}\n",
      "/etc/tw/tw.yaml", Env());
  ASSERT_TRUE(load.config) << Errors(load);
  const CaptureConfig& capture = load.config->capture;
  EXPECT_EQ(capture.bundles_dir, "/etc/tw/bundles");
  EXPECT_EQ(capture.max_count, 7u);
  EXPECT_EQ(capture.max_bytes, 1ull << 30);
  EXPECT_EQ(capture.min_free_bytes, 10ull << 30);
  EXPECT_EQ(capture.min_free_percent, 0);
  EXPECT_EQ(capture.extra_paths, std::vector<std::string>{"/etc/tw/model.yaml"});
  EXPECT_EQ(capture.redact_names, std::vector<std::string>{"*_DSN"});
  EXPECT_EQ(capture.stop_grace, std::chrono::seconds(5));
  EXPECT_EQ(capture.max_ranks, 8u);
  ASSERT_EQ(capture.commands.size(), 1u);
  const CommandConfig& command = capture.commands[0];
  EXPECT_EQ(command.argv, (std::vector<std::string>{"smi", "-q"}));
  EXPECT_EQ(command.timeout, std::chrono::seconds(3));
  EXPECT_TRUE(command.keep_tail);
  EXPECT_EQ(command.max_output_bytes, 1024u);
  EXPECT_TRUE(command.when.hang);
  EXPECT_FALSE(command.when.crash);
}

TEST(CaptureConfig, ReportsProblemsAtTheirPosition) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"capture: {max_count: 0}\n", "1:22: capture max_count must be a whole number"},
      {"capture: {min_free: 95%}\n", "1:21: capture min_free must be a size"},
      {"capture: {bogus: 1}\n", "1:11: unknown key 'bogus' in capture"},
      {"capture:\n  commands:\n    - {name: x, as: /etc/x}\n",
       "3:7: a command collector needs argv"},
      {"capture:\n  commands:\n    - {name: x, argv: [x], when: [sometimes]}\n",
       "3:35: unknown incident kind 'sometimes'"},
      {"capture: {process_pattern: 'train(.py'}\n",
       "1:28: capture process_pattern: missing ): train(.py"},
      {"capture: {stop_grace: 1m}\n", "1:23: capture stop_grace must be at most 25s"},
      {"capture: {max_ranks: 0}\n", "1:22: capture max_ranks must be a whole number from 1"},
      {"capture: {max_ranks: +8}\n", "1:22: capture max_ranks must be a whole number from 1"},
      {"capture: {redact: x}\n", "1:19: 'capture redact' must be a mapping {names: "},
      // A quoted empty name is a value, not a missing one: checked like any other name.
      {"capture:\n  commands:\n    - {name: \"\", argv: [x]}\n",
       "3:14: command name '' must be letters, digits, '.', '_' or '-', starting with a letter "
       "or digit"},
  };
  for (const auto& [text, expected] : cases) {
    ConfigLoad load = ParseDaemonConfig(text, "c.yaml", Env());
    EXPECT_FALSE(load.config) << text;
    EXPECT_NE(Errors(load).find("c.yaml:" + expected), std::string::npos)
        << text << "\n  got: " << Errors(load);
  }
}

// The shipped config lists the default collectors for operators to edit: the list a config
// without `commands` gets must be the same.
TEST(CaptureConfig, TheShippedConfigListsTheDefaultCommands) {
  const std::string path = std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/../daemon/trainwatch.yaml";
  ConfigLoad load = LoadDaemonConfig(path, Env());
  ASSERT_TRUE(load.config) << Errors(load);
  const std::vector<CommandConfig> shipped = load.config->capture.commands;
  const std::vector<CommandConfig> defaults = DefaultCommands();
  ASSERT_EQ(shipped.size(), defaults.size());
  for (std::size_t i = 0; i < shipped.size(); ++i) {
    EXPECT_EQ(shipped[i].name, defaults[i].name);
    EXPECT_EQ(shipped[i].argv, defaults[i].argv) << shipped[i].name;
    EXPECT_EQ(shipped[i].as, defaults[i].as) << shipped[i].name;
    EXPECT_EQ(shipped[i].timeout, defaults[i].timeout) << shipped[i].name;
    EXPECT_EQ(shipped[i].keep_tail, defaults[i].keep_tail) << shipped[i].name;
    EXPECT_EQ(shipped[i].max_output_bytes, defaults[i].max_output_bytes) << shipped[i].name;
    EXPECT_TRUE(shipped[i].when == defaults[i].when) << shipped[i].name;  // every incident kind
  }
}

}  // namespace
}  // namespace trainwatch::config
