// Bundles from the real daemon: fake hl-smi, nvidia-smi, npu-smi and docker on PATH that print
// the real tools' outputs (../shared/fixtures), a hanging hl-smi, planted secrets, a symlink
// out of $HABANA_LOGS, a full disk, and an incident storm against the retention limits.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(TRAINWATCH_TEST_SHARED_DIR) + "/fixtures";
const std::string kFakes = std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/integration/fakes";

// Planted in the daemon's environment (and so the capture's): none may reach a bundle.
const char* kAwsKey = "AKIAIOSFODNN7EXAMPLE";
const char* kHfToken = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
const char* kWandbKey = "0123456789abcdef0123456789abcdef01234567";
const char* kUrlPassword = "Tr0ub4dor3";

// A 1 MiB tmpfs at `dir` for as long as it lives: a full disk, for real.
class SmallDisk {
 public:
  static std::optional<SmallDisk> Mount(const std::string& dir) {
    fs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
      return std::nullopt;
    }
    return SmallDisk(dir);
  }
  SmallDisk(SmallDisk&& other) noexcept : dir_(std::exchange(other.dir_, "")) {}
  SmallDisk(const SmallDisk&) = delete;
  ~SmallDisk() {
    if (!dir_.empty()) {
      ::umount2(dir_.c_str(), MNT_DETACH);
    }
  }

 private:
  explicit SmallDisk(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

class CaptureTest : public DaemonTest {
 protected:
  void SetUp() override {
    if (!fs::exists(kFixtures)) {
      GTEST_SKIP() << "../shared/fixtures is absent: the fake tools print its real outputs";
    }
  }

  std::vector<std::string> Env(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> env = {
        "PATH=" + kFakes + ":" + std::getenv("PATH"),
        "TW_FIXTURES=" + kFixtures,
        std::string("AWS_ACCESS_KEY_ID=") + kAwsKey,
        std::string("HF_TOKEN=") + kHfToken,
        std::string("WANDB_API_KEY=") + kWandbKey,
        std::string("DATABASE_URL=postgres://trainer:") + kUrlPassword + "@db.internal:5432/runs",
        std::string("NOTES=pulled weights with ") + kHfToken + " yesterday",
    };
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }

  // The bundle records in incidents.jsonl.

  // Unpacks `bundle` with the real tar and returns where.
  std::string Unpack(const std::string& bundle) const {
    std::string into = Dir("unpacked");
    fs::remove_all(into);
    fs::create_directories(into);
    const std::string command = "tar --zstd -xf '" + bundle + "' -C '" + into + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return into;
  }

  Json Crash(const std::string& log) {
    Append(log,
           "step 3 loss 0.4\nRuntimeError: CUDA error: an illegal memory access was encountered\n");
    EXPECT_TRUE(WaitUntil([&] { return !BundleRecords().empty(); }, 60s)) << daemon_->Log();
    return BundleRecords().empty() ? Json() : BundleRecords()[0];
  }
};

TEST_F(CaptureTest, AnIncidentBundlesEveryCollectorRedactedWithAManifestThatMatches) {
  WriteConfig({.capture = "capture:\n"
                          "  habana_logs: habana\n"
                          "  extra_paths: [model.yaml]\n"});
  fs::create_directories(Dir("habana/rank0"));
  Append(Dir("habana/rank0/synapse_runtime.log"), "[12:00:00.000][SYN_API][info] init ok\n");
  Append(Dir("model.yaml"), "hidden: 4096\n");
  StartDaemon(Env());
  const Json record = Crash(Dir("logs/job.log"));
  ASSERT_FALSE(record.is_null());
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1);
  const std::string bundle = record["bundle"];
  EXPECT_EQ(fs::path(bundle).parent_path(), fs::path(state() + "/bundles"));
  struct stat info {};
  ASSERT_EQ(::stat(bundle.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_LT(record["firing_to_bundle_seconds"].get<double>(), 30);

  const std::string root = Unpack(bundle);
  // Every tool's real output, as the tool printed it.
  EXPECT_EQ(ReadFile(root + "/device/hl-smi.txt"), ReadFile(kFixtures + "/habana/hl-smi.txt"));
  EXPECT_EQ(ReadFile(root + "/device/hl-smi-q.txt"), ReadFile(kFixtures + "/habana/hl-smi-q.txt"));
  EXPECT_EQ(ReadFile(root + "/device/nvidia-smi-q.txt"),
            ReadFile(kFixtures + "/nvidia/nvidia-smi-q.txt"));
  EXPECT_EQ(ReadFile(root + "/device/npu-smi.txt"),
            ReadFile(kFixtures + "/ascend/npu-smi-info-910b2c-23.0.2.1.txt"));
  EXPECT_EQ(ReadFile(root + "/docker/ps.txt"),
            ReadFile(kFixtures + "/docker/docker-ps-no-trunc.txt"));
  EXPECT_NE(ReadFile(root + "/incident/firing-lines.txt").find("illegal memory access"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(root + "/habana_logs/rank0/synapse_runtime.log"));
  EXPECT_TRUE(fs::exists(root + "/system/meminfo.txt"));

  // The manifest matches what is inside: every file it lists, at its size, and nothing else.
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  EXPECT_EQ(manifest["schema_version"], 1);
  EXPECT_EQ(manifest["incident"]["kind"], "crash");
  // An illegal memory access: the job's own fault by the shipped verdicts.
  EXPECT_EQ(manifest["incident"]["cause"], "application") << manifest["incident"].dump(1);
  EXPECT_EQ(manifest["incident"]["action"], "inspect");
  std::set<std::string> listed;
  for (const Json& file : manifest["files"]) {
    listed.insert(file["path"].get<std::string>());
    EXPECT_EQ(fs::file_size(root + "/" + file["path"].get<std::string>()),
              file["bytes"].get<std::uint64_t>())
        << file.dump();
  }
  std::set<std::string> present;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      present.insert(fs::relative(entry.path(), root).string());
    }
  }
  present.erase("manifest.json");
  ASSERT_EQ(manifest["report"], "report.html");
  present.erase("report.html");  // the second member, made from the manifest
  EXPECT_EQ(listed, present);
  // The report's device table: hl-smi's 8 Gaudi2 and nvidia-smi's 16 V100 of the fixtures.
  const std::string report = ReadFile(root + "/report.html");
  EXPECT_NE(report.find("<td>hl-smi</td><td></td><td>HL-205</td>"), std::string::npos) << report;
  EXPECT_NE(report.find("<td>nvidia-smi</td>"), std::string::npos);
  std::map<std::string, std::string> status;
  for (const Json& collector : manifest["collectors"]) {
    status[collector["name"]] = collector["status"];
  }
  for (const char* name :
       {"hl-smi", "hl-smi-q", "hl-smi-csv", "nvidia-smi-q", "npu-smi", "docker-ps", "docker-stats",
        "environment", "system", "log_tails", "habana_logs", "extra_paths"}) {
    EXPECT_EQ(status[name], "ok") << name << "\n" << manifest["collectors"].dump(1);
  }

  // No planted secret anywhere in the bundle; the manifest names what was redacted.
  for (const std::string& file : present) {
    const std::string text = ReadFile(root + "/" + file);
    for (const char* secret : {kAwsKey, kHfToken, kWandbKey, kUrlPassword}) {
      EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << file;
    }
  }
  const std::string environ = ReadFile(root + "/system/trainwatch-environ.txt");
  EXPECT_NE(environ.find("AWS_ACCESS_KEY_ID=[REDACTED]"), std::string::npos) << environ;
  EXPECT_NE(environ.find("postgres://trainer:[REDACTED]@db.internal:5432/runs"), std::string::npos)
      << environ;
  const Json& redactions = manifest["redactions"];
  for (const char* rule : {"env:AWS_ACCESS_KEY_ID", "env:HF_TOKEN", "env:WANDB_API_KEY"}) {
    EXPECT_GE(redactions.value(rule, 0), 1) << rule << " " << redactions.dump();
  }

  // The CLI reads it back.
  const RunResult list =
      RunBinary({TrainwatchBinary(), "bundles", "list", "--config", config()}, "", 30s);
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(bundle), std::string::npos) << list.out;
  const RunResult show = RunBinary(
      {TrainwatchBinary(), "bundles", "show", "--config", config(), record["bundle_for"]}, "", 30s);
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("summary    RuntimeError: CUDA error"), std::string::npos) << show.out;
}

