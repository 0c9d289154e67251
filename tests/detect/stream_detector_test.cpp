#include "detect/stream_detector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "detect/detector_fixture.h"
#include "rules/rule_loader.h"
#include "source/line_framer.h"

namespace trainwatch::detect {
namespace {

using detect::Firing;
using source::TailPosition;
using std::chrono::seconds;

const SteadyTime kT0 = SteadyTime{} + std::chrono::hours(100);
const detect::WallTime kWall = detect::WallTime{} + seconds(1704164645);

constexpr const char* kOomRule = R"(
  - id: t.oom
    kind: crash
    tags: [train]
    description: OOM
    pattern: 'out of memory'
    examples: {fires: [x], quiet: [y]}
)";

constexpr const char* kNanRule = R"(
  - id: t.nan
    kind: crash
    tags: [train]
    description: NaN loss
    pattern: 'loss is nan'
    examples: {fires: [x], quiet: [y]}
)";

std::shared_ptr<const rules::CompiledRules> Compile(const std::string& rules_yaml) {
  rules::LoadedRules loaded;
  rules::LoadRuleText("rules:\n" + rules_yaml, "test.yaml", loaded);
  EXPECT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  auto compiled = rules::CompiledRules::Build(loaded.rules, {"train"}, nullptr);
  EXPECT_TRUE(compiled.ok());
  return *compiled;
}

const StreamIdentity kIdentity{"train", "/logs/train.log", "2049:77", std::nullopt,
                               source::Fingerprint{12, 34}};

std::unique_ptr<StreamDetector> MakeStream(const std::string& rules_yaml,
                                           std::size_t context_lines = 3,
                                           bool track_progress = true) {
  auto stream =
      StreamDetector::Create(kIdentity, Compile(rules_yaml), context_lines, track_progress, {});
  EXPECT_TRUE(stream.ok());
  return std::move(*stream);
}

// Feeds a StreamDetector as the daemon's file reader does: bytes through a LineFramer, each batch
// with the offset of its first byte. One Feed is one read.
class Feeder {
 public:
  explicit Feeder(StreamDetector& stream) : stream_(stream) {}

  std::vector<Firing> Feed(std::string_view text, SteadyTime now = kT0,
                           detect::WallTime wall = kWall) {
    std::vector<Firing> out;
    do {
      auto space = framer_.WritableSpace();
      const std::size_t n = std::min(space.size(), text.size());
      std::memcpy(space.data(), text.data(), n);
      framer_.Commit(n);
      read_ += n;
      text.remove_prefix(n);
      while (true) {
        const std::uint64_t offset = read_ - framer_.pending_bytes();
        const source::LineBatch* batch = framer_.NextBatch();
        if (batch == nullptr) {
          break;
        }
        stream_.OnBatch(*batch, offset, now, wall, out);
      }
    } while (!text.empty());
    return out;
  }
  // How far the file has been read, as FileTail::position() says it.
  TailPosition Position() const {
    return {read_ - framer_.pending_bytes(), framer_.lines_completed() + 1};
  }
  std::string_view Pending() const { return framer_.PendingText(); }

 private:
  StreamDetector& stream_;
  source::LineFramer framer_;
  std::uint64_t read_ = 0;
};

void ExpectPosition(const TailPosition& got, const TailPosition& want) {
  EXPECT_EQ(got.offset, want.offset);
  EXPECT_EQ(got.next_line, want.next_line);
}

using Lines = std::vector<std::string>;

std::string Refresh(int epoch, int count) {
  return "\rEpoch " + std::to_string(epoch) + ": " + std::to_string(count) + "%|#   | " +
         std::to_string(count) + "/100 [00:01<00:09, 9.1it/s]";
}

