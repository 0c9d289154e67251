// The training loss as jobs print it (one test per shape), what is not a training loss, and a
// metric rule's runs: NaN on k lines in a row of one writer fires once, with the step it began
// at and the last finite value; fp16 overflow steps the scaler skips neither count nor reset.
#include "detect/metric_parser.h"

#include <gtest/gtest.h>

#include <cmath>

#include "detector_fixture.h"

namespace trainwatch::detect {
namespace {

LossReading Read(std::string_view line) {
  const std::optional<LossReading> reading = ReadLoss(line);
  EXPECT_TRUE(reading.has_value()) << line;
  return reading.value_or(LossReading{});
}

TEST(ReadLoss, ReadsTheShapesJobsPrint) {
  EXPECT_TRUE(std::isnan(Read("step 0004 | loss = nan").value));
  EXPECT_EQ(Read("step 0004 | loss = nan").step, 4);
  EXPECT_DOUBLE_EQ(Read("Epoch 1 loss: 2.31").value, 2.31);
  EXPECT_FALSE(Read("Loss: NaN").finite);
  // tqdm postfix (Lightning), with the rank prefix.
  EXPECT_FALSE(Read("[rank1]: Epoch 0:  10%| 10/100 [00:01<00:09, loss=nan, v_num=0]").finite);
  // HF Trainer's dict.
  const LossReading hf = Read("{'loss': nan, 'grad_norm': nan, 'learning_rate': 4.9e-05}");
  EXPECT_FALSE(hf.finite);
  EXPECT_FALSE(hf.step.has_value());
  // Megatron: "lm loss", an exponent, the iteration as the step; "loss scale" is no loss.
  const LossReading megatron =
      Read(" iteration       10/     100 | lm loss: 1.035E+01 | loss scale: 4096.0 |");
  EXPECT_DOUBLE_EQ(megatron.value, 10.35);
  EXPECT_EQ(megatron.step, 10);
  // nanoGPT.
  const LossReading nano = Read("iter 425: loss nan, time 1440.31ms, mfu 0.01%");
  EXPECT_FALSE(nano.finite);
  EXPECT_EQ(nano.step, 425);
  EXPECT_EQ(Read("step 0: train loss 4.2367, val loss 4.2475").value, 4.2367);
  EXPECT_TRUE(std::isinf(Read("train_loss=inf").value));
  EXPECT_EQ(Read("| loss -inf | lr 1e-4 |").value, -INFINITY);
  EXPECT_FALSE(Read("loss=tensor(nan, device='cuda:0', grad_fn=<AddBackward0>)").finite);
  EXPECT_DOUBLE_EQ(Read("global_step=30 loss=.5").value, 0.5);
  EXPECT_EQ(Read("global_step=30 loss=.5").step, 30);
}

TEST(ReadLoss, OtherNumbersAreNoTrainingLoss) {
  for (const char* line :
       {"loss scale: 4096.0", "loss_scale=65536", "val_loss: nan", "avg_loss=nan",
        "no loss of precision", "lossy compression at 9", "eval/loss: nan", "step 5 nanoseconds",
        "Loss is nan, stopping training"}) {
    EXPECT_FALSE(ReadLoss(line).has_value()) << line;
  }
}

TEST(ReadLoss, AnOverflowTheScalerSkippedIsSaid) {
  EXPECT_TRUE(Read("[deepspeed] OVERFLOW! Rank 0 Skipping step. loss: nan").overflow);
  EXPECT_TRUE(Read("Gradient overflow.  Skipping step, loss: nan").overflow);
  EXPECT_FALSE(Read("step 4 loss: nan").overflow);
  // A finite loss on an overflow line needs no excuse.
  EXPECT_FALSE(Read("Gradient overflow.  Skipping step, loss: 2.0").overflow);
}

TEST(WriterPrefixOf, NamesTheLaunchersPrefix) {
  EXPECT_EQ(WriterPrefixOf("[rank3]: loss = nan"), "[rank3]:");
  EXPECT_EQ(WriterPrefixOf("[default0]:loss = nan"), "[default0]:");
  EXPECT_EQ(WriterPrefixOf("[1,3]<stdout>: loss = nan"), "[1,3]<stdout>:");
  EXPECT_EQ(WriterPrefixOf("3: loss = nan"), "3: ");
  EXPECT_EQ(WriterPrefixOf("loss = nan"), "");
}

constexpr const char* kLossRule = R"(
  - id: training.loss_stays_nan
    kind: diverged
    tags: [train]
    description: loss NaN
    metric: {name: loss, not_finite_for: 3}
    examples: {fires: ["loss nan\nloss nan\nloss nan\n"], quiet: [y]}
)";

TEST(MetricRule, ThreeNotFiniteLinesInARowFireOnceWithWhereItBegan) {
  const std::vector<Event> events =
      Detect(kLossRule,
             "step 1 | loss = 2.5\nstep 2 | loss = 2.31\nstep 3 | loss = nan\nstep 4 | loss = "
             "nan\nsaving checkpoint\nstep 5 | loss = inf\nstep 6 | loss = nan\nstep 7 | loss = "
             "nan\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, rules::RuleKind::kDiverged);
  EXPECT_EQ(events[0].line, 6u);
  EXPECT_EQ(events[0].summary,
            "loss is inf on 3 lines in a row since step 3 (line 3); the last finite loss was "
            "2.31 at step 2");
}

TEST(MetricRule, AFiniteLossStartsTheCountAgainAndAnotherRunFiresAgain) {
  EXPECT_TRUE(Detect(kLossRule, "loss nan\nloss nan\nloss 2.0\nloss nan\nloss nan\n").empty());
  EXPECT_EQ(
      Detect(kLossRule, "loss nan\nloss nan\nloss nan\nloss 2.0\nloss nan\nloss nan\nloss nan\n")
          .size(),
      2u);
}

TEST(MetricRule, Fp16OverflowStepsTheScalerSkipsStayQuiet) {
  const std::string text =
      "step 10 loss: 2.1\n"
      "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, loss: nan\n"
      "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 32768, loss: nan\n"
      "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 16384, loss: nan\n"
      "step 11 loss: 2.0\n";
  EXPECT_TRUE(Detect(kLossRule, text).empty());
}

TEST(MetricRule, EachRankOfASharedLogIsCountedApart) {
  const std::string interleaved =
      "[rank0]: loss = nan\n[rank1]: loss = 2.0\n[rank0]: loss = nan\n[rank1]: loss = 1.9\n"
      "[rank0]: loss = nan\n";
  const std::vector<Event> events = Detect(kLossRule, interleaved);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].summary, "[rank0]: loss is nan on 3 lines in a row since line 1");
  EXPECT_TRUE(Detect(kLossRule,
                     "[rank0]: loss = nan\n[rank1]: loss = nan\n[rank0]: loss = 1.0\n"
                     "[rank1]: loss = 1.0\n[rank0]: loss = nan\n[rank1]: loss = nan\n")
                  .empty());
}

}  // namespace
}  // namespace trainwatch::detect
