// A real Slurm on localhost — munged, slurmctld and slurmd from Debian's slurm-wlm, started by
// the test in a directory of its own, on ports of its own — running real jobs through sbatch
// beside a real daemon with `slurm.drain: true`, the Prolog running `trainwatch node-verdict`
// and the Epilog `trainwatch slurm-epilog`: the job's own failures never drain the node, a
// device error in the job's log drains it with a trainwatch reason, and the next job's Prolog
// refuses the node (the job requeued) until the incident is acknowledged. Skips, saying why,
// where Slurm is not installed.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon_fixture.h"
#include "support/file_text.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

bool Installed(const char* path) { return fs::exists(path); }

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

class SlurmTest : public DaemonTest {
 protected:
  void SetUp() override {
    for (const char* tool : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged",
                             "/usr/bin/sbatch", "/usr/bin/scontrol"}) {
      if (!Installed(tool)) {
        GTEST_SKIP() << tool << " is not installed (Debian's slurm-wlm and munge; "
                     << ".ci/install-deps installs them)";
      }
    }
    if (::geteuid() != 0) {
      GTEST_SKIP() << "slurmd runs jobs as their users: root only";
    }
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    host_ = std::string(name).substr(0, std::string(name).find('.'));
  }

  void TearDown() override {
    for (const std::string& pid_file : {Dir("slurm/slurmd.pid"), Dir("slurm/slurmctld.pid")}) {
      std::ifstream in(pid_file);
      pid_t pid = 0;
      if (in >> pid && pid > 0) {
        ::kill(pid, SIGTERM);
      }
    }
    std::this_thread::sleep_for(500ms);
  }

  // Runs a Slurm client (or any tool) with this cluster's config.
  RunResult Slurm(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"/usr/bin/env", "SLURM_CONF=" + conf_});
    return RunBinary(argv, "", std::chrono::seconds(60));
  }

  void StartSlurm() {
    fs::create_directories(Dir("slurm/state"));
    fs::create_directories(Dir("slurm/spool"));
    fs::create_directories(Dir("slurm/out"));
    // Ports of this run's own: a cluster left by another run cannot answer for this one.
    const int port = 17000 + static_cast<int>(::getpid() % 400) * 2;
    conf_ = Dir("slurm/slurm.conf");
    const std::string bin = TrainwatchBinary();
    // The Prolog refuses a node the verdict calls CRITICAL; the Epilog's answer is kept for the
    // test (and exits 0: the daemon's own drain is what is looked at here).
    std::ofstream(Dir("slurm/prolog.sh"))
        << "#!/bin/sh\n"
        << bin << " node-verdict --config " << config() << " --no-devices > " << Dir("slurm/out")
        << "/prolog-$SLURM_JOB_ID.txt 2>&1\n"
        << "rc=$?\necho \"exit $rc\" >> " << Dir("slurm/out") << "/prolog-$SLURM_JOB_ID.txt\n"
        << "[ $rc -eq 2 ] && exit 1\nexit 0\n";
    std::ofstream(Dir("slurm/epilog.sh"))
        << "#!/bin/sh\n"
        << bin << " slurm-epilog --config " << config() << " --wait 20s --settle 2s > "
        << Dir("slurm/out") << "/epilog-$SLURM_JOB_ID.txt 2>&1\n"
        << "echo \"exit $?\" >> " << Dir("slurm/out") << "/epilog-$SLURM_JOB_ID.txt\nexit 0\n";
    fs::permissions(Dir("slurm/prolog.sh"), fs::perms::owner_all);
    fs::permissions(Dir("slurm/epilog.sh"), fs::perms::owner_all);
    std::ofstream(conf_) << "ClusterName=twtest\n"
                         << "SlurmctldHost=" << host_ << "\n"
                         << "SlurmctldPort=" << port << "\nSlurmdPort=" << port + 1 << "\n"
                         << "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n"
                         << "StateSaveLocation=" << Dir("slurm/state") << "\n"
                         << "SlurmdSpoolDir=" << Dir("slurm/spool") << "\n"
                         << "SlurmctldPidFile=" << Dir("slurm/slurmctld.pid") << "\n"
                         << "SlurmdPidFile=" << Dir("slurm/slurmd.pid") << "\n"
                         << "SlurmctldLogFile=" << Dir("slurm/slurmctld.log") << "\n"
                         << "SlurmdLogFile=" << Dir("slurm/slurmd.log") << "\n"
                         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                         << "SchedulerType=sched/builtin\nSelectType=select/linear\n"
                         << "ReturnToService=2\nMpiDefault=none\nJobRequeue=1\n"
                         << "JobAcctGatherType=jobacct_gather/none\n"
                         << "AccountingStorageType=accounting_storage/none\n"
                         << "Prolog=" << Dir("slurm/prolog.sh") << "\n"
                         << "Epilog=" << Dir("slurm/epilog.sh") << "\n"
                         << "NodeName=" << host_ << " CPUs=" << std::thread::hardware_concurrency()
                         << " State=UNKNOWN\n"
                         << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    // munged: one for the machine, started if none answers (its key comes with the package).
    if (RunBinary({"/bin/sh", "-c", "munge -n | unmunge"}).exit_code != 0) {
      fs::create_directories("/run/munge");
      RunBinary({"/bin/chown", "munge:munge", "/run/munge"});
      const RunResult munged =
          RunBinary({"/usr/sbin/runuser", "-u", "munge", "--", "/usr/sbin/munged"});
      ASSERT_EQ(munged.exit_code, 0) << munged.err;
    }
    ASSERT_EQ(Slurm({"/usr/sbin/slurmctld", "-f", conf_}).exit_code, 0)
        << ReadFile(Dir("slurm/slurmctld.log"));
    ASSERT_EQ(Slurm({"/usr/sbin/slurmd", "-f", conf_}).exit_code, 0)
        << ReadFile(Dir("slurm/slurmd.log"));
    ASSERT_TRUE(WaitUntil(
        [&] {
          return Trimmed(Slurm({"/usr/bin/sinfo", "-h", "-o", "%t"}).out) == "idle";
        },
        30s))
        << Slurm({"/usr/bin/sinfo"}).out << ReadFile(Dir("slurm/slurmctld.log"))
        << ReadFile(Dir("slurm/slurmd.log"));
  }

  // sbatch of `script` (sh), its output in logs/<name>-<job id>.log; the job id.
  std::string Submit(const std::string& name, const std::string& script,
                     const std::vector<std::string>& options = {}) {
    std::vector<std::string> argv = {"/usr/bin/sbatch", "--parsable", "-o",
                                     Dir("logs") + "/" + name + "-%j.log"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--wrap", script});
    const RunResult submitted = Slurm(argv);
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return Trimmed(submitted.out.substr(0, submitted.out.find(';')));
  }

  bool QueueEmpty() { return Trimmed(Slurm({"/usr/bin/squeue", "-h"}).out).empty(); }

  std::string DrainReason() {
    return Trimmed(Slurm({"/usr/bin/sinfo", "-h", "-R", "-o", "%E"}).out);
  }

  std::vector<Json> Records(const char* key) const {
    std::vector<Json> records;
    std::ifstream in(state() + "/incidents.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      Json record = Json::parse(line, nullptr, false);
      if (record.is_object() && record.contains(key)) {
        records.push_back(std::move(record));
      }
    }
    return records;
  }

  std::string host_;
  std::string conf_;
};

