// Every shipped rule pack loads cleanly, every rule's examples behave, and every pattern
// takes the fast path: the same checks `trainwatch check` runs, kept true by the build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "detect/example_checker.h"
#include "rules/compiled_rules.h"
#include "rules/rule_loader.h"
#include "rules/source_rules.h"

namespace trainwatch::cli {
namespace {

namespace fs = std::filesystem;

rules::LoadedRules LoadShipped() { return rules::LoadRulePaths({TRAINWATCH_TEST_RULES_DIR}); }

TEST(ShippedRules, EveryPackLoadsWithoutErrors) {
  const auto loaded = LoadShipped();
  for (const auto& error : loaded.errors) {
    ADD_FAILURE() << FormatDiagnostic(error);
  }
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(TRAINWATCH_TEST_RULES_DIR)) {
    if (entry.path().extension() == ".yaml") {
      files.insert(entry.path().string());
    }
  }
  EXPECT_EQ(std::set<std::string>(loaded.files.begin(), loaded.files.end()), files);
  for (const std::string pack : {"python", "pytorch", "habana", "nvidia", "ascend", "system"}) {
    EXPECT_TRUE(files.contains(std::string(TRAINWATCH_TEST_RULES_DIR) + "/" + pack + ".yaml"))
        << pack;
  }
  EXPECT_GE(loaded.rules.size(), 50u);
}

TEST(ShippedRules, EveryExampleBehaves) {
  const auto loaded = LoadShipped();
  ASSERT_TRUE(loaded.errors.empty());
  std::vector<Diagnostic> notes;
  for (const auto& problem : detect::CheckExamples(loaded.rules, &notes)) {
    ADD_FAILURE() << FormatDiagnostic(problem);
  }
  for (const auto& rule : loaded.rules) {
    if (rule.MatchesLines()) {
      EXPECT_FALSE(rule.fires.empty()) << rule.id;
      EXPECT_FALSE(rule.quiet.empty()) << rule.id;
    }
  }
}

TEST(ShippedRules, EveryPatternTakesTheFastPath) {
  const auto loaded = LoadShipped();
  std::set<std::string> tags;
  for (const auto& rule : loaded.rules) {
    tags.insert(rule.tags.begin(), rule.tags.end());
  }
  for (const std::string& tag : tags) {
    std::vector<Diagnostic> notes;
    auto compiled = rules::CompiledRules::Build(loaded.rules, {tag}, &notes);
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    for (const auto& note : notes) {
      ADD_FAILURE() << FormatDiagnostic(note);
    }
  }
}

TEST(ShippedRules, NoSilenceUndercutsAStartupGrace) {
  // A silent graph compile that the progress grace forgives must not be a silence hang.
  const auto loaded = LoadShipped();
  std::set<std::string> tags;
  for (const auto& rule : loaded.rules) {
    tags.insert(rule.tags.begin(), rule.tags.end());
  }
  for (const std::string& tag : tags) {
    std::vector<Diagnostic> notes;
    auto built = rules::BuildSourceRules(loaded.rules, {tag}, tag, "", notes);
    ASSERT_TRUE(built.ok()) << built.error().message;
    for (const auto& warning : rules::SilenceWithinGrace(*built, tag)) {
      ADD_FAILURE() << FormatDiagnostic(warning);
    }
  }
}

TEST(ShippedRules, ReadmeDocumentsEveryPackAndDetector) {
  std::ifstream in(std::string(TRAINWATCH_TEST_RULES_DIR) + "/README.md");
  ASSERT_TRUE(in) << "rules/README.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  for (const std::string word :
       {"python.yaml", "pytorch.yaml", "habana.yaml", "nvidia.yaml", "ascend.yaml", "system.yaml",
        "hangs.yaml", "pattern:", "unless:", "multiline:", "threshold:", "progress:", "silence:",
        "exit:", "examples:"}) {
    EXPECT_NE(text.str().find(word), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace trainwatch::cli
