#include "alert/alert_output.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "core/printable.h"
#include "core/small_file.h"

namespace trainwatch::alert {

AlertOutput::AlertOutput(Env& env, std::string store_path, MakeClient make_client,
                         StillOpen still_open)
    : env_(env),
      store_path_(std::move(store_path)),
      make_client_(std::move(make_client)),
      still_open_(std::move(still_open)),
      timer_(env.NewTimer([this] { Send(); })) {}

AlertOutput::~AlertOutput() { *alive_ = false; }

std::int64_t AlertOutput::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(env_.WallNow().time_since_epoch())
      .count();
}

std::uint32_t AlertOutput::AllUrls() const {
  return static_cast<std::uint32_t>((1ULL << config_.urls.size()) - 1);
}

void AlertOutput::Configure(const config::AlertmanagerConfig& config) {
  const bool urls_changed = config.urls != config_.urls;
  if (urls_changed && !config.urls.empty()) {
    std::vector<std::string> shown;
    for (const std::string& url : config.urls) {
      shown.push_back(ShownUrl(url));  // never a password in the log
    }
    spdlog::info("incidents are posted to Alertmanager at {}",
                 fmt::format("{}", fmt::join(shown, ", ")));
  }
  config_ = config;
  ++generation_;  // the URLs' indices may mean other instances now
  if (!enabled() || stopped_) {
    return;
  }
  if (!http_ && make_client_) {
    http_ = make_client_();
  }
  if (!loaded_) {
    loaded_ = true;
    Result<std::optional<std::string>> text = ReadSmallFile(env_.fs(), store_path_, kMaxStoreBytes);
    if (!text) {
      spdlog::error("{}; the alerts it held are not posted again", text.error().message);
    } else if (*text) {
      Result<std::map<std::string, Alert>> stored = ParseStore(**text);
      if (!stored) {
        spdlog::error("{}: {}; the alerts it held are not posted again", store_path_,
                      stored.error().message);
      } else {
        alerts_ = std::move(*stored);
        Bound();
        if (!alerts_.empty()) {
          spdlog::info("{} alerts of an earlier run are owed to Alertmanager: posting them",
                       alerts_.size());
        }
      }
    }
  }
  if (urls_changed) {
    // Indices changed: every end goes to every instance again (Alertmanager takes it twice).
    for (auto& [id, alert] : alerts_) {
      if (alert.ends_ms != 0) {
        alert.end_unsent = AllUrls();
      }
    }
  }
  backoff_ = kFirstRetry;
  Send();
}

void AlertOutput::Open(Alert alert) {
  if (!enabled() || stopped_) {
    return;
  }
  const std::string id = alert.incident_id;
  alerts_[id] = std::move(alert);
  Bound();
  Save();
  Send();
}

void AlertOutput::Annotate(const std::string& incident_id,
                           const std::map<std::string, std::string>& annotations) {
  const auto it = alerts_.find(incident_id);
  if (it == alerts_.end() || stopped_) {
    return;
  }
  for (const auto& [key, value] : annotations) {
    it->second.annotations[key] = value;
  }
  Save();
  Send();
}

void AlertOutput::Resolve(const std::string& incident_id,
                          std::chrono::system_clock::time_point at) {
  const auto it = alerts_.find(incident_id);
  if (it == alerts_.end() || it->second.ends_ms != 0 || stopped_) {
    return;
  }
  it->second.ends_ms = std::max<std::int64_t>(
      it->second.starts_ms + 1,
      std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count());
  it->second.end_unsent = AllUrls();
  Save();
  Send();
}

void AlertOutput::Stop() {
  stopped_ = true;
  timer_.reset();
  http_.reset();  // transfers under way are abandoned; the store has what they carried
}

void AlertOutput::EndClosed() {
  if (!still_open_) {
    return;
  }
  bool changed = false;
  const std::int64_t now_ms = NowMs();
  for (auto& [id, alert] : alerts_) {
    if (alert.ends_ms == 0 && !still_open_(id)) {
      // Resolved while the daemon was down (an offline ack), or forgotten by the lifecycle.
      alert.ends_ms = std::max(alert.starts_ms + 1, now_ms);
      alert.end_unsent = AllUrls();
      changed = true;
    }
  }
  if (changed) {
    Save();
  }
}

