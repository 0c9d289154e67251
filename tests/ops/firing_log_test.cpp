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

TEST_F(FiringLogTest, AFloodThatOpensNothingIsOneLineAndACount) {
  for (std::uint64_t line = 1; line <= 1000; ++line) {
    log_.Record(FiringLog::Describe(Firing("cuda.oom", line)), Disposition::kCoolingDown, nullptr);
    log_.Record(FiringLog::Describe(Firing("py.warn", line)), Disposition::kWarningAlone, nullptr);
  }
  EXPECT_EQ(Lines(), 2u) << out_.str();
  EXPECT_EQ(log_.quiet_firings().at("cuda.oom"), 1000u);
  EXPECT_EQ(log_.quiet_firings().at("py.warn"), 1000u);
  // An incident opened by the rule ends the run: its next quiet firing is said again.
  detect::Incident open;
  open.id = "i";
  log_.Record(FiringLog::Describe(Firing("cuda.oom", 1001)), Disposition::kOpened, &open);
  log_.Record(FiringLog::Describe(Firing("cuda.oom", 1002)), Disposition::kCoolingDown, nullptr);
  EXPECT_EQ(Lines(), 4u) << out_.str();
}

}  // namespace
}  // namespace trainwatch::ops