// Of a line's refreshes of one bar only the last is parsed, but a restart of the bar within the
// line is seen even when the new bar then passes the old count: its pace starts again.
TEST(StreamDetector, ABarRestartedWithinOneLineIsSeenThoughItsRefreshesAreSkipped) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  feeder.Feed(Refresh(1, 10) + "\n", kT0);
  feeder.Feed(Refresh(1, 20) + Refresh(1, 40) + "\n", kT0 + seconds(2));
  ASSERT_NE(stream->progress().Latest(), nullptr);
  EXPECT_EQ(stream->progress().Latest()->pace.size(), 1u) << "40 at +2 s (10 made the bar)";
  feeder.Feed(Refresh(1, 45) + Refresh(2, 0) + Refresh(2, 30) + Refresh(2, 60) + "\n",
              kT0 + seconds(4));
  const Bar* bar = stream->progress().Latest();
  EXPECT_EQ(bar->count, 60);
  ASSERT_EQ(bar->pace.size(), 1u) << "epoch 1's samples are not epoch 2's pace";
  EXPECT_EQ(bar->pace.front().count, 0) << "the restart itself was parsed";
}

TEST(StreamDetector, PatternFiringCarriesItsLineIdentityAndResumePoint) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  EXPECT_TRUE(feeder.Feed("zero\none\n").empty());
  const std::vector<Firing> out = feeder.Feed("two\nthree\nCUDA out of memory\nafter\n");
  ASSERT_EQ(out.size(), 1u);
  const Firing& firing = out[0];
  EXPECT_EQ(firing.event.rule_id, "t.oom");
  EXPECT_EQ(firing.event.line, 5u);
  EXPECT_EQ(firing.event.text, "CUDA out of memory");
  EXPECT_EQ(firing.source, "train");
  EXPECT_EQ(firing.stream, "/logs/train.log");
  EXPECT_EQ(firing.file_id, "2049:77");
  EXPECT_EQ(firing.head_bytes, 12u);
  EXPECT_EQ(firing.head_hash, 34u);
  EXPECT_EQ(firing.time, kWall);
  EXPECT_EQ(firing.resume_offset, 19u);  // "zero\none\ntwo\nthree\n" is 19 bytes
  EXPECT_EQ(firing.resume_line, 5u);
  EXPECT_EQ(firing.context, (Lines{"one", "two", "three"}));  // across the two batches
  EXPECT_EQ(stream->lines(), 6u);
  EXPECT_EQ(stream->bytes(), 44u);
  EXPECT_EQ(stream->last_line(), 6u);
}

TEST(StreamDetector, ContextIsAtMostContextLinesBeforeTheFiringLine) {
  struct Case {
    std::size_t context_lines;
    Lines context;
  };
  for (const Case& c : {Case{0, {}}, Case{1, {"c"}}, Case{2, {"b", "c"}},
                        Case{4, {"z", "a", "b", "c"}}, Case{10, {"z", "a", "b", "c"}}}) {
    auto stream = MakeStream(kOomRule, c.context_lines);
    Feeder feeder(*stream);
    feeder.Feed("z\n");
    const std::vector<Firing> out = feeder.Feed("a\nb\nc\nout of memory\n");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].context, c.context) << "context_lines " << c.context_lines;
  }
}

TEST(StreamDetector, ContextOfAFiringAtTheTopOfABatchComesFromEarlierBatches) {
  auto stream = MakeStream(kOomRule, 3);
  Feeder feeder(*stream);
  feeder.Feed("a\n");
  feeder.Feed("b\nc\n");
  feeder.Feed("d\n");
  const std::vector<Firing> out = feeder.Feed("out of memory\nout of memory again\n");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].context, (Lines{"b", "c", "d"}));
  EXPECT_EQ(out[1].context, (Lines{"c", "d", "out of memory"}));
  EXPECT_EQ(out[1].resume_offset, 22u);
  EXPECT_EQ(out[1].resume_line, 6u);
}

TEST(StreamDetector, ContextLinesAreCappedAndShowWhatATerminalShows) {
  auto stream = MakeStream(kOomRule, 2);
  Feeder feeder(*stream);
  const std::string long_line(3000, 'L');
  feeder.Feed(long_line + "\n");
  const std::vector<Firing> out = feeder.Feed("\r 10%|#  | 1/10\r 20%|## | 2/10\nout of memory\n");
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].context.size(), 2u);
  EXPECT_EQ(out[0].context[0], long_line.substr(0, 1024));
  EXPECT_EQ(out[0].context[1], " 20%|## | 2/10");
}

