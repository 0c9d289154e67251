#include "detect/progress_parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace trainwatch::detect {
namespace {

namespace fs = std::filesystem;

// "key|label|count/total" ("?" without total), or "-" for no update: one string to compare
// exactly and to read in a failure message.
std::string Show(std::string_view segment) {
  const auto update = ParseProgress(segment);
  if (!update) {
    return "-";
  }
  return update->key + "|" + update->label + "|" + std::to_string(update->count) + "/" +
         (update->total ? std::to_string(*update->total) : "?");
}

struct Case {
  std::string segment;
  std::string expected;
};

void ExpectAll(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(Show(c.segment), c.expected) << "segment: " << c.segment;
  }
}

TEST(PhaseMarker, CheckpointSavesAndEvaluationsButNotTrainingLines) {
  for (const char* line :
       {"Saving model checkpoint to /out/checkpoint-500",
        "[2024-03-01 10:00:00,123] [INFO] [engine.py:3481:_save_zero_checkpoint] zero "
        "checkpoint saved; Checkpoint global_step500 is about to be saved!",
        " saving checkpoint at iteration     500 to /ckpt",
        "Epoch 0, global step 500: 'val_loss' reached 0.41 (best 0.41), saving model to "
        "'/out/epoch=0.ckpt' as top 1",
        "***** Running Evaluation *****", "[rank0]: Running validation at step 500",
        "Evaluating: 10 batches"}) {
    EXPECT_TRUE(IsPhaseMarker(line)) << line;
  }
  for (const char* line : {"step 500 loss 0.41", "Epoch 0:  50%|#####     | 5/10",
                           "eval_loss = 0.41", "loaded checkpoint shards: 100%"}) {
    EXPECT_FALSE(IsPhaseMarker(line)) << line;
  }
}

TEST(ProgressTqdm, BarsWithTotal) {
  ExpectAll({
      {"desc: 45%|████▌     | 45/100 [00:10<00:12,  4.50it/s, loss=0.3]", "tqdm:desc|desc|45/100"},
      {" 41%|███| 366/903 [5:15:39<6:53:09, 46.16s/it]", "tqdm:||366/903"},
      {"Epoch 0:   0%|          | 0/8 [00:00<?, ?it/s]", "tqdm:Epoch #|Epoch 0|0/8"},
      {"Train:  10%|█         | 10/100 [00:02<00:18,  4.95batch/s]", "tqdm:Train|Train|10/100"},
      {"Download: 61%|██████    | 1.23k/2.00k [00:01<00:00, 1.01kit/s]",
       "tqdm:Download|Download|1230/2000"},
      {"Epoch 0: 100%|██████████| 100/100 [00:01<00:00, 52.63it/s, v_num=0]`Trainer.fit` stopped",
       "tqdm:Epoch #|Epoch 0|100/100"},
      {"(pid=63079) :  25%|██▌       | 5.00/20.0 [1:04:24<3:07:19, 749s/it]HW Exception by GPU",
       "tqdm:(pid=63079)|(pid=63079)|5/20"},
      {"[rank3]: Epoch 12:  50%|#####     | 5/10 [00:01<00:01,  4.00it/s]",
       "tqdm:[rank3]: Epoch #|[rank3]: Epoch 12|5/10"},
      {"Validation DataLoader 0:  40%|████      | 4/10 [00:00<00:00, 40.1it/s]",
       "tqdm:Validation DataLoader #|Validation DataLoader 0|4/10"},
      {"Training: |          | 0/? [00:00<?, ?it/s]", "tqdm:Training|Training|0/?"},
      {"\x1b[A\x1b[2KEpoch 3:  20%|██        | 2/10 [00:01<00:04,  2.00it/s]\x1b[A",
       "tqdm:Epoch #|Epoch 3|2/10"},
  });
}

TEST(ProgressTqdm, BarsWithoutTotal) {
  ExpectAll({
      {"desc: 25it [00:01, 19.92it/s]", "tqdm:desc|desc|25/?"},
      {"100batch [00:05, 19.80batch/s]", "tqdm:||100/?"},
      {"0it [00:00, ?it/s]", "tqdm:||0/?"},
      {"Tokenizing: 1.50kex [00:03, 498.2ex/s, loss=2]", "tqdm:Tokenizing|Tokenizing|1500/?"},
  });
}

