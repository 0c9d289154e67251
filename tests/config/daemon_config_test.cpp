#include "config/daemon_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "support/temp_dir.h"

namespace trainwatch::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

const EnvLookup kEnv = MapEnv({{"HOME", "/home/ada"}, {"HABANA_LOGS", "/var/log/habana"}});

ConfigLoad Parse(const std::string& text, const EnvLookup& env = kEnv) {
  return ParseDaemonConfig(text, "/etc/trainwatch/daemon.yaml", env);
}

// Every diagnostic, formatted as the operator sees it, one per line.
std::string Errors(const ConfigLoad& load) {
  std::string out;
  for (const Diagnostic& error : load.errors) {
    out += FormatDiagnostic(error) + "\n";
  }
  return out;
}

constexpr const char* kFull = R"(state_dir: ${STATE_DIRECTORY:-~/.local/state/trainwatch}
rules: [/usr/share/trainwatch/rules, ./my-rules.yaml]
incident: {settle: 3s, cooldown: 10m, context_lines: 50}
watch: {mode: poll, poll_interval: 500ms, rescan_interval: 10s}
wrap: {log_file: "${TRAINWATCH_LOGS:-~/trainwatch-logs}/wrap-{pid}.log"}
sources:
  - name: train
    tags: [train]
    paths: ["${TRAINWATCH_LOGS:-~/trainwatch-logs}/**/*.log", "runs/*.out"]
    start_at: beginning
  - name: habana
    tags: [habana, train]
    paths: ["${HABANA_LOGS:-~/.habana_logs}/**/*.log"]
  - name: kernel
    tags: [kmsg]
    kmsg: true
  - name: processes
    tags: [processes]
    processes: true
    blocked_after: 45s
)";

TEST(DaemonConfig, ParsesAFullConfig) {
  const ConfigLoad load = Parse(kFull);
  ASSERT_TRUE(load.config.has_value()) << Errors(load);
  const DaemonConfig& config = *load.config;
  EXPECT_EQ(config.file, "/etc/trainwatch/daemon.yaml");
  EXPECT_EQ(config.state_dir, "/home/ada/.local/state/trainwatch");
  EXPECT_EQ(config.rule_paths, (std::vector<std::string>{"/usr/share/trainwatch/rules",
                                                         "/etc/trainwatch/my-rules.yaml"}));
  EXPECT_EQ(config.incident.settle, seconds(3));
  EXPECT_EQ(config.incident.cooldown, minutes(10));
  EXPECT_EQ(config.incident.context_lines, 50u);
  EXPECT_EQ(config.watch.mode, WatchMode::kPoll);
  EXPECT_EQ(config.watch.poll_interval, milliseconds(500));
  EXPECT_EQ(config.watch.rescan_interval, seconds(10));
  EXPECT_EQ(config.wrap_log_file, "/home/ada/trainwatch-logs/wrap-{pid}.log");
  ASSERT_EQ(config.sources.size(), 4u);

  const SourceConfig& train = config.sources[0];
  EXPECT_EQ(train.name, "train");
  EXPECT_EQ(train.tags, std::vector<std::string>{"train"});
  EXPECT_EQ(train.paths, (std::vector<std::string>{"/home/ada/trainwatch-logs/**/*.log",
                                                   "/etc/trainwatch/runs/*.out"}));
  EXPECT_FALSE(train.kmsg);
  EXPECT_EQ(train.start_at, StartAt::kBeginning);
  EXPECT_EQ(train.where.file, "/etc/trainwatch/daemon.yaml");
  EXPECT_EQ(train.where.line, 7);
  EXPECT_EQ(train.where.column, 5);

  const SourceConfig& habana = config.sources[1];
  EXPECT_EQ(habana.tags, (std::vector<std::string>{"habana", "train"}));
  EXPECT_EQ(habana.paths, std::vector<std::string>{"/var/log/habana/**/*.log"});
  EXPECT_EQ(habana.start_at, StartAt::kEnd);

  const SourceConfig& kernel = config.sources[2];
  EXPECT_TRUE(kernel.kmsg);
  EXPECT_TRUE(kernel.paths.empty());
  EXPECT_EQ(kernel.where.line, 14);
  EXPECT_FALSE(kernel.processes);

  const SourceConfig& processes = config.sources[3];
  EXPECT_TRUE(processes.processes);
  EXPECT_FALSE(processes.kmsg);
  EXPECT_TRUE(processes.paths.empty());
  EXPECT_EQ(processes.blocked_after, seconds(45));
  EXPECT_EQ(kernel.blocked_after, seconds(30));
}