TEST(StreamDetector, SuppressThroughDropsEventsAtOrBeforeThatLine) {
  auto stream = MakeStream(kOomRule);
  stream->SuppressThrough(3);
  Feeder feeder(*stream);
  const std::vector<Firing> out =
      feeder.Feed("out of memory 1\nok\nout of memory 3\nout of memory 4\n");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].event.line, 4u);
}

constexpr const char* kTracebackStart =
    "Traceback (most recent call last):\n"
    "  File \"train.py\", line 10, in <module>\n";

TEST(StreamDetector, ATracebackIsDatedByWhenItsHeaderWasReadNotWhenItClosed) {
  for (const int frames : {1, 200}) {  // 200: the header has left the remembered lines
    auto stream = MakeStream(detect::kTracebackRule);
    Feeder feeder(*stream);
    feeder.Feed("step 1\n", kT0, kWall);
    feeder.Feed(kTracebackStart, kT0, kWall + seconds(1));
    std::string middle;
    for (int i = 0; i < frames; ++i) {
      middle += "  File \"m.py\", line " + std::to_string(i + 1) + ", in f\n";
    }
    feeder.Feed(middle + "RuntimeError: boom\n", kT0, kWall + seconds(2));
    std::vector<Firing> out;
    stream->CloseTracebacks(kWall + seconds(5), out);
    ASSERT_EQ(out.size(), 1u) << frames;
    EXPECT_EQ(out[0].time, kWall + seconds(5)) << frames;
    EXPECT_EQ(out[0].first_line_time, kWall + seconds(1)) << frames;
  }
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  const std::vector<Firing> out = feeder.Feed("out of memory\n", kT0, kWall + seconds(7));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_line_time, kWall + seconds(7)) << "a line rule: its own batch";
}

TEST(StreamDetector, AnOpenTracebackHoldsDurableAtItsHeaderUntilItCloses) {
  auto stream = MakeStream(detect::kTracebackRule);
  Feeder feeder(*stream);
  EXPECT_TRUE(feeder.Feed("step 1\n").empty());
  ExpectPosition(stream->Durable(feeder.Position()), {7, 2});

  EXPECT_TRUE(feeder.Feed(kTracebackStart).empty());
  EXPECT_TRUE(stream->TracebackOpen());
  ExpectPosition(stream->Durable(feeder.Position()), {7, 2});

  EXPECT_TRUE(feeder.Feed("    main()\nRuntimeError: boom\n").empty());
  EXPECT_TRUE(stream->TracebackOpen());
  ExpectPosition(feeder.Position(), {112, 6});
  ExpectPosition(stream->Durable(feeder.Position()), {7, 2});

  std::vector<Firing> out;
  stream->CloseTracebacks(kWall, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].event.rule_id, "python.traceback");
  EXPECT_EQ(out[0].event.line, 2u);
  EXPECT_EQ(out[0].event.summary, "RuntimeError: boom");
  EXPECT_EQ(out[0].event.summary_line, 5u);
  EXPECT_EQ(out[0].resume_offset, 7u);
  EXPECT_EQ(out[0].resume_line, 2u);
  EXPECT_EQ(out[0].context, (Lines{"step 1"}));
  EXPECT_FALSE(stream->TracebackOpen());
  ExpectPosition(stream->Durable(feeder.Position()), {112, 6});
}

TEST(StreamDetector, HoldForIncidentKeepsDurableAtTheEarliestHeldFiringUntilReleased) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  std::vector<Firing> first = feeder.Feed("ok\nout of memory\n");
  ASSERT_EQ(first.size(), 1u);
  stream->HoldForIncident(first[0]);
  std::vector<Firing> second = feeder.Feed("more\nout of memory again\nquiet\n");
  ASSERT_EQ(second.size(), 1u);
  stream->HoldForIncident(second[0]);
  ExpectPosition(feeder.Position(), {48, 6});
  ExpectPosition(stream->Durable(feeder.Position()), {3, 2});

  stream->ReleaseIncidentHold();
  ExpectPosition(stream->Durable(feeder.Position()), {48, 6});

  // A later firing held first, then an earlier one: the earlier wins.
  stream->HoldForIncident(second[0]);
  ExpectPosition(stream->Durable(feeder.Position()), {22, 4});
  stream->HoldForIncident(first[0]);
  ExpectPosition(stream->Durable(feeder.Position()), {3, 2});
}

