// Planted secrets against every way out of the real daemon (issue 11, red team item 2): one
// secret of each kind in a watched log (the firing line, its context lines, the tail), in the
// job's command line and environment and in the daemon's environment; an incident fires with
// a hook; then the bundle's every file, the manifest, incidents.jsonl, the daemon's log, the
// hook's environment, the metrics textfile and `trainwatch status` are searched for each.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

struct Planted {
  const char* kind;
  const char* secret;  // what must appear nowhere
};

// Each value is unique, so finding it anywhere is a leak of that kind.
// Letters only: a bar's metrics key spells some digits '#', and the search is for the literal.
constexpr char kUrlPassword[] = "AdmnPassZqXy";
constexpr char kGithubToken[] = "ghp_R3dT3amT0kenAbCdEfGhIjKlMnOpQrStUv12";
constexpr char kOpenAiKey[] = "sk-proj-R3dT3amOpenAiKeyAbCdEfGhIj0123456789";
constexpr char kAwsSecret[] = "R3dT3amAwsSecretKeyAbCdEfGhIjKlMnOp0123/";
constexpr char kPemBody1[] = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjR3dT3amPemLine1AbCdEfGhIj";
constexpr char kPemBody2[] = "AoIBAQC7R3dT3amPemLine2xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789Ab";
constexpr char kPemBody3[] = "BKcwggSjAgEAAoIBAQC7R3dT3amPemLine3AbCdEfGhIjKlMnOpQrStUvWxYz012";
constexpr char kFlagPassword[] = "FlagPwR3dT3am";
constexpr char kSpacedPassword[] = "SpacedPwR3dT3am";
constexpr char kWebhookPath[] = "T0R3DTEAM/B0R3DTEAM/R3dT3amWebhookSecretPath";
constexpr char kAzureKey[] = "UjNkVDNhbUF6dXJlQWNjb3VudEtleVZhbHVlMDEyMw==";
constexpr char kSentryKey[] = "5e7a1c0ffee0ddba11deadbeefcafe42";

constexpr Planted kPlanted[] = {
    {"url userinfo", kUrlPassword},   {"github token", kGithubToken},
    {"openai key", kOpenAiKey},       {"bare aws secret", kAwsSecret},
    {"pem body 1", kPemBody1},        {"pem body 2", kPemBody2},
    {"pem body 3", kPemBody3},        {"--password=", kFlagPassword},
    {"--password ", kSpacedPassword}, {"slack webhook", kWebhookPath},
    {"azure AccountKey", kAzureKey},  {"sentry dsn", kSentryKey},
};

class RedactionTest : public DaemonTest {
 protected:
  void TearDown() override {
    if (job_ > 0) {
      ::kill(job_, SIGKILL);
      ::waitpid(job_, nullptr, 0);
    }
  }

  // Every planted secret found in `text`, as "kind in where".
  static std::vector<std::string> Leaks(const std::string& text, const std::string& where) {
    std::vector<std::string> leaks;
    for (const Planted& planted : kPlanted) {
      if (text.find(planted.secret) != std::string::npos) {
        leaks.push_back(std::string(planted.kind) + " in " + where);
      }
    }
    return leaks;
  }

  pid_t job_ = -1;
};

