#include "ops/firing_log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

namespace trainwatch::ops {
namespace {

using Disposition = detect::IncidentBuilder::Disposition;

class FiringLogTest : public ::testing::Test {
 protected:
  FiringLogTest() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  }
  ~FiringLogTest() override { spdlog::set_default_logger(previous_); }

  static detect::Firing Firing(const std::string& rule, std::uint64_t line) {
    detect::Firing firing;
    firing.event.rule_id = rule;
    firing.event.line = line;
    firing.event.text = "RuntimeError: CUDA error: out of memory";
    firing.stream = "/logs/rank0.log";
    return firing;
  }
  std::size_t Lines() const {
    const std::string text = out_.str();
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }

  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
  FiringLog log_;
};

TEST_F(FiringLogTest, SaysWhereAndWhat) {
  const FiringLog::Said said = FiringLog::Describe(Firing("cuda.oom", 812));
  EXPECT_EQ(said.where, "/logs/rank0.log:812");
  EXPECT_EQ(said.what, "RuntimeError: CUDA error: out of memory");
  detect::Firing kmsg = Firing("xid", 0);
  kmsg.stream = "kmsg";
  kmsg.event.summary = "Xid 79";
  EXPECT_EQ(FiringLog::Describe(kmsg).where, "kmsg");
  EXPECT_EQ(FiringLog::Describe(kmsg).what, "Xid 79");
}

TEST_F(FiringLogTest, OpeningAndJoiningFiringsAreLoggedAndNotCounted) {
  detect::Incident open;
  open.id = "20261123T101500Z-1";
  log_.Record(FiringLog::Describe(Firing("cuda.oom", 1)), Disposition::kOpened, &open);
  log_.Record(FiringLog::Describe(Firing("nccl.abort", 2)), Disposition::kJoined, &open);
  open.more_firings = 3;  // full: what joins now is counted in the incident itself
  log_.Record(FiringLog::Describe(Firing("nccl.abort", 3)), Disposition::kJoined, &open);
  EXPECT_EQ(Lines(), 2u) << out_.str();
  EXPECT_NE(out_.str().find("(incident 20261123T101500Z-1 opened)"), std::string::npos);
  EXPECT_TRUE(log_.quiet_firings().empty());
}

TEST_F(FiringLogTest, AFloodThatOpensNothingIsALineAndItsCountAtEachPowerOfTen) {
  for (std::uint64_t line = 1; line <= 1000; ++line) {
    log_.Record(FiringLog::Describe(Firing("cuda.oom", line)), Disposition::kCoolingDown, nullptr);
    log_.Record(FiringLog::Describe(Firing("py.warn", line)), Disposition::kWarningAlone, nullptr);
  }
  // Each: its first firing, then 10, 100 and 1000 with the first and last line.
  EXPECT_EQ(Lines(), 8u) << out_.str();
  EXPECT_NE(out_.str().find("cuda.oom: 1000 firings in cooldown, from /logs/rank0.log:1 to "
                            "/logs/rank0.log:1000\n"),
            std::string::npos)
      << out_.str();
  EXPECT_EQ(log_.quiet_firings().at("cuda.oom"), 1000u);
  EXPECT_EQ(log_.quiet_firings().at("py.warn"), 1000u);
  // An incident opened by the rule ends the run: its next quiet firing is said again.
  detect::Incident open;
  open.id = "i";
  log_.Record(FiringLog::Describe(Firing("cuda.oom", 1001)), Disposition::kOpened, &open);
  log_.Record(FiringLog::Describe(Firing("cuda.oom", 1002)), Disposition::kCoolingDown, nullptr);
  EXPECT_EQ(Lines(), 10u) << out_.str();
}

TEST_F(FiringLogTest, AStormOfFollowUpsIsNotALogLineEach) {
  // 3,000 firing lines joining a written incident: 1 line, then the count at 10, 100, 1000.
  for (std::uint64_t line = 1; line <= 3000; ++line) {
    log_.FollowedUp("i-1", FiringLog::Describe(Firing("pytorch.gloo.error", line)),
                    "the same job's crash");
  }
  EXPECT_EQ(Lines(), 4u) << out_.str();
  EXPECT_NE(out_.str().find("joins incident i-1 as a follow-up (the same job's crash)"),
            std::string::npos);
  EXPECT_NE(out_.str().find("pytorch.gloo.error: 1000 firings have joined incident i-1 "
                            "(follow-ups: the same job's crash), from /logs/rank0.log:1 to "
                            "/logs/rank0.log:1000"),
            std::string::npos)
      << out_.str();
  // Another rule's run, or another incident's, is said on its own.
  log_.FollowedUp("i-2", FiringLog::Describe(Firing("pytorch.gloo.error", 3001)), "x");
  EXPECT_EQ(Lines(), 5u);
}

}  // namespace
}  // namespace trainwatch::ops
