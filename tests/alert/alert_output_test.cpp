// AlertOutput with a fake HTTP client the test answers, FakeEnv's clock for resends and
// retries, and the store on its fake file system: what is posted when, what an outage or a full
// disk keeps, what a restart posts again.
#include "alert/alert_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>

#include "core/time_format.h"
#include "support/fake_env.h"
#include "support/file_text.h"

namespace trainwatch::alert {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Keeps each POST until the test answers it.
class FakeHttp : public HttpClient {
 public:
  struct Post {
    std::string url;
    json body;
    Done done;
  };
  void PostJson(const std::string& url, std::string body, Duration /*timeout*/,
                Done done) override {
    if (*fail_at_once) {  // as a client that cannot even start a request answers
      done({0, "cannot start an HTTP request"});
      return;
    }
    posts->push_back({url, json::parse(body), std::move(done)});
  }
  std::shared_ptr<bool> fail_at_once = std::make_shared<bool>(false);
  std::shared_ptr<std::deque<Post>> posts = std::make_shared<std::deque<Post>>();
};

class AlertOutputTest : public ::testing::Test {
 protected:
  AlertOutputTest() { env_.files().MakeDirs("/state"); }
  std::unique_ptr<AlertOutput> MakeOutput(std::vector<std::string> urls = {"http://am:9093"}) {
    auto http = std::make_unique<FakeHttp>();
    posts_ = http->posts;
    fail_at_once_ = http->fail_at_once;
    auto client = std::make_shared<std::unique_ptr<HttpClient>>(std::move(http));
    auto output = std::make_unique<AlertOutput>(
        env_, store(), [client] { return std::move(*client); },
        [this](const std::string& id) { return open_.contains(id); });
    config_.urls = std::move(urls);
    config_.resend = seconds(60);
    output->Configure(config_);
    return output;
  }
  static std::string store() { return "/state/alerts.json"; }
  Alert AlertFor(const std::string& id) {
    Alert alert;
    alert.incident_id = id;
    alert.labels = {{"alertname", kAlertName}, {"job_id", "llama"}, {"node", "gpu-1"}};
    alert.annotations = {{"summary", "boom"}, {"incident", id}};
    alert.starts_ms =
        std::chrono::duration_cast<milliseconds>(env_.WallNow().time_since_epoch()).count();
    open_.insert(id);
    return alert;
  }
  // Answers the oldest waiting POST.
  FakeHttp::Post Answer(long status, const std::string& error = "") {
    EXPECT_FALSE(posts_->empty());
    FakeHttp::Post post = std::move(posts_->front());
    posts_->pop_front();
    post.done({status, error});
    return post;
  }