TEST(DaemonConfig, ParsesMetricsAndHooks) {
  const ConfigLoad load = Parse(
      "state_dir: /var/lib/trainwatch\n"
      "metrics: {path: /var/lib/prometheus/node-exporter/trainwatch.prom, interval: 15s}\n"
      "on_incident:\n"
      "  - name: upload\n"
      "    argv: [sh, -c, 'aws s3 cp \"$TRAINWATCH_BUNDLE\" s3://b/']\n"
      "    timeout: 5m\n"
      "    when: [crash, hang]\n"
      "  - name: chat\n"
      "    argv: [curl, -fsS, https://chat.example/hook]\n");
  ASSERT_TRUE(load.config) << Errors(load);
  EXPECT_TRUE(load.config->metrics.enabled);
  EXPECT_EQ(load.config->metrics.path, "/var/lib/prometheus/node-exporter/trainwatch.prom");
  EXPECT_EQ(load.config->metrics.interval, seconds(15));
  ASSERT_EQ(load.config->on_incident.size(), 2u);
  const CommandConfig& upload = load.config->on_incident[0];
  EXPECT_EQ(upload.name, "upload");
  EXPECT_EQ(upload.argv.at(2), "aws s3 cp \"$TRAINWATCH_BUNDLE\" s3://b/");
  EXPECT_EQ(upload.timeout, minutes(5));
  EXPECT_TRUE(upload.when.crash && upload.when.hang);
  EXPECT_FALSE(upload.when.device || upload.when.manual || upload.when.warning);
  const CommandConfig& chat = load.config->on_incident[1];
  EXPECT_EQ(chat.timeout, seconds(60));  // a hook's default: uploads take longer than hl-smi
  EXPECT_TRUE(chat.when.crash && chat.when.hang && chat.when.device && chat.when.manual);
  EXPECT_FALSE(chat.when.warning);

  const ConfigLoad defaults = Parse("state_dir: /s\n");
  ASSERT_TRUE(defaults.config) << Errors(defaults);
  EXPECT_EQ(defaults.config->metrics.path, "/s/trainwatch.prom");
  EXPECT_EQ(defaults.config->metrics.interval, seconds(5));
  EXPECT_TRUE(defaults.config->on_incident.empty());
  const ConfigLoad off = Parse("metrics: {enabled: false}\n");
  ASSERT_TRUE(off.config) << Errors(off);
  EXPECT_FALSE(off.config->metrics.enabled);
}