TEST(StreamDetector, AFiringOfNoLineHoldsNothing) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  feeder.Feed("a\nb\n");
  detect::Event silence;
  silence.rule_id = "t.silence";
  silence.kind = rules::RuleKind::kHang;
  const Firing firing = stream->MakeFiring(silence, kWall);
  EXPECT_EQ(firing.resume_line, 0u);
  EXPECT_EQ(firing.context, (Lines{"a", "b"}));  // the last lines
  EXPECT_EQ(firing.stream, "/logs/train.log");
  stream->HoldForIncident(firing);
  ExpectPosition(stream->Durable(feeder.Position()), {4, 3});
}

TEST(StreamDetector, DurableTakesTheEarlierOfTracebackAndIncidentHolds) {
  auto stream = MakeStream(std::string(kOomRule) + detect::kTracebackRule);
  Feeder feeder(*stream);
  std::vector<Firing> oom = feeder.Feed("x\nout of memory\n");
  ASSERT_EQ(oom.size(), 1u);
  feeder.Feed(kTracebackStart);
  stream->HoldForIncident(oom[0]);
  ExpectPosition(stream->Durable(feeder.Position()), {2, 2});
  stream->ReleaseIncidentHold();
  ExpectPosition(stream->Durable(feeder.Position()), {16, 3});
}

const std::string kBar1 = "\r 10%|#         | 1/10 [00:01<00:09,  1.00it/s]";
const std::string kBar2 = "\r 20%|##        | 2/10 [00:02<00:08,  1.00it/s]";
const std::string kBar3 = "\r 30%|###       | 3/10 [00:03<00:07,  1.00it/s]";
const std::string kBar3Again = "\r 30%|###       | 3/10 [00:13<00:23,  0.23it/s]";

TEST(StreamDetector, PendingTqdmLineShowsItsBar) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  feeder.Feed("header\n" + kBar1 + kBar2);
  ASSERT_EQ(feeder.Pending(), kBar1 + kBar2);
  stream->OnPending(feeder.Pending(), feeder.Position().next_line, kT0);

  ASSERT_EQ(stream->progress().bars().size(), 1u);
  const detect::Bar& bar = stream->progress().bars().at("tqdm:");
  EXPECT_EQ(bar.count, 2);
  EXPECT_EQ(bar.total, 10);
  EXPECT_EQ(bar.line, 2u);
  EXPECT_EQ(bar.text, kBar2.substr(1));
  EXPECT_EQ(stream->last_output(), kT0);
}

TEST(StreamDetector, LongerPendingLineOnlyAddsItsNewRefreshes) {
  auto stream = MakeStream(kOomRule);
  stream->OnPending(kBar1 + kBar2, 1, kT0);
  const detect::Bar& bar = stream->progress().bars().at("tqdm:");
  EXPECT_EQ(bar.count, 2);

  stream->OnPending(kBar1 + kBar2 + kBar3, 1, kT0 + seconds(1));
  EXPECT_EQ(bar.count, 3);
  EXPECT_EQ(bar.last_advance, kT0 + seconds(1));

  // Only a reprint of 3 is new: the 1 and 2 seen before must not count as moves again.
  stream->OnPending(kBar1 + kBar2 + kBar3 + kBar3Again, 1, kT0 + seconds(11));
  EXPECT_EQ(bar.count, 3);
  EXPECT_EQ(bar.last_advance, kT0 + seconds(1));
  EXPECT_EQ(bar.last_update, kT0 + seconds(11));
  EXPECT_EQ(bar.text, kBar3Again.substr(1));

  // The same text again is nothing new.
  stream->OnPending(kBar1 + kBar2 + kBar3 + kBar3Again, 1, kT0 + seconds(20));
  EXPECT_EQ(bar.last_update, kT0 + seconds(11));
}

