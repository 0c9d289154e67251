#include "config/path_expand.h"

#include <gtest/gtest.h>

#include <map>

namespace trainwatch::config {
namespace {

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

const EnvLookup kEnv = MapEnv({{"HOME", "/home/ada"}, {"LOGS", "/data/logs"}, {"EMPTY", ""}});

TEST(ExpandPath, Expands) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"/plain/path", "/plain/path"},
      {"", ""},
      {"~", "/home/ada"},
      {"~/x/y", "/home/ada/x/y"},
      {"/a/~/b", "/a/~/b"},  // '~' is special only at the start
      {"${LOGS}/*.log", "/data/logs/*.log"},
      {"${LOGS:-/fallback}", "/data/logs"},
      {"${NOPE:-/fallback}/x", "/fallback/x"},
      {"${EMPTY:-/fallback}", "/fallback"},  // empty counts as unset with :-
      {"/a${EMPTY}/b", "/a/b"},              // but plain ${VAR} inserts the empty value
      {"${NOPE:-~/logs}/**/*.log", "/home/ada/logs/**/*.log"},
      {"${NOPE:-${LOGS}/sub}", "/data/logs/sub"},
      {"${NOPE:-${ALSO_NOPE:-/deep}}", "/deep"},
      {"${LOGS:-${UNSET_BUT_UNUSED}}", "/data/logs"},  // an unused default is not expanded
      {"${NOPE:-}", ""},
      {"/cost$$/x", "/cost$/x"},
      {"/a/$${LOGS}", "/a/${LOGS}"},
      {"/logs/wrap-{pid}.log", "/logs/wrap-{pid}.log"},
      {"${NOPE:-/a:-b}", "/a:-b"},
  };
  for (const Case& c : cases) {
    const auto result = ExpandPath(c.text, kEnv);
    ASSERT_TRUE(result.ok()) << c.text << ": " << result.error().message;
    EXPECT_EQ(*result, c.expected) << c.text;
  }
}

TEST(ExpandPath, ValuesAreNotExpandedAgain) {
  const auto result = ExpandPath("${V}", MapEnv({{"V", "~/${X}$$"}}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "~/${X}$$");
}

TEST(ExpandPath, Errors) {
  struct Case {
    std::string text;
    std::string expected;  // the message starts with this
  };
  const std::vector<Case> cases = {
      {"${NOPE}/x", "environment variable 'NOPE' is not set (give a default: ${NOPE:-...})"},
      {"${NOPE:-${INNER}}", "environment variable 'INNER' is not set"},
      {"/a/${LOGS", "unterminated '${'"},
      {"${NOPE:-${X:-y}", "unterminated '${'"},
      {"$LOGS/x", "a '$' must start ${NAME}"},
      {"/x/$", "a '$' must start ${NAME}"},
      {"${}", "'${}' does not name a variable"},
      {"${1X}", "'${1X}' does not name a variable"},
      {"${A-b}", "'${A-b}' does not name a variable"},
      {"~bob/x", "'~user' is not supported"},
  };
  for (const Case& c : cases) {
    const auto result = ExpandPath(c.text, kEnv);
    ASSERT_FALSE(result.ok()) << c.text << " expanded to " << *result;
    EXPECT_TRUE(result.error().message.starts_with(c.expected))
        << c.text << "\n  got:      " << result.error().message << "\n  expected: " << c.expected;
  }
}

TEST(ExpandPath, TildeNeedsHome) {
  EXPECT_FALSE(ExpandPath("~/x", MapEnv({})).ok());
  EXPECT_FALSE(ExpandPath("~/x", MapEnv({{"HOME", ""}})).ok());
  EXPECT_FALSE(ExpandPath("${NOPE:-~/x}", MapEnv({})).ok());
  EXPECT_TRUE(ExpandPath("/no/tilde", MapEnv({})).ok());
}

TEST(ExpandPath, ProcessEnvReadsTheEnvironment) {
  ::setenv("TRAINWATCH_PATH_EXPAND_TEST", "/from/env", 1);
  ::unsetenv("TRAINWATCH_PATH_EXPAND_UNSET");
  const EnvLookup env = ProcessEnv();
  EXPECT_EQ(env("TRAINWATCH_PATH_EXPAND_TEST"), std::optional<std::string>("/from/env"));
  EXPECT_EQ(env("TRAINWATCH_PATH_EXPAND_UNSET"), std::nullopt);
  const auto result = ExpandPath("${TRAINWATCH_PATH_EXPAND_TEST}/x", env);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "/from/env/x");
}

}  // namespace
}  // namespace trainwatch::config
