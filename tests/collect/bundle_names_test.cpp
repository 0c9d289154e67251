#include "collect/bundle_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainwatch::collect {
namespace {

TEST(SafeBundleNameTest, MakesOneSafeName) {
  struct Case {
    std::string path;
    std::string name;
  };
  for (const Case& c : std::vector<Case>{
           {"/data/run1/rank0.log", "data_run1_rank0.log"},
           {"./train.log", "train.log"},
           {"relative/x y.txt", "relative_x_y.txt"},
           {"/a/../b", "a_.._b"},
           {"/", "unnamed"},
           {"..", "unnamed"},
           {"", "unnamed"},
           {"kworker/0:1", "kworker_0_1"},
       }) {
    EXPECT_EQ(SafeBundleName(c.path), c.name) << c.path;
  }
}

TEST(UniqueNamesTest, ClashesGetANumberBeforeTheLastExtension) {
  UniqueNames names;
  struct Case {
    std::string asked;
    std::string given;
  };
  for (const Case& c : std::vector<Case>{
           {"a.log", "a.log"},
           {"a.log", "a-2.log"},
           {"a.log", "a-3.log"},
           {"a-2.log", "a-2-2.log"},  // taken by the clash above
           {"a.tar.gz", "a.tar.gz"},
           {"a.tar.gz", "a.tar-2.gz"},
           {"README", "README"},
           {"README", "README-2"},
           {".env", ".env"},
           {".env", ".env-2"},  // a dotfile's name is not an extension
       }) {
    EXPECT_EQ(names.Take(c.asked), c.given) << c.asked;
  }
  EXPECT_EQ(UniqueNames().Take("a.log"), "a.log") << "each run starts afresh";
}

}  // namespace
}  // namespace trainwatch::collect