TEST_F(CaptureTest, AnExitedJobsCommandAndEnvironmentAreStillBundled) {
  WriteConfig({.capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon(Env());
  const std::string log = Dir("logs/job.log");
  // The writer keeps the log open (as a training job does), prints, crashes and is gone
  // before the capture starts.
  const std::string script = "exec 3>>'" + log + "'; echo 'step 1 loss 0.9' >&3; sleep 1.5; " +
                             "echo 'RuntimeError: CUDA error: an illegal memory access was " +
                             "encountered' >&3; exit 1";
  const pid_t job = ::fork();
  if (job == 0) {
    ::setenv("TRAIN_API_TOKEN", "tok-4242-secret", 1);
    ::setenv("MY_SETTING", "visible", 1);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(job, &status, 0);
  ASSERT_TRUE(WaitUntil([&] { return !BundleRecords().empty(); }, 30s)) << daemon_->Log();
  const Json record = BundleRecords()[0];
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1);
  const std::string root = Unpack(record["bundle"]);
  const std::string folder = root + "/processes/" + std::to_string(job) + "-sh";
  const std::string environ = ReadFile(folder + "/environ.txt");
  EXPECT_NE(environ.find("MY_SETTING=visible"), std::string::npos) << environ;
  EXPECT_NE(environ.find("TRAIN_API_TOKEN=[REDACTED]"), std::string::npos) << environ;
  EXPECT_EQ(environ.find("tok-4242-secret"), std::string::npos);
  EXPECT_NE(ReadFile(folder + "/cmdline.txt").find("exec 3>>"), std::string::npos);
}

TEST_F(CaptureTest, AHangingHlSmiIsKilledAtItsDeadlineAndTheBundleStillLands) {
  WriteConfig({.capture =
                   "capture:\n"
                   "  commands:\n"
                   "    - {name: hl-smi, argv: [hl-smi, -q], as: device/hl-smi-q.txt, "
                   "timeout: 1s}\n"
                   "    - {name: npu-smi, argv: [npu-smi, info], as: device/npu-smi.txt}\n"});
  StartDaemon(Env({"TW_FAKE_HL_SMI=hang"}));
  const auto start = std::chrono::steady_clock::now();
  const Json record = Crash(Dir("logs/job.log"));
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  EXPECT_EQ(record["timed_out"], Json::array({"hl-smi"}));
  const Json manifest = Json::parse(ReadFile(Unpack(record["bundle"]) + "/manifest.json"));
  for (const Json& collector : manifest["collectors"]) {
    if (collector["name"] == "hl-smi") {
      EXPECT_EQ(collector["status"], "timed_out") << collector.dump();
      EXPECT_LT(collector["duration_seconds"].get<double>(), 5);
    }
    if (collector["name"] == "npu-smi") {
      EXPECT_EQ(collector["status"], "ok");
    }
  }
  EXPECT_NE(daemon_->Log().find("killed at their deadline: hl-smi"), std::string::npos);
}

TEST_F(CaptureTest, ASymlinkInHabanaLogsToEtcIsNotFollowed) {
  WriteConfig({.capture = "capture: {habana_logs: habana, commands: []}\n"});
  fs::create_directories(Dir("habana"));
  Append(Dir("habana/synapse.log"), "[12:00:00.000][SYN_API][info] ok\n");
  fs::create_directory_symlink("/etc", Dir("habana/escape"));
  fs::create_symlink("/etc/hostname", Dir("habana/hostname.log"));
  StartDaemon(Env());
  const Json record = Crash(Dir("logs/job.log"));
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1);
  const std::string root = Unpack(record["bundle"]);
  EXPECT_TRUE(fs::exists(root + "/habana_logs/synapse.log"));
  EXPECT_FALSE(fs::exists(root + "/habana_logs/escape"));
  EXPECT_FALSE(fs::exists(root + "/habana_logs/hostname.log"));
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    EXPECT_EQ(entry.path().filename().string().find("passwd"), std::string::npos) << entry.path();
  }
}