constexpr int kApplicationFailures = 20;

TEST_F(SlurmTest, OnlyANodeVerdictDrainsTheNode) {
  StartSlurm();
  DaemonSettings settings;
  settings.cooldown = "0s";  // every job's failure its own incident
  // The bundle's Slurm collector alone: the others are the capture tests' (and take time).
  settings.capture =
      "capture: {habana_logs: none, commands: [{name: slurm-job, argv: [scontrol, show, job, "
      "'{slurm_job}'], as: slurm/job.txt}]}\n"
      "slurm: {drain: true, node_name: " +
      host_ + "}\n";
  WriteConfig(settings);
  StartDaemon({"SLURM_CONF=" + conf_});

  // The job's own failures, one after another (an array run one task at a time), each of a job
  // id of its own. Each lives 3 s: under a sanitizer the daemon took over a second to read a
  // new writer's environment, and a job gone by then names no job.
  const std::string array =
      Submit("app",
             "python3 -c 'import time; print(\"step 1\", flush=True); time.sleep(3); "
             "raise ValueError(\"bad shape in layer 3\")'",
             {"--array=1-" + std::to_string(kApplicationFailures) + "%1"});
  ASSERT_TRUE(WaitUntil([&] { return QueueEmpty(); }, 180s)) << Slurm({"/usr/bin/squeue"}).out;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadIncidents(state()).size() >= static_cast<std::size_t>(kApplicationFailures);
      },
      30s))
      << daemon_->Log();
  std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), static_cast<std::size_t>(kApplicationFailures)) << daemon_->Log();
  std::set<std::string> jobs;
  for (const Json& incident : incidents) {
    EXPECT_EQ(incident["cause"], "application") << incident.dump(1);
    EXPECT_EQ(incident["job"]["id_from"], "SLURM_JOB_ID") << incident.dump(1);
    jobs.insert(incident["job"]["id"].get<std::string>());
  }
  EXPECT_EQ(jobs.size(), static_cast<std::size_t>(kApplicationFailures));
  EXPECT_EQ(DrainReason(), "") << Slurm({"/usr/bin/sinfo", "-R"}).out;
  EXPECT_EQ(Trimmed(Slurm({"/usr/bin/sinfo", "-h", "-o", "%t"}).out), "idle");
  ASSERT_TRUE(WaitUntil([&] { return Records("scheduler_for").size() >= jobs.size(); }, 10s));
  for (const Json& action : Records("scheduler_for")) {
    EXPECT_FALSE(action["done"].get<bool>()) << action.dump();
    EXPECT_EQ(action["why"], "the job's own failure (cause application) never drains a node");
  }
  // Each Epilog said so, and each Prolog passed.
  for (const std::string& job : jobs) {
    const std::string epilog = ReadFile(Dir("slurm/out/epilog-" + job + ".txt"));
    EXPECT_NE(epilog.find("the node is not at fault\nexit 0"), std::string::npos) << epilog;
    const std::string prolog = ReadFile(Dir("slurm/out/prolog-" + job + ".txt"));
    EXPECT_NE(prolog.find("PASS: node "), std::string::npos) << prolog;
  }

  // A device error in the job's log: the node is drained, with the reason, soon after the end.
  const std::string device =
      Submit("device",
             "echo step 1; sleep 1; echo 'RuntimeError: CUDA error: uncorrectable ECC error "
             "encountered'; exit 1");
  ASSERT_TRUE(WaitUntil([&] { return QueueEmpty(); }, 60s)) << Slurm({"/usr/bin/squeue"}).out;
  const auto ended = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return DrainReason().starts_with("trainwatch: "); }, 10s))
      << DrainReason() << "\n"
      << daemon_->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - ended, 10s);
  EXPECT_NE(DrainReason().find("trainwatch: reboot_node (hardware): RuntimeError: CUDA error: "
                               "uncorrectable ECC error encountered"),
            std::string::npos)
      << DrainReason();
  incidents = ReadIncidents(state());
  const Json& failed = incidents.back();
  EXPECT_EQ(failed["job"]["id"], device) << failed.dump(1);
  EXPECT_EQ(failed["action"], "reboot_node");
  const std::string id = failed["id"];
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Json& action : Records("scheduler_for")) {
          if (action["scheduler_for"] == id) {
            return action["done"].get<bool>();
          }
        }
        return false;
      },
      10s))
      << daemon_->Log();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return fs::exists(Dir("slurm/out/epilog-" + device + ".txt")) &&
               ReadFile(Dir("slurm/out/epilog-" + device + ".txt")).find("exit ") !=
                   std::string::npos;
      },
      30s));
  const std::string epilog = ReadFile(Dir("slurm/out/epilog-" + device + ".txt"));
  EXPECT_NE(epilog.find("the node is at fault: failing the Epilog"), std::string::npos) << epilog;
  EXPECT_NE(epilog.find("exit 1"), std::string::npos) << epilog;
  // Its bundle holds the job as Slurm had it.
  std::string bundle;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Json& record : BundleRecords()) {
          if (record["bundle_for"] == id && record["bundle"].is_string()) {
            bundle = record["bundle"];
          }
        }
        return !bundle.empty();
      },
      30s));
  const RunResult listed =
      RunBinary({"/bin/tar", "--zstd", "-xOf", bundle, "--wildcards", "*slurm/job.txt"});
  EXPECT_NE(listed.out.find("JobId=" + device), std::string::npos) << listed.out << listed.err;

  // The node back, the next job's Prolog refuses it: the device failure since boot is
  // unacknowledged. Slurm drains it again and requeues the job.
  ASSERT_EQ(Slurm({"/usr/bin/scontrol", "update", "nodename=" + host_, "state=resume"}).exit_code,
            0);
  // Submitted while the node still showed drained, the job would wait for sched/builtin's next
  // periodic pass (a minute): submit once the node is idle.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Trimmed(Slurm({"/usr/bin/sinfo", "-h", "-o", "%t"}).out) == "idle";
      },
      30s))
      << Slurm({"/usr/bin/sinfo", "-R"}).out;
  const std::string next = Submit("next", "echo hello");
  ASSERT_TRUE(WaitUntil([&] { return DrainReason().find("Prolog") != std::string::npos; }, 90s))
      << DrainReason() << Slurm({"/usr/bin/squeue"}).out << ReadFile(Dir("slurm/slurmd.log"));
  const std::string prolog = ReadFile(Dir("slurm/out/prolog-" + next + ".txt"));
  EXPECT_NE(prolog.find("CRITICAL: node "), std::string::npos) << prolog;
  EXPECT_NE(prolog.find("incident " + id), std::string::npos) << prolog;
  EXPECT_NE(prolog.find("exit 2"), std::string::npos) << prolog;
  // Requeued and held, its command never run.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Slurm({"/usr/bin/scontrol", "show", "job", next})
                   .out.find("Reason=launch_failed_requeued_held") != std::string::npos;
      },
      20s))
      << Slurm({"/usr/bin/scontrol", "show", "job", next}).out;
  EXPECT_NE(Slurm({"/usr/bin/scontrol", "show", "job", next}).out.find("Restarts=1"),
            std::string::npos);
  EXPECT_EQ(ReadFile(Dir("logs/next-" + next + ".log")).find("hello"), std::string::npos);

  // Acknowledged, the node is fit again.
  ASSERT_EQ(RunBinary({TrainwatchBinary(), "incidents", "ack", id, "--config", config(), "--why",
                       "GPU replaced"})
                .exit_code,
            0);
  const RunResult verdict =
      RunBinary({TrainwatchBinary(), "node-verdict", "--config", config(), "--no-devices"});
  EXPECT_EQ(verdict.exit_code, 0) << verdict.out << verdict.err;
  Slurm({"/usr/bin/scancel", next});
}