TEST(DaemonConfig, ParsesTheClusterSection) {
  const ConfigLoad load = Parse(
      "cluster:\n"
      "  node_name: gpu-17\n"
      "  job_id: ${JOB_NAME}\n"
      "  job_id_variables: [MY_RUN, _X2]\n"
      "  poll_interval: 500ms\n"
      "  peer_capture: false\n",
      MapEnv({{"HOME", "/root"}, {"JOB_NAME", "llama-70b"}, {"NODE_NAME", "k8s-node-3"}}));
  ASSERT_TRUE(load.config) << Errors(load);
  EXPECT_EQ(load.config->cluster.node_name, "gpu-17");
  EXPECT_EQ(load.config->cluster.job_id, "llama-70b");
  EXPECT_EQ(load.config->cluster.job_id_variables, (std::vector<std::string>{"MY_RUN", "_X2"}));
  EXPECT_EQ(load.config->cluster.node_name_env, "k8s-node-3");
  EXPECT_EQ(load.config->cluster.poll_interval, std::chrono::milliseconds(500));
  EXPECT_FALSE(load.config->cluster.peer_capture);
  EXPECT_EQ(Parse("").config->cluster.poll_interval, std::chrono::seconds(2));
  EXPECT_TRUE(Parse("").config->cluster.peer_capture);

  const ConfigLoad bad = Parse(
      "cluster:\n"
      "  job_id: a/b\n"
      "  job_id_variables: [1ABC, ok]\n"
      "  shared: x\n"
      "  poll_interval: 50ms\n");
  ASSERT_FALSE(bad.config);
  const std::string errors = Errors(bad);
  EXPECT_NE(errors.find("daemon.yaml:5:18: cluster poll_interval must be at least 200ms"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("daemon.yaml:2:11: cluster job_id: must be one line without '/'"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("'1ABC' is not an environment variable name"), std::string::npos) << errors;
  EXPECT_NE(errors.find("shared"), std::string::npos) << errors;
}

TEST(DaemonConfig, ParsesTheAlertmanagerSection) {
  const ConfigLoad load = Parse(
      "alertmanager:\n"
      "  urls: [http://am-0:9093/, 'https://am-1/api/v2/alerts']\n"
      "  resend: 30s\n"
      "  timeout: 5s\n"
      "  labels: {team: ml, cluster: a}\n");
  ASSERT_TRUE(load.config) << Errors(load);
  const AlertmanagerConfig& am = load.config->alertmanager;
  EXPECT_EQ(am.urls, (std::vector<std::string>{"http://am-0:9093", "https://am-1"}));
  EXPECT_EQ(am.resend, std::chrono::seconds(30));
  EXPECT_EQ(am.timeout, std::chrono::seconds(5));
  EXPECT_EQ(am.labels,
            (std::vector<std::pair<std::string, std::string>>{{"cluster", "a"}, {"team", "ml"}}));
  EXPECT_TRUE(Parse("").config->alertmanager.urls.empty());

  const ConfigLoad bad = Parse(
      "alertmanager:\n"
      "  urls: [am:9093]\n"
      "  resend: 1s\n"
      "  labels: {node: x, 9bad: y}\n"
      "  url: x\n");
  ASSERT_FALSE(bad.config);
  const std::string errors = Errors(bad);
  for (const char* expected :
       {"daemon.yaml:2:10: alertmanager urls: 'am:9093' is not an http:// or https:// URL",
        "daemon.yaml:3:11: alertmanager resend: must be between 10s and 600s",
        "alertmanager labels: 'node' is set by trainwatch",
        "alertmanager labels: '9bad' is not a label name", "unknown key 'url'"}) {
    EXPECT_NE(errors.find(expected), std::string::npos) << expected << "\n" << errors;
  }
}

TEST(DaemonConfig, ParsesTheRetryAndSlurmSections) {
  const ConfigLoad load = Parse(
      "retry: {same_failure_budget: 2, first_failure_budget: 0, storm_attempts: 8, "
      "storm_window: 1h}\n"
      "slurm: {drain: true, node_name: gpu-17, timeout: 30s}\n",
      MapEnv({{"HOME", "/home/ada"}, {"SLURMD_NODENAME", "node-a"}}));
  ASSERT_TRUE(load.config) << Errors(load);
  EXPECT_EQ(load.config->retry.same_failure_budget, 2u);
  EXPECT_EQ(load.config->retry.first_failure_budget, 0u);
  EXPECT_EQ(load.config->retry.storm_attempts, 8u);
  EXPECT_EQ(load.config->retry.storm_window, std::chrono::hours(1));
  EXPECT_TRUE(load.config->slurm.drain);
  EXPECT_EQ(load.config->slurm.node_name, "gpu-17");
  EXPECT_EQ(load.config->slurm.timeout, std::chrono::seconds(30));
  EXPECT_EQ(load.config->slurm.slurmd_nodename_env, "node-a");
  const ConfigLoad defaults = Parse("");
  EXPECT_EQ(defaults.config->retry.same_failure_budget, 3u);
  EXPECT_FALSE(defaults.config->slurm.drain);

  const ConfigLoad bad = Parse(
      "retry: {same_failure_budget: 101, storm_window: 10s, budget: 1}\n"
      "slurm: {drain: yes, node_name: 'a b', timeout: 5m}\n");
  ASSERT_FALSE(bad.config);
  const std::string errors = Errors(bad);
  for (const char* expected :
       {"retry same_failure_budget must be a whole number from 0 to 100",
        "retry storm_window must be between 1m and 7d", "unknown key 'budget'",
        "slurm node_name: 'a b' is not a node name", "slurm timeout must be between 1s and 2m"}) {
    EXPECT_NE(errors.find(expected), std::string::npos) << expected << "\n" << errors;
  }
}

TEST(DaemonConfig, DefaultsForAnEmptyFile) {
  for (const std::string text : {"", "# nothing but a comment\n", "sources:\n"}) {
    const ConfigLoad load = Parse(text);
    ASSERT_TRUE(load.config.has_value()) << Errors(load);
    const DaemonConfig& config = *load.config;
    EXPECT_EQ(config.state_dir, "/home/ada/.local/state/trainwatch");
    EXPECT_TRUE(config.rule_paths.empty());
    EXPECT_EQ(config.incident.settle, seconds(2));
    EXPECT_EQ(config.incident.cooldown, minutes(5));
    EXPECT_EQ(config.incident.context_lines, 20u);
    EXPECT_EQ(config.watch.mode, WatchMode::kAuto);
    EXPECT_EQ(config.watch.poll_interval, seconds(1));
    EXPECT_EQ(config.watch.rescan_interval, seconds(30));
    EXPECT_TRUE(config.wrap_log_file.empty());
    EXPECT_TRUE(config.sources.empty());
  }
}

TEST(DaemonConfig, DefaultStateDirFollowsSystemd) {
  const ConfigLoad load = Parse("", MapEnv({{"STATE_DIRECTORY", "/var/lib/trainwatch"}}));
  ASSERT_TRUE(load.config.has_value()) << Errors(load);
  EXPECT_EQ(load.config->state_dir, "/var/lib/trainwatch");

  const ConfigLoad no_home = Parse("", MapEnv({}));
  EXPECT_FALSE(no_home.config.has_value());
  EXPECT_EQ(Errors(no_home),
            "/etc/trainwatch/daemon.yaml:1: no 'state_dir' given, and its default "
            "${STATE_DIRECTORY:-~/.local/state/trainwatch} cannot be expanded: '~' needs $HOME, "
            "which is not set\n");
}

TEST(DaemonConfig, PartialSectionsKeepTheOtherDefaults) {
  const ConfigLoad load = Parse("incident: {context_lines: 0}\nwatch: {mode: inotify}\n");
  ASSERT_TRUE(load.config.has_value()) << Errors(load);
  EXPECT_EQ(load.config->incident.context_lines, 0u);
  EXPECT_EQ(load.config->incident.settle, seconds(2));
  EXPECT_EQ(load.config->watch.mode, WatchMode::kInotify);
  EXPECT_EQ(load.config->watch.poll_interval, seconds(1));
}

TEST(DaemonConfig, RelativePathsResolveAgainstTheConfigDirectory) {
  const ConfigLoad load = ParseDaemonConfig(
      "state_dir: state\n"
      "rules: [../rules, ./mine.yaml]\n"
      "wrap: {log_file: 'logs/wrap-{pid}.log'}\n"
      "sources:\n"
      "  - {name: a, tags: [t], paths: [\"runs/**/*.log\", /abs/./x/../*.log]}\n",
      "/srv/tw/conf/daemon.yaml", kEnv);
  ASSERT_TRUE(load.config.has_value()) << Errors(load);
  const DaemonConfig& config = *load.config;
  EXPECT_EQ(config.state_dir, "/srv/tw/conf/state");
  EXPECT_EQ(config.rule_paths,
            (std::vector<std::string>{"/srv/tw/rules", "/srv/tw/conf/mine.yaml"}));
  EXPECT_EQ(config.wrap_log_file, "/srv/tw/conf/logs/wrap-{pid}.log");
  EXPECT_EQ(config.sources[0].paths,
            (std::vector<std::string>{"/srv/tw/conf/runs/**/*.log", "/abs/*.log"}));
}

TEST(DaemonConfig, ARelativeFileNameIsMadeAbsolute) {
  const ConfigLoad load = ParseDaemonConfig("state_dir: s\n", "conf/d.yaml", kEnv);
  ASSERT_TRUE(load.config.has_value()) << Errors(load);
  const auto cwd = std::filesystem::current_path();
  EXPECT_EQ(load.config->file, (cwd / "conf/d.yaml").string());
  EXPECT_EQ(load.config->state_dir, (cwd / "conf/s").string());
}

TEST(DaemonConfig, ReportsEachProblemAtItsPosition) {
  struct Case {
    const char* name;
    std::string text;
    std::string expected;  // every diagnostic, formatted, without the file name
  };
  const std::string src = "sources:\n  - name: a\n    tags: [t]\n";
  const std::vector<Case> cases = {
      {"unknown top key", "state_dir: /s\nsource: []\n",
       "2:1: unknown key 'source' in the config (expected one of: alertmanager, capture, "
       "cluster, incident, metrics, on_incident, retry, rules, slurm, sources, state_dir, watch, "
       "wrap)"},
      {"fast metrics", "metrics: {interval: 100ms}\n",
       "1:21: metrics interval must be at least 1000ms"},
      {"metrics enabled", "metrics: {enabled: yes}\n",
       "1:20: metrics enabled must be true or false"},
      {"hook not a list", "on_incident: {name: a}\n", "1:14: on_incident must be a list"},
      {"hook without argv", "on_incident:\n  - name: up\n",
       "2:5: an on_incident hook needs argv: a non-empty list"},
      {"hook with a bundle file", "on_incident:\n  - {name: up, argv: [x], as: y.txt}\n",
       "2:27: unknown key 'as' in an on_incident hook (expected one of: argv, name, timeout, "
       "when)"},
      {"hook twice", "on_incident:\n  - {name: up, argv: [x]}\n  - {name: up, argv: [y]}\n",
       "3:12: on_incident hook 'up' is already defined at line 2"},
      {"hook name", "on_incident:\n  - {name: 'up load', argv: [x]}\n",
       "2:12: command name 'up load' must be letters, digits, '.', '_' or '-'"},
      {"hook timeout 0", "on_incident:\n  - {name: up, argv: [x], timeout: 0s}\n",
       "2:36: command timeout must be at least 1000ms"},
      {"hook never runs", "on_incident:\n  - {name: up, argv: [x], when: []}\n",
       "2:33: command when is empty: it would never run"},
      {"source named wrap", "sources:\n  - {name: wrap, tags: [t], paths: [/x]}\n",
       "2:12: source name 'wrap' is reserved for the output of `trainwatch wrap`"},
      {"hook bad when", "on_incident:\n  - {name: up, argv: [x], when: [crashes]}\n",
       "2:34: unknown incident kind 'crashes' (expected crash, hang, device, diverged, slow, "
       "manual, warning or peer)"},
      {"duplicate key", "state_dir: /s\nstate_dir: /t\n",
       "2:1: key 'state_dir' appears twice in the config"},
      {"not a mapping", "- a\n", "1:1: expected a mapping of settings"},
      {"alertmanager not a map", "alertmanager: x\n",
       "1:15: 'alertmanager' must be a mapping {urls, resend, timeout, labels}"},
      {"unknown nested key", "incident: {setle: 2s}\n", "1:12: unknown key 'setle' in incident"},
      {"unknown source key", src + "    path: [/x]\n",
       "4:5: unknown key 'path' in a source (expected one of: blocked_after, kmsg, name, paths, "
       "processes, start_at, tags)\n2:5: source 'a' has neither 'paths' nor 'kmsg: true' nor "
       "'processes: true'"},
      {"bad duration", "incident:\n  settle: 2\n",
       "2:11: incident settle: duration '2' needs a unit"},
      {"settle too long", "incident: {settle: 1h}\n", "1:20: incident settle must be at most 10m"},
      {"cooldown not a duration", "incident: {cooldown: soon}\n", "1:22: incident cooldown: "},
      {"negative context", "incident: {context_lines: -1}\n",
       "1:27: incident context_lines must be a whole number from 0 to 1000"},
      {"huge context", "incident: {context_lines: 1001}\n",
       "1:27: incident context_lines must be a whole number from 0 to 1000"},
      {"signed context", "incident: {context_lines: +5}\n",
       "1:27: incident context_lines must be a whole number from 0 to 1000"},
      {"fractional context", "incident: {context_lines: 2.5}\n",
       "1:27: incident context_lines must be a whole number"},
      {"empty context", "incident:\n  context_lines:\n",
       "2:3: incident context_lines has no value"},
      {"fast poll", "watch: {poll_interval: 50ms}\n",
       "1:24: watch poll_interval must be at least 100ms"},
      {"zero rescan", "watch: {rescan_interval: 0s}\n",
       "1:26: watch rescan_interval must be at least 100ms"},
      {"bad mode", "watch: {mode: fanotify}\n",
       "1:15: unknown watch mode 'fanotify' (expected auto, inotify or poll)"},
      {"watch not a map", "watch: poll\n", "1:8: 'watch' must be a mapping {mode, "},
      {"empty wrap", "wrap:\n", "1:1: wrap has no value"},
      {"empty rules", "rules: []\n", "1:8: rules must be a non-empty list"},
      {"rules not a list", "rules: /x\n", "1:8: rules must be a non-empty list"},
      {"empty rule path", "rules: ['']\n", "1:9: a rules path is empty"},
      {"unset variable", "state_dir: ${NOPE}/x\n",
       "1:12: state_dir: environment variable 'NOPE' is not set"},
      {"unset variable in a source path",
       src + "    paths:\n      - /ok/*.log\n      - \"${LOGDIR}/*.log\"\n",
       "6:9: source 'a' path: environment variable 'LOGDIR' is not set"},
      {"variable empty once expanded", "state_dir: ${EMPTY}\n",
       "1:12: state_dir is empty once expanded"},
      {"unterminated", "wrap: {log_file: '${X'}\n", "1:18: wrap log_file: unterminated '${'"},
      {"no name", "sources:\n  - tags: [t]\n    kmsg: true\n", "2:5: a source has no 'name'"},
      {"bad name", "sources:\n  - {name: 'my source', tags: [t], kmsg: true}\n",
       "2:12: source name 'my source' must be letters, digits"},
      {"duplicate name",
       "sources:\n  - {name: a, tags: [t], kmsg: true}\n  - {name: a, tags: [t], paths: [/x]}\n",
       "3:12: duplicate source name 'a' (first given at line 2)"},
      {"no tags", "sources:\n  - name: a\n    kmsg: true\n",
       "2:5: source 'a' has no 'tags' (which rules apply to it, like [train])"},
      {"empty tags", "sources:\n  - name: a\n    tags: []\n    kmsg: true\n",
       "3:11: source 'a' tags must be a non-empty list, like [train]"},
      {"null tags", "sources:\n  - name: a\n    tags:\n    kmsg: true\n",
       "3:5: source 'a' tags has no value"},
      {"tags not a list", "sources:\n  - name: a\n    tags: train\n    kmsg: true\n",
       "3:11: source 'a' tags must be a non-empty list"},
      {"nested tag", "sources:\n  - {name: a, tags: [[x]], kmsg: true}\n",
       "2:22: a tag must be a single value"},
      {"paths and kmsg", src + "    paths: [/x]\n    kmsg: true\n",
       "4:12: source 'a' has both 'paths' and 'kmsg: true'; make them two sources"},
      {"neither paths nor kmsg", src,
       "2:5: source 'a' has neither 'paths' nor 'kmsg: true' nor 'processes: true'"},
      {"kmsg false alone", src + "    kmsg: false\n",
       "2:5: source 'a' has neither 'paths' nor 'kmsg: true' nor 'processes: true'"},
      {"paths and processes", src + "    paths: [/x]\n    processes: true\n",
       "4:12: source 'a' has both 'paths' and 'processes: true'; make them two sources"},
      {"kmsg and processes", src + "    kmsg: true\n    processes: true\n",
       "5:16: source 'a' has both 'kmsg: true' and 'processes: true'; make them two sources"},
      {"blocked_after without processes", src + "    kmsg: true\n    blocked_after: 10s\n",
       "5:20: source 'a': 'blocked_after' is for a source with 'processes: true'"},
      {"blocked_after too short", src + "    processes: true\n    blocked_after: 1s\n",
       "5:20: source 'a': blocked_after must be between 4s and 1h"},
      {"bad kmsg", src + "    kmsg: yes please\n", "4:11: source 'a': kmsg must be true or false"},
      // YAML 1.1's yes/on/y are not booleans here, as everywhere else in the config.
      {"loose kmsg", src + "    kmsg: yes\n", "4:11: source 'a': kmsg must be true or false"},
      {"empty paths", src + "    paths: []\n",
       "4:12: source 'a' paths must be a non-empty list, like [\"~/logs/**/*.log\"]"},
      {"bad start_at", src + "    paths: [/x]\n    start_at: middle\n",
       "5:15: source 'a': unknown start_at 'middle' (expected end or beginning)"},
      {"sources not a list", "sources: {name: a}\n", "1:10: 'sources' must be a list"},
      {"source not a map", "sources: [a]\n", "1:11: each entry of 'sources' must be a mapping"},
      {"second document", "state_dir: /s\n---\nrules: [/r]\n",
       "3:1: a file holds one YAML document"},
  };
  for (const Case& c : cases) {
    const ConfigLoad load = Parse(c.text, MapEnv({{"HOME", "/home/ada"}, {"EMPTY", ""}}));
    EXPECT_FALSE(load.config.has_value()) << c.name;
    std::string expected = "/etc/trainwatch/daemon.yaml:" + c.expected;
    for (std::size_t at = expected.find('\n'); at != std::string::npos;
         at = expected.find('\n', at + 1)) {
      expected.insert(at + 1, "/etc/trainwatch/daemon.yaml:");
    }
    EXPECT_TRUE(Errors(load).starts_with(expected))
        << c.name << "\n  got:      " << Errors(load) << "  expected: " << expected;
  }
}

TEST(DaemonConfig, ReportsAllProblemsNotJustTheFirst) {
  const ConfigLoad load = Parse(
      "state_dir: ${NOPE}\n"
      "incident: {settle: 2}\n"
      "watch: {mode: fast}\n"
      "sources:\n"
      "  - {name: a, tags: [], kmsg: true}\n"
      "  - {name: b, tags: [t], paths: [/x], kmsg: true}\n");
  EXPECT_FALSE(load.config.has_value());
  EXPECT_EQ(load.errors.size(), 5u) << Errors(load);
}

TEST(DaemonConfig, LoadsAFileAndReportsAMissingOne) {
  const trainwatch::testing::TempDir temp;
  const std::string path =
      temp.Write("daemon.yaml", "sources:\n  - {name: a, tags: [t], paths: [logs/*.log]}\n");
  const ConfigLoad load = LoadDaemonConfig(path, kEnv);
  ASSERT_TRUE(load.config.has_value()) << Errors(load);
  EXPECT_EQ(load.config->file, path);
  EXPECT_EQ(load.config->sources[0].paths, std::vector<std::string>{temp.PathOf("logs/*.log")});

  const ConfigLoad missing = LoadDaemonConfig(temp.PathOf("nope.yaml"), kEnv);
  EXPECT_FALSE(missing.config.has_value());
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_TRUE(FormatDiagnostic(missing.errors[0])
                  .starts_with(temp.PathOf("nope.yaml") + ": cannot read config file: "))
      << FormatDiagnostic(missing.errors[0]);
}

}  // namespace
}  // namespace trainwatch::config