TEST_F(CaptureTest, AnIncidentStormNeverExceedsTheRetentionLimits) {
  constexpr int kIncidents = 500;
  constexpr std::size_t kMaxCount = 5;
  constexpr std::uint64_t kMaxBytes = 200 * 1024;
  WriteConfig({.settle = "0s",
               .cooldown = "0s",
               .capture = "capture: {max_count: 5, max_bytes: 200KiB, commands: [], "
                          "habana_logs: none, log_tail_bytes: 4KiB}\n"});
  StartDaemon(Env());
  const std::string bundles = state() + "/bundles";
  std::size_t most = 0;
  std::uint64_t most_bytes = 0;
  auto check = [&] {
    std::size_t count = 0;
    std::uint64_t bytes = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(bundles, ec)) {
      if (entry.path().extension() == ".zst" && entry.path().filename().string()[0] != '.') {
        ++count;
        bytes += entry.file_size(ec);
      }
    }
    most = std::max(most, count);
    most_bytes = std::max(most_bytes, bytes);
  };
  for (int i = 1; i <= kIncidents; ++i) {
    Append(Dir("logs/job.log"), "MARK " + std::to_string(i) + " FIRE\n");
    std::this_thread::sleep_for(5ms);
    check();
  }
  WaitUntil(
      [&] {
        check();
        return BundleRecords().size() >= 20 && !daemon_->Status(state()).is_null();
      },
      60s);
  check();
  EXPECT_GE(BundleRecords().size(), 20u) << "captures should have kept going";
  EXPECT_LE(most, kMaxCount);
  EXPECT_LE(most_bytes, kMaxBytes);
  EXPECT_TRUE(daemon_->running());
}