// A device tool that never answers (a wedged device) makes the node CRITICAL, killed at its
// deadline.
TEST_F(DaemonTest, NodeVerdictOfAHungDeviceToolIsCritical) {
  WriteConfig({});
  fs::create_directories(Dir("bin"));
  std::ofstream(Dir("bin/hl-smi")) << "#!/bin/sh\nexec sleep 60\n";
  fs::permissions(Dir("bin/hl-smi"), fs::perms::owner_all);
  const auto start = std::chrono::steady_clock::now();
  const RunResult run =
      RunBinary({"/usr/bin/env", "PATH=" + Dir("bin") + ":/usr/bin:/bin", TrainwatchBinary(),
                 "node-verdict", "--config", config(), "--timeout", "1s", "--json"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  const Json verdict = Json::parse(run.out, nullptr, false);
  ASSERT_TRUE(verdict.is_object()) << run.out;
  EXPECT_EQ(verdict["verdict"], "CRITICAL");
  EXPECT_EQ(verdict["reasons"][0]["check"], "device");
  EXPECT_NE(verdict["reasons"][0]["text"].get<std::string>().find(
                "hl-smi did not answer within 1 s: a wedged device or driver"),
            std::string::npos)
      << run.out;
  // Without it, the node passes.
  const RunResult quiet =
      RunBinary({TrainwatchBinary(), "node-verdict", "--config", config(), "--no-devices"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out << quiet.err;
  EXPECT_NE(quiet.out.find("PASS: node "), std::string::npos) << quiet.out;
}

}  // namespace
}  // namespace trainwatch::testing