TEST(ProgressTqdm, DescDigitsAreOneBarButWritersStaySeparate) {
  const auto key = [](std::string_view segment) {
    const auto update = ParseProgress(segment);
    return update ? update->key : "-";
  };
  const std::string_view bar = ":  10%|█         | 1/10 [00:00<00:02,  3.33it/s]";
  const auto with = [&](std::string_view desc) { return key(std::string(desc) += bar); };
  EXPECT_EQ(with("Epoch 0"), with("Epoch 1"));
  EXPECT_NE(with("[rank0]: Epoch 1"), with("[rank1]: Epoch 1"));
  EXPECT_EQ(with("[rank0]: Epoch 1"), with("[rank0]: Epoch 2"));
  EXPECT_NE(with("gpu250: Epoch 1"), with("gpu251: Epoch 1"));
  EXPECT_NE(with("[1,0]<stderr>: Epoch 1"), with("[1,1]<stderr>: Epoch 1"));
  EXPECT_EQ(with("[rank0]: Epoch 1"), "tqdm:[rank0]: Epoch #");
  // A logger's clock ticks on every line; the bar is still one bar.
  EXPECT_EQ(with("2024-01-02 12:34:56,789 INFO: Epoch 1"),
            with("2024-01-02 12:35:07,012 INFO: Epoch 2"));
  EXPECT_EQ(with("2024-01-02 12:34:56,789 INFO: Epoch 1"), "tqdm:#-#-# #:#:#,# INFO: Epoch #");
  EXPECT_EQ(with("[2024-01-02T12:34:56Z] [rank2] Eval 3"), "tqdm:[#-#-#T#:#:#Z] [rank2] Eval #");
}

TEST(ProgressKeras, Bars) {
  ExpectAll({
      {"29312/60000 [=============>................] - ETA: 2s - loss: 0.0891 - acc: 0.9733",
       "keras:|keras|29312/60000"},
      {"60000/60000 [==============================] - 5s 87us/step - loss: 0.3437",
       "keras:|keras|60000/60000"},
      {" 561/625 ━━━━━━━━━━━━━━━━━━━━  0s 810us/step - accuracy: 0.8828", "keras:|keras|561/625"},
      {"\x1b[1m 12/25\x1b[0m \x1b[32m━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━━\x1b[0m \x1b[1m0s\x1b[0m "
       "5ms/step - loss: 0.1",
       "keras:|keras|12/25"},
      {"\b\b\b\b\b\b 13/25 ━━━━━━━━━━━━━━━━━━━━ 0s 5ms/step", "keras:|keras|13/25"},
      {"5000/5000 - 12s - 2ms/step - loss: 20454768.0000 - mae: 1786.2712",
       "keras:|keras|5000/5000"},
      {"     12/Unknown - 5s 417ms/step - loss: 0.5", "keras:|keras|12/?"},
      {"Epoch 1/10", "-"},
      {"Epoch 50/50", "-"},
      {"1/2 of the shards loaded", "-"},
      {"100/200 - 5 files copied", "-"},
  });
}

TEST(ProgressStep, LinesOfTrainingLoopsAndFrameworks) {
  ExpectAll({
      {"step 120 loss 0.31", "step:|step|120/?"},
      {"[rank0]:step 120 loss 0.31", "step:|step|120/?"},  // torchrun's prefix, glued
      {"[1,0]<stderr>:iteration 7/ 100 |", "step:|step|7/100"},
      // DeepSpeed's throughput line: the global step, not the micro step.
      {"epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=25.3, "
       "CurrSamplesPerSec=26.1, MemAllocated=1.2GB, MaxMemAllocated=3.4GB",
       "step:|step|10/?"},
      {"Step 120/1000", "step:|step|120/1000"},
      {"iter 50", "step:|step|50/?"},
      {"iteration 50/1000", "step:|step|50/1000"},
      {"Iter: 50", "step:|step|50/?"},
      {"[step 12] loss=0.5", "step:|step|12/?"},
      {" iteration       10/  500000 | consumed samples:          640 | elapsed time per iteration",
       "step:|step|10/500000"},
      {"global_step=120, loss=0.2", "step:|step|120/?"},
      {"GLOBAL_STEP: 7", "step:|step|7/?"},
      {"[Rank 0] step=100, skipped=0, lr=[0.0001]", "step:|step|100/?"},
      {"Train Epoch: 3 [1280/60000 (2%)]\tLoss: 0.241", "step:|step|1280/60000"},
      {"Saving checkpoint at step 100", "step:|step|100/?"},
      {"Saving checkpoint at step 100.", "step:|step|100/?"},
      {"2024/01/02 12:34:56 INFO step 7: loss 0.1", "step:|step|7/?"},
      {"epoch 3 | step 5 | loss 0.2", "step:|step|5/?"},
      {"Error: retrying the batch; step 40 done", "step:|step|40/?"},
  });
}

