// AlertOutput: each open incident as an alert in Prometheus Alertmanager, so that the nodes of
// one job reach the on-call person as one notification (Alertmanager groups them by job_id in
// its own routing). An incident's alert is posted when it is written, again with its bundle
// once captured, again every `resend` while it is open (Alertmanager forgets an alert that is
// not re-sent: each post says it ends 4 × resend later), and once more with `endsAt` when it
// resolves. Every configured Alertmanager (an HA cluster's instances) gets every alert.
//
// Nothing is lost and nothing blocks: the alerts still owed — open ones, and ends not yet
// acknowledged by every instance — are kept in <state_dir>/alerts.json (rewritten atomically
// on each change), so a restart posts them again; an Alertmanager that is down or slow is
// retried with backoff (2 s doubling to 60 s) through the HttpClient, never on the loop's
// time. At most kMaxAlerts are kept: past it the oldest ended, then the oldest open, are
// dropped, and logged. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "alert/alert.h"
#include "alert/http_client.h"
#include "config/alert_config.h"
#include "core/env.h"

namespace trainwatch::alert {

struct AlertOutputState {
  std::uint64_t open = 0;          // alerts of open incidents
  std::uint64_t ends_unsent = 0;   // resolved, end not acknowledged by every Alertmanager
  std::uint64_t posts_ok = 0;      // POSTs answered 2xx
  std::uint64_t posts_failed = 0;  // POSTs that failed or were refused
  std::uint64_t dropped = 0;       // alerts dropped past kMaxAlerts
  std::string error;               // why the last POST failed; empty after one succeeds
};

class AlertOutput {
 public:
  static constexpr std::size_t kMaxAlerts = 256;
  // A store of kMaxAlerts alerts is well under this: a larger file is not one we wrote.
  static constexpr std::size_t kMaxStoreBytes = 16u << 20;
  static constexpr std::chrono::seconds kFirstRetry{2};
  static constexpr std::chrono::seconds kMaxRetry{60};
  // Whether the incident of that id is still open (the lifecycle's word).
  using StillOpen = std::function<bool(const std::string& incident_id)>;
  // Makes the HTTP client, at the first Configure with URLs: a daemon that posts no alerts
  // never initialises libcurl and its TLS libraries (megabytes of memory). Null: none.
  using MakeClient = std::function<std::unique_ptr<HttpClient>()>;

  AlertOutput(Env& env, std::string store_path, MakeClient make_client, StillOpen still_open);
  ~AlertOutput();
  AlertOutput(const AlertOutput&) = delete;
  AlertOutput& operator=(const AlertOutput&) = delete;

  // No URLs: nothing is posted or kept (what the store holds waits for a config with URLs).
  // The first call reads the store: alerts of incidents that closed meanwhile end now.
  void Configure(const config::AlertmanagerConfig& config);
  bool enabled() const { return !config_.urls.empty(); }
  const config::AlertmanagerConfig& config() const { return config_; }

  void Open(Alert alert);
  // Sets (or replaces) an annotation of the incident's alert, if it has one, and posts again.
  void Annotate(const std::string& incident_id,
                const std::map<std::string, std::string>& annotations);
  void Resolve(const std::string& incident_id, std::chrono::system_clock::time_point at);
  // The daemon stops: what is owed stays in the store for the next start.
  void Stop();

  const AlertOutputState& state() const { return state_; }

 private:
  void Send();
  void OnPosted(std::uint64_t generation, std::size_t url, const std::string& address,
                const std::vector<std::string>& ends, const HttpResult& result);
  void EndClosed();
  void Bound();
  void Save();
  std::uint32_t AllUrls() const;
  std::int64_t NowMs() const;

  Env& env_;
  std::string store_path_;
  MakeClient make_client_;
  std::unique_ptr<HttpClient> http_;
  StillOpen still_open_;
  config::AlertmanagerConfig config_;
  bool loaded_ = false;
  bool stopped_ = false;
  std::map<std::string, Alert> alerts_;  // by incident id
  int in_flight_ = 0;
  std::uint64_t generation_ = 0;  // moves with each Configure: posts of an older one are stale
  bool again_ = false;            // a change came while posts ran
  bool cycle_failed_ = false;
  std::chrono::seconds backoff_{kFirstRetry};
  std::unique_ptr<LoopTimer> timer_;  // the next resend, or retry
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  AlertOutputState state_;
};

}  // namespace trainwatch::alert
