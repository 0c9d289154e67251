#include "source/rotated_name.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace trainwatch::source
