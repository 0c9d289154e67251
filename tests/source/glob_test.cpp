#include "source/glob.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace trainwatch::source {
namespace {

namespace fs = std::filesystem;

class GlobTest : public ::testing::Test {
 protected:
  // Creates `relative` (and its parent directories) as a small file.
  void File(const std::string& relative) {
    fs::create_directories((temp_.path() / relative).parent_path());
    temp_.Write(relative, "x\n");
  }
  void Dir(const std::string& relative) { fs::create_directories(temp_.path() / relative); }
  std::string Root() const { return temp_.path().string(); }
  std::string P(const std::string& relative) const { return temp_.PathOf(relative); }
  // ExpandGlob(root + "/" + pattern), answered relative to the root for readable asserts.
  std::vector<std::string> Expand(const std::string& pattern) const {
    std::vector<std::string> out;
    for (const std::string& path : ExpandGlob(P(pattern))) {
      EXPECT_TRUE(path.starts_with(Root() + "/")) << path;
      out.push_back(path.substr(Root().size() + 1));
    }
    return out;
  }
  std::vector<std::string> WatchDirs(const std::string& pattern) const {
    std::vector<std::string> out;
    for (const std::string& path : GlobWatchDirs(P(pattern))) {
      out.push_back(path == Root() ? "." : path.substr(Root().size() + 1));
    }
    return out;
  }