  testing::FakeEnv env_;
  config::AlertmanagerConfig config_;
  std::set<std::string> open_;
  std::shared_ptr<std::deque<FakeHttp::Post>> posts_;
  std::shared_ptr<bool> fail_at_once_;
};

TEST_F(AlertOutputTest, AnIncidentIsPostedAtOnceAgainWhileOpenAndEndedWhenResolved) {
  auto output = MakeOutput();
  output->Open(AlertFor("a"));
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post first = Answer(200);
  EXPECT_EQ(first.url, "http://am:9093/api/v2/alerts");
  ASSERT_EQ(first.body.size(), 1u);
  EXPECT_EQ(first.body[0]["labels"]["job_id"], "llama");
  EXPECT_EQ(first.body[0]["annotations"]["summary"], "boom");
  // Open: it ends 4 resends later unless posted again.
  EXPECT_EQ(first.body[0]["startsAt"], FormatUtc(env_.WallNow(), TimeFormat::kIsoMillis));
  EXPECT_EQ(first.body[0]["endsAt"],
            FormatUtc(env_.WallNow() + seconds(240), TimeFormat::kIsoMillis));
  EXPECT_EQ(output->state().open, 1u);

  env_.Advance(seconds(59));
  EXPECT_TRUE(posts_->empty());
  env_.Advance(seconds(1));  // the resend
  ASSERT_EQ(posts_->size(), 1u);
  Answer(200);

  // Its bundle: posted again with the annotation.
  output->Annotate("a", {{"bundle", "gpu-1:/b.tar.zst"}});
  ASSERT_EQ(posts_->size(), 1u);
  EXPECT_EQ(Answer(200).body[0]["annotations"]["bundle"], "gpu-1:/b.tar.zst");

  open_.erase("a");
  env_.Advance(seconds(5));
  output->Resolve("a", env_.WallNow());
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post end = Answer(200);
  EXPECT_NE(end.body[0]["endsAt"], first.body[0]["endsAt"]);
  EXPECT_EQ(output->state().open, 0u);
  EXPECT_EQ(output->state().ends_unsent, 0u);
  env_.Advance(seconds(120));  // nothing owed: nothing posted
  EXPECT_TRUE(posts_->empty());
  EXPECT_EQ(output->state().posts_ok, 4u);
}

TEST_F(AlertOutputTest, AnOutageIsRetriedWithBackoffAndLosesNothing) {
  auto output = MakeOutput();
  output->Open(AlertFor("a"));
  Answer(0, "Connection refused");
  EXPECT_EQ(output->state().error, "http://am:9093: Connection refused");
  env_.Advance(seconds(2));  // retry 1
  Answer(503, "HTTP 503");
  env_.Advance(seconds(3));
  EXPECT_TRUE(posts_->empty());  // the next retry waits 4 s
  open_.erase("a");
  output->Resolve("a", env_.WallNow());  // news is tried at once
  ASSERT_EQ(posts_->size(), 1u);
  output->Open(AlertFor("b"));  // one POST at a time: b waits for it
  ASSERT_EQ(posts_->size(), 1u);
  EXPECT_EQ(Answer(200).body.size(), 1u);  // a's end
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post post = Answer(200);
  ASSERT_EQ(post.body.size(), 1u);
  EXPECT_EQ(post.body[0]["annotations"]["incident"], "b");
  EXPECT_EQ(output->state().error, "");
  EXPECT_EQ(output->state().ends_unsent, 0u);
  EXPECT_EQ(output->state().posts_failed, 2u);
}

TEST_F(AlertOutputTest, WhatIsOwedSurvivesARestartAndAnIncidentClosedMeanwhileEnds) {
  {
    auto output = MakeOutput();
    output->Open(AlertFor("a"));
    output->Open(AlertFor("b"));
    output->Stop();  // the daemon stops with the POST unanswered
  }
  open_ = {"b"};  // a was acknowledged while the daemon was down
  auto output = MakeOutput();
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post post = Answer(200);
  ASSERT_EQ(post.body.size(), 2u);
  std::map<std::string, std::string> ends;
  for (const json& alert : post.body) {
    ends[alert["annotations"]["incident"]] = alert["endsAt"];
  }
  EXPECT_LT(ends["a"], ends["b"]);  // a ended now; b is open, valid for 4 resends
  EXPECT_EQ(output->state().open, 1u);
  EXPECT_EQ(output->state().ends_unsent, 0u);
}

TEST_F(AlertOutputTest, AFullDiskLosesNoAlertOnceItRecoversAndPostsNoneTwice) {
  env_.files().FailWrites(store(), ENOSPC);
  {
    auto output = MakeOutput();
    output->Open(AlertFor("a"));
    output->Open(AlertFor("b"));  // neither could be kept on disk
    env_.files().FailWrites(store(), 0);
    output->Open(AlertFor("c"));  // the disk has room again: the store is written whole
    output->Stop();
  }
  auto output = MakeOutput();  // a restart: what is owed comes from the store
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post post = Answer(200);
  std::vector<std::string> posted;
  for (const json& alert : post.body) {
    posted.push_back(alert["annotations"]["incident"]);
  }
  std::sort(posted.begin(), posted.end());
  EXPECT_EQ(posted, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(AlertOutputTest, AStoreThatCannotBeReadIsNotTakenForEmptyAndTheOutputStillPosts) {
  {
    auto output = MakeOutput();
    output->Open(AlertFor("x"));  // owed at the stop: kept in the store
    output->Stop();
  }
  env_.files().FailOpens(store(), EIO);
  auto output = MakeOutput();  // the store is there but cannot be read: "x" is not posted
  EXPECT_TRUE(posts_->empty());
  output->Open(AlertFor("a"));
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post post = Answer(200);
  ASSERT_EQ(post.body.size(), 1u);
  EXPECT_EQ(post.body[0]["annotations"]["incident"], "a");
  env_.files().FailOpens(store(), 0);
  auto again = MakeOutput();  // readable again: the store now holds "a", written since
  ASSERT_EQ(posts_->size(), 1u);
  EXPECT_EQ(Answer(200).body[0]["annotations"]["incident"], "a");
}

TEST_F(AlertOutputTest, EveryAlertmanagerGetsEveryEnd) {
  auto output = MakeOutput({"http://am-0:9093", "http://am-1:9093"});
  output->Open(AlertFor("a"));
  Answer(200);
  Answer(200);
  open_.erase("a");
  output->Resolve("a", env_.WallNow());
  ASSERT_EQ(posts_->size(), 2u);
  Answer(200);                        // am-0 took the end
  Answer(0, "Connection timed out");  // am-1 did not
  EXPECT_EQ(output->state().ends_unsent, 1u);
  env_.Advance(seconds(2));
  ASSERT_EQ(posts_->size(), 1u);  // only am-1 is owed the end
  EXPECT_EQ(posts_->front().url, "http://am-1:9093/api/v2/alerts");
  Answer(200);
  EXPECT_EQ(output->state().ends_unsent, 0u);
}

TEST_F(AlertOutputTest, AReloadWhilePostsRunSendsEveryEndToTheNewInstances) {
  auto output = MakeOutput({"http://am-0:9093", "http://am-1:9093"});
  output->Open(AlertFor("a"));
  Answer(200);
  Answer(200);
  open_.erase("a");
  output->Resolve("a", env_.WallNow());
  ASSERT_EQ(posts_->size(), 2u);
  config_.urls = {"http://am-2:9093"};  // the operator drops both while their posts run
  output->Configure(config_);
  EXPECT_EQ(posts_->size(), 2u);  // one POST at a time: the new one waits
  Answer(200);
  Answer(0, "Connection timed out");  // index 1: no instance of that index any more
  ASSERT_EQ(posts_->size(), 1u);
  const FakeHttp::Post post = Answer(200);
  EXPECT_EQ(post.url, "http://am-2:9093/api/v2/alerts");
  ASSERT_EQ(post.body.size(), 1u);  // the end, owed to the new instance too
  EXPECT_EQ(output->state().ends_unsent, 0u);
  EXPECT_EQ(output->state().error, "");
}

TEST_F(AlertOutputTest, APostThatFailsAtOnceIsRetriedAfterTheBackoffNotTheResend) {
  auto output = MakeOutput();
  *fail_at_once_ = true;
  output->Open(AlertFor("a"));
  EXPECT_EQ(output->state().posts_failed, 1u);
  *fail_at_once_ = false;
  env_.Advance(seconds(2));
  ASSERT_EQ(posts_->size(), 1u);
  Answer(200);
  EXPECT_EQ(output->state().error, "");
}

TEST_F(AlertOutputTest, AtMostKMaxAlertsAreKeptTheOldestEndedGoFirst) {
  auto output = MakeOutput();
  output->Open(AlertFor("ended"));
  Answer(0, "down");
  open_.erase("ended");
  output->Resolve("ended", env_.WallNow());
  for (std::size_t i = 0; i < AlertOutput::kMaxAlerts; ++i) {
    env_.Advance(milliseconds(1));
    output->Open(AlertFor("open-" + std::to_string(1000 + i)));
  }
  EXPECT_EQ(output->state().dropped, 1u);
  EXPECT_EQ(output->state().open, AlertOutput::kMaxAlerts);
  EXPECT_EQ(output->state().ends_unsent, 0u);
}

TEST_F(AlertOutputTest, WithoutUrlsNothingIsKeptOrPosted) {
  auto output = MakeOutput({});
  output->Open(AlertFor("a"));
  EXPECT_TRUE(posts_->empty());
  EXPECT_EQ(output->state().open, 0u);
}

}  // namespace
}  // namespace trainwatch::alert
