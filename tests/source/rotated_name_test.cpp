#include "source/rotated_name.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace trainwatch::source {
namespace {

TEST(RotatedName, LogrotateNamesAreCopies) {
  for (const char* copy : {"/l/train.log.1", "/l/train.log-20261121", "/l/train.log.1.gz",
                           "/l/train.1.log", "/l/train-20261121.log", "/l/train_2026-11-21.log"}) {
    EXPECT_TRUE(IsRotatedCopyName(copy, "/l", "train.log")) << copy;
  }
}

TEST(RotatedName, SimilarNamesAreNot) {
  for (const char* other : {"/l/train.log", "/l/job17.log", "/l/train2.log", "/l/trainer.log",
                            "/l/train.logs", "/l/train-rank1.log", "/other/train.log.1"}) {
    EXPECT_FALSE(IsRotatedCopyName(other, "/l", other[3] == 'j' ? "job1.log" : "train.log"))
        << other;
  }
  EXPECT_TRUE(IsRotatedCopyName("/l/messages.1", "/l", "messages"));  // no extension
  EXPECT_FALSE(IsRotatedCopyName("/l/messages", "/l", "messages"));
}

// Every name made of these characters, up to `length` of them.
std::vector<std::string> NamesUpTo(std::size_t length) {
  std::vector<std::string> names{""};
  for (std::size_t at = 0; at < names.size(); ++at) {
    if (names[at].size() < length) {
      for (char c : {'a', '1', '.', '-'}) {
        std::string name = names[at];
        name += c;
        names.push_back(std::move(name));
      }
    }
  }
  return names;
}

TEST(RotatedName, TheOriginalsOfACopyAreFoundByItsName) {
  EXPECT_EQ(RotatedCopyOriginals("train.log.1"),
            (std::vector<std::string>{"train", "train.1", "train.log"}));
  // Whatever the names, an original IsRotatedCopyName accepts is among those listed.
  const std::vector<std::string> copies = NamesUpTo(5);
  const std::vector<std::string> originals = NamesUpTo(3);
  int pairs = 0;
  for (const std::string& copy : copies) {
    const std::vector<std::string> listed = RotatedCopyOriginals(copy);
    std::string path = "/l/";
    path += copy;
    for (const std::string& original : originals) {
      if (IsRotatedCopyName(path, "/l", original)) {
        ++pairs;
        EXPECT_NE(std::find(listed.begin(), listed.end(), original), listed.end())
            << copy << " of " << original;
      }
    }
  }
  EXPECT_GT(pairs, 100);
  for (const char* copy : {"train.log-20261121", "train.1.log", "train_2026-11-21.log"}) {
    const std::vector<std::string> listed = RotatedCopyOriginals(copy);
    EXPECT_NE(std::find(listed.begin(), listed.end(), "train.log"), listed.end()) << copy;
  }
}

}  // namespace
}  // namespace trainwatch::source