  trainwatch::testing::TempDir temp_;
};

using Paths = std::vector<std::string>;

TEST_F(GlobTest, MatchesWildcardsAndNestedDirectories) {
  for (const char* file : {"a.log", "b.txt", "x/c.log", "x/y/d.log", "x/y/z/e.log", ".hidden/f.log",
                           "x/.g.log", "x/.cache/h.log", "run[1].log"}) {
    File(file);
  }
  Dir("dir.log");  // a directory is never a match
  EXPECT_EQ(Expand("*.log"), (Paths{"a.log", "run[1].log"}));
  EXPECT_EQ(Expand("**/*.log"),
            (Paths{"a.log", "run[1].log", "x/c.log", "x/y/d.log", "x/y/z/e.log"}));
  EXPECT_EQ(Expand("x/**/*.log"), (Paths{"x/c.log", "x/y/d.log", "x/y/z/e.log"}));
  EXPECT_EQ(Expand("*/*.log"), (Paths{"x/c.log"}));
  EXPECT_EQ(Expand("x/?/*.log"), (Paths{"x/y/d.log"}));
  EXPECT_EQ(Expand("[ab].*"), (Paths{"a.log", "b.txt"}));
  EXPECT_EQ(Expand("**/y/**/*.log"), (Paths{"x/y/d.log", "x/y/z/e.log"}));
  EXPECT_EQ(Expand("x/**"), (Paths{"x/c.log", "x/y/d.log", "x/y/z/e.log"}));
  EXPECT_EQ(Expand("**/**/d.log"), (Paths{"x/y/d.log"}));
  // Hidden names need a pattern that spells the dot.
  EXPECT_EQ(Expand(".hidden/*.log"), (Paths{".hidden/f.log"}));
  EXPECT_EQ(Expand("x/.*.log"), (Paths{"x/.g.log"}));
  EXPECT_EQ(Expand("**/.g.log"), (Paths{"x/.g.log"}));
  EXPECT_EQ(Expand("x/.cache/**/*.log"), (Paths{"x/.cache/h.log"}));
  // Backslash escapes a bracket, in a literal and in a wildcard component.
  EXPECT_EQ(Expand("run\\[1\\].log"), (Paths{"run[1].log"}));
  EXPECT_EQ(Expand("run\\[1\\]*"), (Paths{"run[1].log"}));
  EXPECT_EQ(Expand("run[1].log"), (Paths{}));  // [1] is a class: it matches "run1.log"
}

TEST_F(GlobTest, APatternWithoutWildcardsNamesOneFile) {
  File("logs/train.log");
  EXPECT_EQ(Expand("logs/train.log"), (Paths{"logs/train.log"}));
  EXPECT_EQ(Expand("logs//./train.log"), (Paths{"logs/./train.log"}));
  EXPECT_EQ(Expand("logs/missing.log"), (Paths{}));
  EXPECT_EQ(Expand("logs"), (Paths{}));  // a directory
  EXPECT_EQ(WatchDirs("logs/train.log"), (Paths{"logs"}));
}

TEST_F(GlobTest, SeesFilesAndDirectoriesThatAppear) {
  EXPECT_EQ(Expand("runs/**/*.log"), (Paths{}));
  File("runs/1/train.log");
  EXPECT_EQ(Expand("runs/**/*.log"), (Paths{"runs/1/train.log"}));
  File("runs/2/deep/er/rank0.log");
  File("runs/1/train.log.1");
  EXPECT_EQ(Expand("runs/**/*.log"), (Paths{"runs/1/train.log", "runs/2/deep/er/rank0.log"}));
}

TEST_F(GlobTest, GlobstarDoesNotFollowSymlinkedDirectories) {
  File("a.log");
  File("sub/b.log");
  fs::create_directory_symlink(Root(), P("loop"));     // would loop forever
  fs::create_directory_symlink(P("sub"), P("alias"));  // would duplicate sub
  fs::create_symlink(P("a.log"), P("link.log"));
  fs::create_symlink(P("nowhere"), P("dangling.log"));
  EXPECT_EQ(Expand("**/*.log"), (Paths{"a.log", "link.log", "sub/b.log"}));
  // A named or single-level wildcard component does follow a link.
  EXPECT_EQ(Expand("loop/*.log"), (Paths{"loop/a.log", "loop/link.log"}));
  EXPECT_EQ(Expand("*/b.log"), (Paths{"alias/b.log", "sub/b.log"}));
  EXPECT_EQ(WatchDirs("**/*.log"), (Paths{".", "sub"}));
}

TEST_F(GlobTest, GlobstarStopsSixteenLevelsDown) {
  std::string sixteen;
  for (int level = 1; level <= 16; ++level) {
    // Appended piece by piece: GCC 12 warns falsely on `"d" + to_string(n)` here (PR 105329).
    sixteen += 'd';
    sixteen += std::to_string(level);
    sixteen += '/';
  }
  File(sixteen + "deep.log");
  File(sixteen + "d17/deeper.log");
  EXPECT_EQ(Expand("**/*.log"), (Paths{sixteen + "deep.log"}));
  EXPECT_TRUE(GlobMatches(P("**/*.log"), P(sixteen + "deep.log")));
  EXPECT_FALSE(GlobMatches(P("**/*.log"), P(sixteen + "d17/deeper.log")));
}

TEST_F(GlobTest, MissingAndUnreadableDirectoriesAreSkipped) {
  File("ok/a.log");
  File("locked/b.log");
  EXPECT_EQ(Expand("missing/**/*.log"), (Paths{}));
  ::chmod(P("locked").c_str(), 0);
  // root reads a mode-0 directory anyway; only an unprivileged run sees it skipped.
  const Paths expected = ::geteuid() == 0 ? Paths{"locked/b.log", "ok/a.log"} : Paths{"ok/a.log"};
  EXPECT_EQ(Expand("*/*.log"), expected);
  ::chmod(P("locked").c_str(), 0755);
}

TEST_F(GlobTest, RelativePatternsMatchNothing) {
  EXPECT_TRUE(ExpandGlob("*.log").empty());
  EXPECT_TRUE(GlobWatchDirs("logs/*.log").empty());
  EXPECT_FALSE(GlobMatches("*.log", "a.log"));
  EXPECT_FALSE(GlobMatches("/x/*.log", "x/a.log"));
}

TEST_F(GlobTest, WatchDirsCoverEveryDirectoryThatCanChangeTheAnswer) {
  File("runs/a/x.log");
  File("runs/b/logs/y.log");
  Dir("runs/a/deeper");
  Dir("runs/.git/objects");
  EXPECT_EQ(WatchDirs("runs/**/*.log"),
            (Paths{"runs", "runs/a", "runs/a/deeper", "runs/b", "runs/b/logs"}));
  // A literal component under a wildcard: its parent is watched for it to appear.
  EXPECT_EQ(WatchDirs("runs/*/logs/*.log"), (Paths{"runs", "runs/a", "runs/b", "runs/b/logs"}));
  EXPECT_EQ(WatchDirs("runs/*.log"), (Paths{"runs"}));
  // A missing prefix is watched from its deepest existing ancestor.
  EXPECT_EQ(WatchDirs("runs/new/job/*.log"), (Paths{"runs"}));
  EXPECT_EQ(WatchDirs("runs/new/**/*.log"), (Paths{"runs"}));
  EXPECT_EQ(GlobWatchDirs("/nonexistent-trainwatch-dir/x/*.log"), (Paths{"/"}));
}

TEST(GlobMatches, DecidesFromTheTextAlone) {
  struct Case {
    const char* pattern;
    const char* path;
    bool matches;
  };
  const Case cases[] = {
      {"/logs/*.log", "/logs/a.log", true},
      {"/logs/*.log", "/logs/a.txt", false},
      {"/logs/*.log", "/logs/sub/a.log", false},
      {"/logs/*.log", "/logs/.a.log", false},
      {"/logs/.*.log", "/logs/.a.log", true},
      {"/logs/**/*.log", "/logs/a.log", true},
      {"/logs/**/*.log", "/logs/x/y/a.log", true},
      {"/logs/**/*.log", "/logs/.git/a.log", false},
      {"/logs/**/*.log", "/other/a.log", false},
      {"/logs/**", "/logs/x/a", true},
      {"/logs/**/x/*.log", "/logs/x/a.log", true},
      {"/logs/**/x/*.log", "/logs/p/q/x/a.log", true},
      {"/logs/**/x/*.log", "/logs/p/q/a.log", false},
      {"/a/rank[0-3].log", "/a/rank2.log", true},
      {"/a/rank[0-3].log", "/a/rank7.log", false},
      {"/a/rank?.log", "/a/rank10.log", false},
      {"/a/run\\[1\\].log", "/a/run[1].log", true},
      {"/a/exact.log", "/a/exact.log", true},
      {"/a/exact.log", "//a//exact.log", true},
      {"/a/exact.log", "/a/exact.log/more", false},
      {"/a/wrap-{pid}.log", "/a/wrap-{pid}.log", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GlobMatches(c.pattern, c.path), c.matches) << c.pattern << " vs " << c.path;
  }
}

}  // namespace
}  // namespace trainwatch::source
