// The real binary against bad input: huge lines, binary data, empty and missing files,
// standard input. It must give a clean result or a clear message, with bounded memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "support/run_binary.h"
#include "support/sanitized.h"
#include "support/temp_dir.h"

namespace trainwatch {
namespace {

namespace fs = std::filesystem;
using testing::RunBinary;
using testing::TrainwatchBinary;

// Peak memory budget of a scan, whatever the input (the bound is 64 MB). Sanitizer
// builds carry shadow memory, so the bound only holds for normal builds.
constexpr long kMaxRssKib = 64 * 1024;
constexpr bool kMeasureMemory = TRAINWATCH_SANITIZED == 0;

class ScanCliTest : public ::testing::Test {
 protected:
  std::string PathOf(const std::string& name) { return temp_.PathOf(name); }
  testing::RunResult Scan(std::vector<std::string> args, const std::string& stdin_path = "") {
    std::vector<std::string> argv = {TrainwatchBinary(), "scan", "--rules",
                                     TRAINWATCH_TEST_RULES_DIR};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunBinary(argv, stdin_path);
  }
  testing::TempDir temp_;
};

TEST_F(ScanCliTest, HundredMegabyteProgressLineWithCrashAtItsEnd) {
  // A tqdm stream with no newline for 100 MB, then the crash glued after the last update.
  const std::string path = PathOf("tqdm.log");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string update = "\r 45%|####5     | 450/1000 [00:10<00:12, 45.00it/s]";
    std::string block;
    while (block.size() < (1 << 20)) {
      block += update;
    }
    for (int i = 0; i < 100; ++i) {
      out << block;
    }
    out << "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
  }
  const auto run = Scan({"--format", "jsonl", path});
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto event = nlohmann::json::parse(run.out.substr(0, run.out.find('\n')));
  EXPECT_EQ(event["rule"], "pytorch.cuda.oom");
  EXPECT_EQ(event["line"], 1);
  EXPECT_EQ(event["cut"], true);
  // The crash is glued to the last update, so it shares that segment.
  EXPECT_EQ(event["text"],
            " 45%|####5     | 450/1000 [00:10<00:12, 45.00it/s]RuntimeError: "
            "CUDA out of memory. Tried to allocate 2.00 GiB");
  if (kMeasureMemory) {
    EXPECT_LT(run.max_rss_kib, kMaxRssKib);
  }
}

TEST_F(ScanCliTest, HundredMegabyteLineWithoutNewlineOrCarriageReturn) {
  const std::string path = PathOf("one.log");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(1 << 20, 'z');
    for (int i = 0; i < 100; ++i) {
      out << block;
    }
  }
  const auto run = Scan({path});
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(run.out.empty());
  if (kMeasureMemory) {
    EXPECT_LT(run.max_rss_kib, kMaxRssKib);
  }
}

TEST_F(ScanCliTest, BinaryDataGivesValidJsonAndNoCrash) {
  const std::string path = PathOf("random.bin");
  {
    std::mt19937 random(42);
    std::string bytes(4 << 20, '\0');
    for (char& c : bytes) {
      c = static_cast<char>(random());
    }
    // Real failure text inside the noise must still be found.
    bytes += "\nSegmentation fault (core dumped)\n";
    std::ofstream(path, std::ios::binary) << bytes;
  }
  const auto run = Scan({"--format", "jsonl", path});
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  std::istringstream lines(run.out);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    const auto event = nlohmann::json::parse(line);  // throws on invalid JSON or UTF-8
    found = found || event["rule"] == "system.fatal_signal";
  }
  EXPECT_TRUE(found);
}

TEST_F(ScanCliTest, EmptyFileIsClean) {
  const std::string path = PathOf("empty.log");
  std::ofstream(path).close();
  const auto run = Scan({path});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(run.out.empty());
  EXPECT_TRUE(run.err.empty());
}

TEST_F(ScanCliTest, MissingFileIsNamedAndExits2) {
  const auto run = Scan({PathOf("nope.log")});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(PathOf("nope.log") + ": No such file or directory"), std::string::npos)
      << run.err;
}

