#include "detect/fingerprint.h"

#include <gtest/gtest.h>

namespace trainwatch::detect {
namespace {

Incident Crash(std::string summary, std::string rule = "pytorch.cuda.oom") {
  Incident incident;
  incident.kind = rules::RuleKind::kCrash;
  incident.rules = {rule};
  incident.verdict.rule = rule;
  incident.summary = std::move(summary);
  return incident;
}

TEST(NormalizeErrorText, TakesOutWhereAndWhenButKeepsWhat) {
  EXPECT_EQ(NormalizeErrorText("[rank3]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried "
                               "to allocate 2.00 GiB (GPU 3; 79.11 GiB total capacity)"),
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate # GiB (GPU #; # "
            "GiB total capacity)");
  EXPECT_EQ(NormalizeErrorText("2024-01-02 12:34:56,789 RuntimeError: shape [8, 1024] at "
                               "0x7f3a2c001000   pid 4242"),
            "RuntimeError: shape [#, #] at <addr> pid #");
  EXPECT_EQ(NormalizeErrorText("  "), "");
}

TEST(Fingerprint, TheSameFailureOnEveryRankAndAfterARestartIsOne) {
  const std::string first = Fingerprint(
      Crash("[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
            "GiB (GPU 0; 79.11 GiB total capacity; 70.02 GiB already allocated)"));
  for (int rank = 1; rank < 8; ++rank) {
    EXPECT_EQ(Fingerprint(Crash("[rank" + std::to_string(rank) +
                                "]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
                                "allocate 1.50 GiB (GPU " +
                                std::to_string(rank) +
                                "; 79.11 GiB total capacity; 71.20 GiB already allocated)")),
              first);
  }
  EXPECT_EQ(first.size(), 16u);
  // A writer that vanished: another pid after the restart.
  Incident killed =
      Crash("process 4242 (python3) stopped with 'Epoch 0' at 15/40", "writer.exited");
  Incident again = Crash("process 9917 (python3) stopped with 'Epoch 0' at 31/40", "writer.exited");
  EXPECT_EQ(Fingerprint(killed), Fingerprint(again));
}

TEST(NormalizeFrame, KeepsTheFileNameAndFunction) {
  EXPECT_EQ(NormalizeFrame(R"(File "/opt/venv/job/train.py", line 88, in train_step)"),
            "train.py in train_step");
  EXPECT_EQ(NormalizeFrame(R"(File "<frozen runpy>", line 198, in _run_module_as_main)"),
            "<frozen runpy> in _run_module_as_main");
  EXPECT_EQ(NormalizeFrame("File at 0x7f00 line 12"), "File at <addr> line #");
}

Incident RaisedAt(const std::string& frame) {
  Incident incident = Crash("KeyError: 'labels'", "python.traceback");
  Firing firing;
  firing.event.summary = incident.summary;
  firing.event.frame = frame;
  incident.firings.push_back(firing);
  return incident;
}

TEST(Fingerprint, WhereATracebackWasRaisedCountsButNotItsLineOrDirectory) {
  const std::string here = Fingerprint(RaisedAt(R"(File "/job/a/data.py", line 41, in collate)"));
  EXPECT_EQ(Fingerprint(RaisedAt(R"(File "/node7/b/data.py", line 44, in collate)")), here);
  EXPECT_NE(Fingerprint(RaisedAt(R"(File "/job/a/train.py", line 41, in step)")), here);
  EXPECT_NE(Fingerprint(Crash("KeyError: 'labels'", "python.traceback")), here);
}

TEST(Fingerprint, DifferentFailuresDiffer) {
  const std::string oom = Fingerprint(Crash("CUDA out of memory. Tried to allocate 2.00 GiB"));
  EXPECT_NE(Fingerprint(Crash("KeyError: 'labels'", "python.traceback")),
            Fingerprint(Crash("KeyError: 'input_ids'", "python.traceback")));
  EXPECT_NE(
      Fingerprint(Crash("CUDA out of memory. Tried to allocate 2.00 GiB", "python.traceback")),
      oom);
  Incident hang = Crash("CUDA out of memory. Tried to allocate 2.00 GiB");
  hang.kind = rules::RuleKind::kHang;
  EXPECT_NE(Fingerprint(hang), oom);
}

}  // namespace
}  // namespace trainwatch::detect