void AlertOutput::Bound() {
  while (alerts_.size() > kMaxAlerts) {
    // The oldest ended one first (its end is the least news), else the oldest open one.
    auto victim = alerts_.end();
    for (auto it = alerts_.begin(); it != alerts_.end(); ++it) {
      const bool ended = it->second.ends_ms != 0;
      if (victim == alerts_.end() || ended > (victim->second.ends_ms != 0) ||
          (ended == (victim->second.ends_ms != 0) &&
           it->second.starts_ms < victim->second.starts_ms)) {
        victim = it;
      }
    }
    spdlog::warn("alerts: more than {} owed to Alertmanager; dropped the alert of incident {}",
                 kMaxAlerts, victim->first);
    ++state_.dropped;
    alerts_.erase(victim);
  }
}

void AlertOutput::Save() {
  state_.open = 0;
  state_.ends_unsent = 0;
  for (const auto& [id, alert] : alerts_) {
    ++(alert.ends_ms == 0 ? state_.open : state_.ends_unsent);
  }
  if (Status saved = env_.fs().ReplaceWhole(store_path_, StoreJson(alerts_), 0600); !saved) {
    spdlog::error("alerts: cannot keep what is owed to Alertmanager: {}", saved.error().message);
  }
}

void AlertOutput::Send() {
  if (!enabled() || stopped_ || !http_) {
    return;
  }
  if (in_flight_ > 0) {
    again_ = true;
    return;
  }
  EndClosed();
  timer_->Stop();
  if (alerts_.empty()) {
    return;  // nothing owed; Open or Resolve starts the next post
  }
  again_ = false;
  cycle_failed_ = false;
  const std::int64_t now_ms = NowMs();
  const std::int64_t valid_for_ms = 4 * config_.resend.count();
  int started = 0;
  for (std::size_t url = 0; url < config_.urls.size(); ++url) {
    std::vector<const Alert*> batch;
    std::vector<std::string> ends;
    for (const auto& [id, alert] : alerts_) {
      if (alert.ends_ms == 0) {
        batch.push_back(&alert);
      } else if ((alert.end_unsent & (1U << url)) != 0) {
        batch.push_back(&alert);
        ends.push_back(id);
      }
    }
    if (batch.empty()) {
      continue;
    }
    ++in_flight_;
    ++started;
    http_->PostJson(config_.urls[url] + "/api/v2/alerts", PostBody(batch, now_ms, valid_for_ms),
                    config_.timeout,
                    [this, generation = generation_, url, address = config_.urls[url], ends,
                     alive = alive_](const HttpResult& result) {
                      if (*alive) {
                        OnPosted(generation, url, address, ends, result);
                      }
                    });
  }
  if (started == 0) {  // (posts that failed at once have set their retry already)
    timer_->Start(std::chrono::duration_cast<std::chrono::milliseconds>(config_.resend), {});
  }
}

void AlertOutput::OnPosted(std::uint64_t generation, std::size_t url, const std::string& address,
                           const std::vector<std::string>& ends, const HttpResult& result) {
  --in_flight_;
  if (generation != generation_) {
    // Sent before a reload: its URL index may name another instance now, and Configure owed
    // every end to every instance again. Only the next post counts.
    again_ = true;
  } else if (result.error.empty()) {
    ++state_.posts_ok;
    for (const std::string& id : ends) {
      const auto it = alerts_.find(id);
      if (it == alerts_.end()) {
        continue;
      }
      it->second.end_unsent &= ~(1U << url);
      if (it->second.end_unsent == 0) {
        alerts_.erase(it);
      }
    }
  } else {
    ++state_.posts_failed;
    if (state_.error.empty()) {
      spdlog::error(
          "alerts: Alertmanager {} did not take them: {}; retried (2 s doubling to 60 s), "
          "kept across restarts in {}",
          ShownUrl(address), result.error, store_path_);
    }
    state_.error = ShownUrl(address) + ": " + result.error;
    cycle_failed_ = true;
  }
  if (in_flight_ > 0 || stopped_) {
    return;
  }
  if (!cycle_failed_ && !state_.error.empty()) {
    spdlog::info("alerts: Alertmanager takes them again");
    state_.error.clear();
  }
  Save();
  if (again_ && !cycle_failed_) {
    Send();
    return;
  }
  if (cycle_failed_) {
    timer_->Start(std::chrono::duration_cast<std::chrono::milliseconds>(backoff_), {});
    backoff_ = std::min<std::chrono::seconds>(backoff_ * 2, kMaxRetry);
  } else {
    backoff_ = kFirstRetry;
    timer_->Start(std::chrono::duration_cast<std::chrono::milliseconds>(config_.resend), {});
  }
}

}  // namespace trainwatch::alert