// Several files are scanned at once (a core each), and print as if scanned in order: each
// file's events together, in the order the files were named; a missing one among them is
// named and makes the exit 2, the others are still scanned.
TEST_F(ScanCliTest, SeveralFilesAreScannedAtOnceAndPrintInOrder) {
  std::vector<std::string> args;
  for (int i = 0; i < 6; ++i) {
    const std::string path = PathOf("rank" + std::to_string(i) + ".log");
    std::ofstream file(path);
    for (int line = 0; line < 20000; ++line) {
      file << "step " << line << " loss 0.5\n";
    }
    file << "[rank" << i << "]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank " << i
         << "] Heartbeat monitor timed out! Process will be terminated\n";
    args.push_back(path);
    if (i == 3) {
      args.push_back(PathOf("missing.log"));
    }
  }
  // After --rules DIR: one value per --rules, the rest are the files.
  const auto run = Scan(args);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find(PathOf("missing.log") + ": No such file or directory"), std::string::npos)
      << run.err;
  std::size_t at = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string expected =
        PathOf("rank" + std::to_string(i) + ".log") + ":20001: hang pytorch.nccl.heartbeat_timeout";
    const std::size_t found = run.out.find(expected, at);
    ASSERT_NE(found, std::string::npos) << expected << " not after byte " << at << ":\n" << run.out;
    at = found + expected.size();
  }
}

TEST_F(ScanCliTest, ReadsStandardInput) {
  const std::string path = PathOf("in.log");
  std::ofstream(path) << "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor "
                         "timed out! Process will be terminated\n";
  const auto run = Scan({"-"}, path);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.out.find("<stdin>:1: hang pytorch.nccl.heartbeat_timeout"), std::string::npos)
      << run.out;
  // Named twice, standard input is read once, in order (never by two threads at once).
  const auto twice = Scan({"-", "-"}, path);
  EXPECT_EQ(twice.exit_code, 1) << twice.err;
  EXPECT_EQ(twice.out, run.out);
}

TEST_F(ScanCliTest, KernelLogTagSelectsKernelRules) {
  const std::string path = PathOf("kmsg.log");
  std::ofstream(path) << "[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', "
                         "name=<unknown>, GPU has fallen off the bus.\n"
                         "[12345.678901] python invoked oom-killer: gfp_mask=0x140cca, order=0\n"
                         "[12345.700000] Out of memory: Killed process 4242 (python) "
                         "total-vm:123456789kB, anon-rss:98765432kB\n";
  const auto run = Scan({"--tag", "kmsg", path});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.out.find(":1: device nvidia.xid.device_fatal"), std::string::npos) << run.out;
  // The report's first line names who asked for memory; the line naming the victim is the crash.
  EXPECT_NE(run.out.find(":2: warning system.oom_killer_invoked"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(":3: crash system.oom_killer: [12345.700000] Out of memory: Killed "
                         "process 4242 (python)"),
            std::string::npos)
      << run.out;
}

