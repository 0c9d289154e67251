// JobBook: one capture per job failure within the cooldown, ended by a resolution; the
// records kept per job, bounded, oldest first.
#include "cluster/job_book.h"

#include <gtest/gtest.h>

namespace trainwatch::cluster {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const SteadyTime kStart = SteadyTime{} + std::chrono::hours(1);

PeerRecord Record(const std::string& job, const std::string& node, std::int64_t opened_ms) {
  PeerRecord record;
  record.job_id = job;
  record.node = node;
  record.incident_id = "id-" + std::to_string(opened_ms);
  record.opened_ms = opened_ms;
  return record;
}

TEST(JobBook, ACaptureCountsForItsJobUntilTheCooldownOrAResolution) {
  JobBook book;
  book.set_cooldown(minutes(5));
  EXPECT_FALSE(book.CapturedAgo("llama", kStart));
  book.Captured("llama", kStart);
  EXPECT_EQ(book.CapturedAgo("llama", kStart + seconds(90)), seconds(90));
  EXPECT_FALSE(book.CapturedAgo("other", kStart + seconds(90)));
  EXPECT_FALSE(book.CapturedAgo("llama", kStart + minutes(5)));
  book.Captured("llama", kStart + minutes(6));
  book.Resolved("llama");  // the job recovered: its next failure is a new one
  EXPECT_FALSE(book.CapturedAgo("llama", kStart + minutes(6)));
}

TEST(JobBook, RecordsAreKeptPerJobOldestFirstAndBounded) {
  JobBook book;
  book.Remember(Record("llama", "gpu-2", 300));
  book.Remember(Record("llama", "gpu-1", 100));
  book.Remember(Record("other", "gpu-9", 200));
  std::vector<PeerRecord> llama = book.RecordsOf("llama");
  ASSERT_EQ(llama.size(), 2u);
  EXPECT_EQ(llama[0].node, "gpu-1");
  EXPECT_EQ(llama[1].node, "gpu-2");
  for (std::int64_t i = 0; i < 100; ++i) {
    book.Remember(Record("llama", "gpu-" + std::to_string(i), 1000 + i));
  }
  llama = book.RecordsOf("llama");
  ASSERT_EQ(llama.size(), JobBook::kMaxRecords);
  EXPECT_EQ(llama.front().opened_ms, 1000 + 100 - 64);  // the oldest went first
  EXPECT_TRUE(book.RecordsOf("").empty());
}

}  // namespace
}  // namespace trainwatch::cluster