TEST(ProgressQuiet, LinesThatOnlyMentionProgressWords) {
  for (const std::string_view segment : {
           "learning rate warmup steps: 2000",
           "gradient_accumulation_steps=4",
           "max_steps = 1000",
           "steps_per_epoch: 500",
           "\"step_size\": 30",
           "Stepping into function",
           "  File \"/usr/lib/python3/site-packages/torch/optim/optimizer.py\", line 140, in step",
           "    optimizer.step()",
           "  File \"/work/iter.py\", line 5, in <module>",
           "see https://example.com/docs/step/12 and https://x.io/run?step=3",
           "12:34:56",
           "2024-01-02 12:34:56 [12:34:56, INFO] started",
           "loss 45%",
           "step 45%",
           "step 12:34:56",
           "step 1.5e-3",
           "/data/1/2",
           "2024/01/02",
           "1/2",
           "Epoch 1/10",
           "{'loss': 0.4589, 'grad_norm': 1.0493, 'learning_rate': 5.28e-06, 'epoch': 1.22}",
           "{'step': 100, 'loss': 0.3}",
           "  Total optimization steps = 1,000",
           "iterations: 10",
           "ValueError: bad batch at step 30",
           "[rank2]: ValueError: bad batch at step 30",
           "torch.cuda.OutOfMemoryError: CUDA out of memory at iteration 12",
           "RuntimeError: Exception: failed at step 7",
           "iterator 5",
           "warmup_step 30",
           "step2 3",
           "Test set: Average loss: 0.0339, Accuracy: 9887/10000 (99%)",
           "HW Exception by GPU node-9 (Agent handle: 0x64ff272d8ab0) reason :GPU Hang",
           "",
           "|",
           " [",
           "x [1",
           "foo [00:01, 3it/s]",
           "done 5 [00:01, n/a]",
           "copied 5 [00:01, 3 files/s]",
           "copied 5/9 [00:01<00:02, 3]",
           "99999999999999999999it [00:01, 1.00it/s]",
       }) {
    EXPECT_EQ(Show(segment), "-") << "segment: " << segment;
  }
}

TEST(ProgressUpdate, CompleteWhenCountReachesTotal) {
  EXPECT_TRUE(ParseProgress("Epoch 0: 100%|██████████| 8/8 [00:04<00:00,  1.66it/s]")->Complete());
  EXPECT_FALSE(ParseProgress("Epoch 0:  88%|████████▊ | 7/8 [00:04<00:00,  1.66it/s]")->Complete());
  EXPECT_FALSE(ParseProgress("25it [00:01, 19.92it/s]")->Complete());
}

// ---- Every segment of every real sample in shared/fixtures/progress -------------------------

fs::path FixtureDir() { return fs::path(TRAINWATCH_TEST_SHARED_DIR) / "fixtures" / "progress"; }

std::vector<std::string> Segments(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<std::string> segments;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find_first_of("\r\n", begin), text.size());
    if (end > begin) {
      segments.push_back(text.substr(begin, end - begin));
    }
    begin = end + 1;
  }
  return segments;
}

// Show() of one bar's refreshes.
std::vector<std::string> Bar(const std::string& key_and_label, const std::vector<int>& counts,
                             int total) {
  std::vector<std::string> shown;
  shown.reserve(counts.size());
  for (const int count : counts) {
    shown.push_back(key_and_label + "|" + std::to_string(count) + "/" + std::to_string(total));
  }
  return shown;
}

std::vector<int> Range(int from, int to, int by) {
  std::vector<int> values;
  for (int v = from; v <= to; v += by) {
    values.push_back(v);
  }
  return values;
}