TEST(StreamDetector, PendingLineOfANewLineStartsOver) {
  auto stream = MakeStream(kOomRule);
  stream->OnPending(kBar1 + kBar2 + kBar3, 1, kT0);
  stream->OnPending(kBar1, 2, kT0 + seconds(5));  // shorter, on the next line: a new bar run
  const detect::Bar& bar = stream->progress().bars().at("tqdm:");
  EXPECT_EQ(bar.count, 1);
  EXPECT_EQ(bar.line, 2u);
  EXPECT_EQ(bar.last_advance, kT0 + seconds(5));
}

TEST(StreamDetector, WithoutProgressTrackingPendingLinesMakeNoBars) {
  auto stream = MakeStream(kOomRule, 3, /*track_progress=*/false);
  stream->OnPending(kBar1 + kBar2, 1, kT0);
  Feeder feeder(*stream);
  feeder.Feed(kBar1 + "\n");
  EXPECT_TRUE(stream->progress().bars().empty());
  EXPECT_EQ(stream->last_output(), kT0);
}

TEST(StreamDetector, CompleteLinesUpdateBarsFromEverySegment) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  feeder.Feed("loading\n" + kBar1 + kBar2 + "\nstep 120 loss 0.31\n", kT0);
  const auto& bars = stream->progress().bars();
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars.at("tqdm:").count, 2);
  EXPECT_EQ(bars.at("tqdm:").line, 2u);
  EXPECT_EQ(bars.at("step:").count, 120);
  EXPECT_EQ(bars.at("step:").line, 3u);
}

TEST(StreamDetector, CompletingAPendingLineDoesNotReplayItsOldRefreshes) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  feeder.Feed(kBar1 + kBar2 + kBar3);
  stream->OnPending(feeder.Pending(), feeder.Position().next_line, kT0);
  ASSERT_EQ(stream->progress().bars().at("tqdm:").last_advance, kT0);

  // Minutes later the writer prints a newline (the bar closes, or another thread logs).
  feeder.Feed("\n", kT0 + std::chrono::minutes(20));
  const detect::Bar& bar = stream->progress().bars().at("tqdm:");
  EXPECT_EQ(bar.count, 3);
  EXPECT_EQ(bar.last_advance, kT0);
}

TEST(StreamDetector, SetRulesSwapsRulesAndKeepsBarsAndContext) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  feeder.Feed(kBar1 + "\nbefore\n");
  ASSERT_EQ(stream->progress().bars().size(), 1u);

  ASSERT_TRUE(stream->SetRules(Compile(kNanRule)).ok());
  const std::vector<Firing> out = feeder.Feed("out of memory\nloss is nan\n");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].event.rule_id, "t.nan");
  EXPECT_EQ(out[0].event.line, 4u);
  EXPECT_EQ(out[0].context,
            (Lines{" 10%|#         | 1/10 [00:01<00:09,  1.00it/s]", "before", "out of memory"}));
  ASSERT_EQ(stream->progress().bars().size(), 1u);
  EXPECT_EQ(stream->progress().bars().at("tqdm:").count, 1);
}

TEST(StreamDetector, SetRulesKeepsTheIncidentHold) {
  auto stream = MakeStream(kOomRule);
  Feeder feeder(*stream);
  std::vector<Firing> out = feeder.Feed("a\nout of memory\n");
  ASSERT_EQ(out.size(), 1u);
  stream->HoldForIncident(out[0]);
  ASSERT_TRUE(stream->SetRules(Compile(kNanRule)).ok());
  feeder.Feed("b\n");
  ExpectPosition(stream->Durable(feeder.Position()), {2, 2});
}

TEST(StreamDetector, SetRulesDoesNotLoseAnOpenTraceback) {
  auto stream = MakeStream(detect::kTracebackRule);
  Feeder feeder(*stream);
  feeder.Feed("step 1\n");
  feeder.Feed(kTracebackStart);
  ASSERT_TRUE(stream->TracebackOpen());

  ASSERT_TRUE(stream->SetRules(Compile(detect::kTracebackRule)).ok());
  ExpectPosition(stream->Durable(feeder.Position()), {7, 2});  // "holds stay"
  std::vector<Firing> out = feeder.Feed("    main()\nRuntimeError: boom\n");
  stream->CloseTracebacks(kWall, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].event.line, 2u);
  EXPECT_EQ(out[0].event.summary, "RuntimeError: boom");
}

}  // namespace
}  // namespace trainwatch::detect