TEST_F(CaptureTest, AFullDiskLeavesNoPartialBundleAndRetentionMakesRoomForTheNext) {
  WriteConfig({.settle = "0s",
               .cooldown = "0s",
               .capture = "capture: {bundles_dir: disk, commands: [], habana_logs: none, "
                          "log_tail_bytes: 4KiB, min_free: 0B}\n"});
  const std::optional<SmallDisk> disk = SmallDisk::Mount(Dir("disk"));
  if (!disk) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno)
                 << "): needs root with CAP_SYS_ADMIN";
  }
  // An old bundle (retention may delete it) and a file that is not one (it may not): together
  // they fill the disk.
  std::ofstream(Dir("disk/20200101T000000Z_host_old.rule_old.tar.zst"))
      << std::string(400 * 1024, 'x');
  {
    std::ofstream filler(Dir("disk/filler"));
    filler << std::string(1024 * 1024, 'f');  // the write stops where the disk is full
  }
  StartDaemon(Env());
  // 1: only deleting the old bundle makes room.
  Append(Dir("logs/job.log"), "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return !BundleRecords().empty(); }, 30s)) << daemon_->Log();
  const Json first = BundleRecords()[0];
  // Retention deleted the old bundle to make room, and the bundle landed.
  EXPECT_TRUE(first["bundle"].is_string()) << first.dump(1) << daemon_->Log();
  EXPECT_FALSE(fs::exists(Dir("disk/20200101T000000Z_host_old.rule_old.tar.zst")));
  // 2: no bundle left to delete and the disk full of what retention cannot remove: the next
  // bundle fails, cleanly, and the daemon says why and goes on.
  fs::remove(first["bundle"].get<std::string>());
  {
    std::ofstream more(Dir("disk/more-filler"));
    more << std::string(1024 * 1024, 'f');
  }
  Append(Dir("logs/job.log"), "MARK 2 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return BundleRecords().size() >= 2; }, 30s)) << daemon_->Log();
  const Json second = BundleRecords()[1];
  EXPECT_TRUE(second["bundle"].is_null()) << second.dump(1);
  EXPECT_NE(second.value("error", "").find("No space left on device"), std::string::npos)
      << second.dump(1);
  EXPECT_NE(daemon_->Log().find("no bundle: "), std::string::npos) << daemon_->Log();
  for (const auto& entry : fs::directory_iterator(Dir("disk"))) {
    EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos) << entry.path();
  }
  EXPECT_TRUE(daemon_->running());
  // 3: space comes back; the next incident's bundle lands.
  fs::remove(Dir("disk/more-filler"));
  Append(Dir("logs/job.log"), "MARK 3 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return BundleRecords().size() >= 3; }, 30s)) << daemon_->Log();
  EXPECT_TRUE(BundleRecords()[2]["bundle"].is_string()) << BundleRecords()[2].dump(1);
}

TEST_F(CaptureTest, WhereAFullBundleWouldNotFitAReducedOneLandsAndSaysSo) {
  WriteConfig({.capture = "capture: {bundles_dir: disk, commands: [], habana_logs: none, "
                          "log_tail_bytes: 4MiB, min_free: 0B}\n"});
  const std::optional<SmallDisk> disk = SmallDisk::Mount(Dir("disk"));
  if (!disk) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno)
                 << "): needs root with CAP_SYS_ADMIN";
  }
  // A 2 MB log: its tail alone is more than the whole disk.
  std::string big;
  for (int i = 0; big.size() < 2'000'000; ++i) {
    big += "step " + std::to_string(i) + " loss 0." + std::to_string(i * 7919 % 100000) + "\n";
  }
  Append(Dir("logs/job.log"), big);
  StartDaemon(Env());
  const Json record = Crash(Dir("logs/job.log"));
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1) << daemon_->Log();
  EXPECT_TRUE(record["reduced"].get<bool>()) << record.dump(1);
  const std::string root = Unpack(record["bundle"]);
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  EXPECT_TRUE(manifest["reduced"].get<bool>());
  EXPECT_NE(manifest.value("reduced_why", "").find("min_free"), std::string::npos);
  EXPECT_FALSE(fs::exists(root + "/logs"));  // the log tails were left out
  EXPECT_TRUE(fs::exists(root + "/incident/firing-lines.txt"));
}

}  // namespace
}  // namespace trainwatch::testing