TEST_F(RedactionTest, NoPlantedSecretLeavesTheDaemonByAnyWay) {
  const std::string webhook = std::string("https://hooks.slack.com/services/") + kWebhookPath;
  const std::string azure =
      std::string("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=") + kAzureKey +
      ";EndpointSuffix=core.windows.net";
  const std::string dsn = std::string("https://") + kSentryKey + "@o4505.ingest.sentry.io/42";
  WriteConfig({.capture = "capture:\n"
                          "  habana_logs: none\n"
                          "  commands:\n"
                          "    - {name: ps, argv: [ps, -eo, 'pid,args'], as: system/ps.txt}\n"
                          "metrics: {interval: 1s}\n"
                          "on_incident:\n"
                          "  - name: dump\n"
                          "    argv: [sh, -c, 'env | grep ^TRAINWATCH_ > \"$0\"', " +
                          Dir("hook-env.txt") + "]\n"});
  StartDaemon({"SLACK_WEBHOOK_URL=" + webhook, "AZURE_STORAGE_CONNECTION_STRING=" + azure,
               "SENTRY_DSN=" + dsn});

  // The job: its command line carries secrets as options; its environment as variables; it
  // keeps the log open (so the daemon knows it as the writer), prints, crashes and stays.
  const std::string log = Dir("logs/job.log");
  const std::string lines =
      std::string("step 1 loss 0.9\n") + "Downloading https://admin:" + kUrlPassword +
      "@weights.corp/ckpt.pt:  50%|#####     | " + "5/10 [00:01<00:01, 5.00it/s]\n" +
      "openai client ready with " + kOpenAiKey + "\n" + "aws AKIAIOSFODNN7EXAMPLE " + kAwsSecret +
      " loaded\n" + "alerts go to " + webhook + " and " + dsn + "\n" +
      "-----BEGIN PRIVATE KEY-----\n" + kPemBody1 + "\n" + kPemBody2 + "\n" + kPemBody1 + "\n" +
      kPemBody2 + "\n" + kPemBody1 + "\n" + kPemBody2 + "\n" + kPemBody3 + "\n" +
      "MARK 1 FIRE fetching https://admin:" + kUrlPassword + "@weights.corp/x with " +
      kGithubToken + "\n";
  std::ofstream(Dir("lines.txt")) << lines;
  const std::string script = "exec 3>>'" + log + "'; : --password=" + kFlagPassword +
                             " --password " + kSpacedPassword + " --api-key " + kOpenAiKey +
                             "; cat '" + Dir("lines.txt") + "' >&3; while :; do sleep 1 3>&-; done";
  job_ = ::fork();
  if (job_ == 0) {
    ::setenv("SLACK_WEBHOOK_URL", webhook.c_str(), 1);
    ::setenv("AZURE_STORAGE_CONNECTION_STRING", azure.c_str(), 1);
    ::setenv("STORAGE", azure.c_str(), 1);  // a neutral name: the value's shape decides
    ::setenv("SENTRY_DSN", dsn.c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), nullptr);
    ::_exit(127);
  }
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("hook-env.txt")); }, 30s))
      << daemon_->Log() << ReadFile(log);
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(Dir("hook-env.txt")).empty(); }, 5s));
  const std::string metrics_file = state() + "/trainwatch.prom";
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFile(metrics_file).find("trainwatch_incidents_total{kind=\"crash\"} 1") !=
               std::string::npos;
      },
      10s))
      << ReadFile(metrics_file);

  std::vector<std::string> leaks;
  auto check = [&](const std::string& text, const std::string& where) {
    const std::vector<std::string> found = Leaks(text, where);
    leaks.insert(leaks.end(), found.begin(), found.end());
  };
  const std::string incidents = ReadFile(state() + "/incidents.jsonl");
  check(incidents, "incidents.jsonl");
  check(daemon_->Log(), "the daemon's log");
  const std::string hook_env = ReadFile(Dir("hook-env.txt"));
  check(hook_env, "the hook's environment");
  check(ReadFile(metrics_file), "the metrics textfile");
  check(daemon_->Status(state()).dump(), "status");

  const std::vector<Json> records = ReadIncidents(state());
  ASSERT_FALSE(records.empty()) << incidents;
  std::string bundle;
  std::istringstream records_text(incidents);
  for (std::string line; std::getline(records_text, line);) {
    const Json record = Json::parse(line, nullptr, false);
    if (record.is_object() && record.contains("bundle") && record["bundle"].is_string()) {
      bundle = record["bundle"];
    }
  }
  ASSERT_FALSE(bundle.empty()) << incidents;
  const std::string root = Dir("unpacked");
  fs::create_directories(root);
  const std::string untar = "tar --zstd -xf '" + bundle + "' -C '" + root + "'";
  ASSERT_EQ(std::system(untar.c_str()), 0) << untar;
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      ++files;
      check(ReadFile(entry.path()), "bundle " + fs::relative(entry.path(), root).string());
    }
  }
  EXPECT_TRUE(leaks.empty()) << ::testing::PrintToString(leaks);

  // The text around the secrets is still there, and the places searched did hold them.
  EXPECT_GT(files, 5u);
  EXPECT_NE(ReadFile(metrics_file).find("bar=\"tqdm:Downloading https://admin:[REDACTED]@"),
            std::string::npos)
      << ReadFile(metrics_file);
  EXPECT_NE(hook_env.find("TRAINWATCH_INCIDENT_SUMMARY=MARK 1 FIRE fetching "
                          "https://admin:[REDACTED]@weights.corp/x with [REDACTED]"),
            std::string::npos)
      << hook_env;
  std::string tail;
  for (const auto& entry : fs::directory_iterator(root + "/logs")) {
    tail += ReadFile(entry.path());
  }
  EXPECT_NE(tail.find("openai client ready with [REDACTED]"), std::string::npos) << tail;
  const std::string ps = ReadFile(root + "/system/ps.txt");
  EXPECT_NE(ps.find("--password=[REDACTED]"), std::string::npos);

  EXPECT_NE(ReadFile(root + "/manifest.json").find("MARK 1 FIRE"), std::string::npos);
  EXPECT_NE(daemon_->Log().find("MARK 1 FIRE fetching https://admin:[REDACTED]@"),
            std::string::npos)
      << daemon_->Log();
}

}  // namespace
}  // namespace trainwatch::testing
