#include "config/yaml_reader.h"

#include <gtest/gtest.h>

namespace trainwatch::config {
namespace {

TEST(YamlReader, ReportsTypedFieldProblemsWithLocations) {
  std::vector<Diagnostic> errors;
  YamlReader reader("c.yaml", errors);
  const YAML::Node root = reader.ParseDocument("after: 30\nname:\nlist: [a, b]\nextra: 1\n");
  ASSERT_TRUE(root.IsMap());
  reader.CheckKeys(root, {"after", "name", "list"}, "the config");
  EXPECT_FALSE(reader.DurationField(root["after"], "after").has_value());
  EXPECT_FALSE(reader.Scalar(root["name"], "name").has_value());
  EXPECT_FALSE(reader.Scalar(root["list"], "list").has_value());
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(FormatDiagnostic(errors[0]).substr(0, 33), "c.yaml:4:1: unknown key 'extra' i");
  EXPECT_EQ(FormatDiagnostic(errors[1]),
            "c.yaml:1:8: after: duration '30' needs a unit: ms, s, m, h or d (e.g. 30s, 10m)");
  EXPECT_EQ(FormatDiagnostic(errors[2]), "c.yaml:2:1: name has no value");
  EXPECT_EQ(FormatDiagnostic(errors[3]), "c.yaml:3:7: list must be a single value");
}

// yaml-cpp 0.7's LoadAll loops forever on these (found by tests/fuzz/rule_loader_fuzz): a bad
// rule or config file must get a message, not hang `check` or a reload.
TEST(YamlReader, ACommaStartingADocumentIsAnErrorNotAHang) {
  for (const char* text : {",a", "# comment\n  ,a\n", "a: 1\n...\n,a", "a: 1\n---\n# c\n,a",
                           "--- ,a", "%YAML 1.2\n---\n,a", "\xEF\xBB\xBF,a"}) {
    std::vector<Diagnostic> errors;
    YamlReader reader("c.yaml", errors);
    reader.ParseDocument(text);
    ASSERT_FALSE(errors.empty()) << text;
    EXPECT_NE(errors[0].message.find("malformed YAML"), std::string::npos) << text;
  }
  {
    // The same loop after a block: not at a document's start, so LoadAll is not used at all.
    std::vector<Diagnostic> errors;
    YamlReader reader("c.yaml", errors);
    reader.ParseDocument("    kind: hang\n  , S");
  }
  std::vector<Diagnostic> errors;
  YamlReader reader("c.yaml", errors);
  EXPECT_TRUE(reader.ParseDocument("a: [1\n, 2]\nb: x,y\n").IsMap());
  EXPECT_TRUE(errors.empty());
  reader.ParseDocument("# c\n,a\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(FormatDiagnostic(errors[0]).substr(0, 10), "c.yaml:2:1");
}

TEST(YamlReader, OneDocumentPerFile) {
  std::vector<Diagnostic> errors;
  YamlReader reader("c.yaml", errors);
  EXPECT_TRUE(reader.ParseDocument("a: 1\n---\n# trailing\n").IsMap());
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(reader.ParseDocument("a: 1\n---\nb: 2\n").IsMap());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].where.line, 3);
  EXPECT_TRUE(reader.ParseDocument("a: [1,\n").IsNull());
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[1].message.find("malformed YAML"), std::string::npos);
  EXPECT_TRUE(reader.ParseDocument("").IsNull());
  EXPECT_EQ(errors.size(), 2u);  // empty is the caller's to judge
}

}  // namespace
}  // namespace trainwatch::config