// After the firing lines, the answer the daemon would have given: the incidents they make, with
// the rank that failed first, the verdict and the fingerprint, and what followed them up; in
// JSON Lines, the records incidents.jsonl would hold.
TEST_F(ScanCliTest, AScanEndsWithTheIncidentsTheDaemonWouldHaveOpened) {
  const std::string rank0 = PathOf("rank0.log");
  const std::string rank2 = PathOf("rank2.log");
  std::ofstream(rank2)
      << "2024-02-21 05:00:00,100 INFO step 10\n"
         "2024-02-21 05:00:01,000 ERROR Traceback (most recent call last):\n"
         "  File \"/opt/job/train.py\", line 88, in step\n"
         "    out = model(x)\n"
         "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x12 and 16x4)\n";
  std::ofstream(rank0) << "2024-02-21 05:00:40,000 ERROR RuntimeError: "
                          "[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
                          "closed by peer [10.0.0.2]:29500\n";
  const auto text = Scan({rank0, rank2});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("trainwatch: 1 incident the daemon would have opened from these lines:\n"
                          "incident 1  crash: RuntimeError: mat1 and mat2 shapes cannot be "
                          "multiplied (32x12 and 16x4)\n"
                          "  first      rank 2, " +
                          rank2 + ":2 "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  opened     2024-02-21T05:00:01.000Z\n"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  follow-up  " + rank0 + ":1 pytorch.gloo.error: "), std::string::npos)
      << "40 s after the crash was written, a peer's 'Connection closed' follows it up\n"
      << text.out;

  const auto jsonl = Scan({"--format", "jsonl", rank0, rank2});
  EXPECT_EQ(jsonl.exit_code, 1) << jsonl.err;
  std::istringstream lines(jsonl.out);
  std::vector<nlohmann::json> incidents;
  std::vector<nlohmann::json> follow_ups;
  for (std::string line; std::getline(lines, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.contains("firings")) {
      incidents.push_back(record);
    } else if (record.contains("follow_up_for")) {
      follow_ups.push_back(record);
    } else {
      EXPECT_TRUE(record.contains("file")) << line;
    }
  }
  ASSERT_EQ(incidents.size(), 1u) << jsonl.out;
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_EQ(incidents[0]["first_failing_rank"], 2);
  EXPECT_EQ(incidents[0]["cause"], "application");
  EXPECT_EQ(incidents[0]["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_EQ(incidents[0]["opened"], "2024-02-21T05:00:01.000Z");
  ASSERT_EQ(follow_ups.size(), 1u) << jsonl.out;
  EXPECT_EQ(follow_ups[0]["follow_up_for"], incidents[0]["id"]);
  EXPECT_EQ(follow_ups[0]["rank"], 0);
  // With a config whose follow_up window is off, the peer's line opens an incident of its own.
  const std::string config = PathOf("trainwatch.yaml");
  std::ofstream(config) << "incident: {follow_up: 0s}\n";
  const auto configured = Scan({"--config", config, rank0, rank2});
  EXPECT_NE(configured.out.find("trainwatch: 2 incidents the daemon would have opened"),
            std::string::npos)
      << configured.out << configured.err;
}

// A log of warnings only fired, and opened nothing: scan says so.
TEST_F(ScanCliTest, WarningsAloneOpenNoIncident) {
  const std::string path = PathOf("warn.log");
  std::ofstream(path) << "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process "
                         "812914 closing signal SIGTERM\n";
  const auto run = Scan({path});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find(": warning "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("trainwatch: no incident: what fired were warnings, which open none"),
            std::string::npos)
      << run.out;
}

TEST_F(ScanCliTest, UsageErrorsExit2) {
  EXPECT_EQ(RunBinary({TrainwatchBinary(), "scan", "--format", "xml", "x.log"}).exit_code, 2);
  EXPECT_EQ(RunBinary({TrainwatchBinary(), "scan"}).exit_code, 2);
  // A mistyped command is named, with the real ones (CLI11 alone says "A subcommand is
  // required").
  const testing::RunResult typo = RunBinary({TrainwatchBinary(), "stauts"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(
      typo.err.find("unknown command 'stauts' (the commands: check, daemon, wrap, status, reload,"),
      std::string::npos)
      << typo.err;
  EXPECT_EQ(typo.err.find("manual"), std::string::npos) << typo.err;
  // Every command that reads a config says where it looks without --config.
  for (const char* command : {"status", "snapshot"}) {
    EXPECT_NE(RunBinary({TrainwatchBinary(), command, "--help"})
                  .out.find("(default: $TRAINWATCH_CONFIG, /etc/trainwatch/trainwatch.yaml"),
              std::string::npos)
        << command;
  }
  EXPECT_EQ(RunBinary({TrainwatchBinary(), "--help"}).exit_code, 0);
}

TEST_F(ScanCliTest, CheckFindsTheShippedPacksWithoutFlags) {
  const auto run = RunBinary({TrainwatchBinary(), "check"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("rules in 9 files OK"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace trainwatch