// What Show() gives for each segment of each sample, in order.
std::map<std::string, std::vector<std::string>> FixtureExpectations() {
  return {
      {"hf-trainer-tqdm.log", {"-", "tqdm:||366/903", "-"}},
      {"keras2-progbar-verbose1-pipe.txt",
       {"-", "keras:|keras|60000/60000", "-", "keras:|keras|60000/60000", "-",
        "keras:|keras|29312/60000"}},
      {"keras3-progbar-intermediate-rendered.txt", {"keras:|keras|561/625"}},
      {"keras3-progbar-verbose1-rendered.txt",
       {"-", "keras:|keras|25/25", "-", "keras:|keras|25/25"}},
      {"keras3-progbar-verbose2.txt", {"-", "keras:|keras|5000/5000", "keras:|keras|1563/1563"}},
      {"lightning-progress-fit-stopped.log", Bar("tqdm:Epoch #|Epoch 0", {100, 100}, 100)},
      {"lightning-progress-newlines.log",
       {"tqdm:Training|Training|0/?", "tqdm:Training|Training|0/3666",
        "tqdm:Epoch #|Epoch 0|0/3666", "tqdm:Epoch #|Epoch 0|1/3666", "tqdm:Epoch #|Epoch 0|1/3666",
        "tqdm:Epoch #|Epoch 0|2/3666"}},
      {"tqdm-file-fast.log",
       [] {
         auto shown = Bar("tqdm:Loading checkpoint shards|Loading checkpoint shards",
                          Range(0, 300, 10), 300);
         shown.push_back(shown.back());
         return shown;
       }()},
      {"tqdm-file-it-per-s.log", Bar("tqdm:Epoch #|Epoch 0", {0, 1, 2, 3, 4, 5, 6, 7, 8, 8}, 8)},
      {"tqdm-file-no-total.log",
       [] {
         std::vector<std::string> shown;
         for (const int count : {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 25}) {
           shown.push_back("tqdm:||" + std::to_string(count) + "/?");
         }
         return shown;
       }()},
      {"tqdm-file-postfix-lightning-style.log",
       Bar("tqdm:Epoch #|Epoch 1",
           {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10}, 10)},
      {"tqdm-file-s-per-it.log", Bar("tqdm:Epoch #|Epoch 0", {0, 1, 2, 3, 4, 4}, 4)},
      {"tqdm-file-stalled-no-newline.log", Bar("tqdm:Epoch #|Epoch 2", {0, 1, 2, 3}, 61)},
  };
}

TEST(ProgressFixtures, EverySegmentOfEverySample) {
  if (!fs::is_directory(FixtureDir())) {
    GTEST_SKIP() << "no fixtures at " << FixtureDir()
                 << ": the shared/ folder sits beside the checkout only in development and CI";
  }
  const auto expectations = FixtureExpectations();
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(FixtureDir())) {
    const std::string name = entry.path().filename().string();
    const auto expected = expectations.find(name);
    // A new sample needs its expectations written down here.
    ASSERT_NE(expected, expectations.end()) << "no expectations for " << name;
    std::vector<std::string> shown;
    for (const std::string& segment : Segments(entry.path())) {
      shown.push_back(Show(segment));
    }
    EXPECT_EQ(shown, expected->second) << name;
    ++files;
  }
  EXPECT_EQ(files, expectations.size());
}

// The line framer cuts long lines, and a log can end anywhere: any piece of a sample parses
// quietly (run under the ASan build to see out-of-range reads).
TEST(ProgressFixtures, EveryPrefixAndSuffixOfEverySegmentParses) {
  if (!fs::is_directory(FixtureDir())) {
    GTEST_SKIP() << "no fixtures at " << FixtureDir();
  }
  for (const auto& entry : fs::directory_iterator(FixtureDir())) {
    for (const std::string& segment : Segments(entry.path())) {
      for (std::size_t i = 0; i <= segment.size(); ++i) {
        const std::string_view view = segment;
        EXPECT_NO_THROW(ParseProgress(view.substr(0, i)));
        EXPECT_NO_THROW(ParseProgress(view.substr(i)));
      }
    }
  }
}

}  // namespace
}  // namespace trainwatch::detect
