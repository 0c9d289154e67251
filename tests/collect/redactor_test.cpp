#include "collect/redactor.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace trainwatch::collect {
namespace {

using namespace std::string_literals;

std::shared_ptr<const Redactor> Make(const RedactionRules& rules = {}) {
  auto redactor = Redactor::Create(rules);
  EXPECT_TRUE(redactor.ok()) << (redactor.ok() ? "" : redactor.error().message);
  return redactor.ok() ? *redactor : nullptr;
}

std::string Redact(const Redactor& redactor, std::string text, RedactionCounts* counts = nullptr) {
  RedactionCounts local;
  redactor.RedactText(text, counts != nullptr ? *counts : local);
  return text;
}

constexpr char kWandbKey[] = "0123456789abcdef0123456789abcdef01234567";  // 40 hex digits

struct PatternCase {
  std::string input;
  std::string expected;
  std::string rule;  // the one counter that must read 1
};

class RedactorPatternTest : public ::testing::TestWithParam<PatternCase> {};

TEST_P(RedactorPatternTest, ReplacesTheSecretAndCountsIt) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(Redact(*redactor, GetParam().input, &counts), GetParam().expected);
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{GetParam().rule, 1}}));
}

INSTANTIATE_TEST_SUITE_P(
    RedactorBuiltins, RedactorPatternTest,
    ::testing::Values(
        PatternCase{"key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED] here",
                    "pattern:aws_access_key"},
        PatternCase{"id=ASIAY34FZKBOKMUTVV7A,", "id=[REDACTED],", "pattern:aws_access_key"},
        PatternCase{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                    "aws_secret_access_key = [REDACTED]\n", "pattern:aws_secret"},
        PatternCase{"AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                    "AWS_SECRET_ACCESS_KEY: [REDACTED]", "pattern:aws_secret"},
        PatternCase{R"({"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})",
                    R"({"SecretAccessKey": "[REDACTED]"})", "pattern:aws_secret"},
        PatternCase{"login with hf_abcdefghijklmnopqrstuvwxyzABCDEF1234 ok",
                    "login with [REDACTED] ok", "pattern:hf_token"},
        PatternCase{"token ghp_0123456789abcdefghijABCDEFGHIJ012345.", "token [REDACTED].",
                    "pattern:github_token"},
        PatternCase{"GITHUB_TOKEN is ghs_0123456789abcdefghijABCDEFGHIJ0123456789",
                    "GITHUB_TOKEN is [REDACTED]", "pattern:github_token"},
        PatternCase{"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz end",
                    "pat [REDACTED] end", "pattern:github_token"},
        PatternCase{"jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
                    "jwt=[REDACTED];", "pattern:jwt"},
        PatternCase{"Authorization: Bearer abc123def456ghi789==\r\n",
                    "Authorization: Bearer [REDACTED]\r\n", "pattern:bearer"},
        PatternCase{"-H 'authorization: bearer sk-live.abc_def~ghi/jkl+mno'",
                    "-H 'authorization: bearer [REDACTED]'", "pattern:bearer"},
        PatternCase{"connecting to postgres://trainer:s3cr3t@db.internal:5432/runs",
                    "connecting to postgres://trainer:[REDACTED]@db.internal:5432/runs",
                    "pattern:url_password"},
        PatternCase{"REDIS=redis://:pw123@cache:6379/0", "REDIS=redis://:[REDACTED]@cache:6379/0",
                    "pattern:url_password"},
        // An unencoded '@' in the password: the password goes to the last '@' of the host.
        PatternCase{"git clone https://bob:p@ss@git.example.com/repo.git",
                    "git clone https://bob:[REDACTED]@git.example.com/repo.git",
                    "pattern:url_password"},
        PatternCase{"-----BEGIN OPENSSH PRIVATE KEY-----\n"
                    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
                    "QyNTUxOQAAACBf2k3s0Jt0p9x8w==\n"
                    "-----END OPENSSH PRIVATE KEY-----\nnext line\n",
                    "-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]\n"
                    "-----END OPENSSH PRIVATE KEY-----\nnext line\n",
                    "pattern:private_key"},
        PatternCase{"-----BEGIN RSA PRIVATE KEY-----\r\nProc-Type: 4,ENCRYPTED\r\n"
                    "DEK-Info: AES-128-CBC,3F17F5316E2BAC89\r\n\r\nMIIEowIBAAKCAQEA7\r\n"
                    "-----END RSA PRIVATE KEY-----",
                    "-----BEGIN RSA PRIVATE KEY-----\r\n[REDACTED]\r\n"
                    "-----END RSA PRIVATE KEY-----",
                    "pattern:private_key"},
        // A service-account JSON: the newlines are escaped, the line stays valid JSON.
        PatternCase{
            R"("private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC)"
            R"(\nBKcw==\n-----END PRIVATE KEY-----\n",)",
            R"("private_key": "-----BEGIN PRIVATE KEY-----\n[REDACTED])"
            R"(\n-----END PRIVATE KEY-----\n",)",
            "pattern:private_key"},
        // Cut short (a truncated log): the base64 lines still go.
        PatternCase{"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n"
                    "BKcwggSjAgEAAoIBAQC7\n",
                    "-----BEGIN PRIVATE KEY-----\n[REDACTED]\n", "pattern:private_key"},
        PatternCase{"$ wandb login "s + kWandbKey + "\n", "$ wandb login [REDACTED]\n",
                    "pattern:wandb_key"},
        PatternCase{"wandb login --relogin --host=https://wandb.corp "s + kWandbKey,
                    "wandb login --relogin --host=https://wandb.corp [REDACTED]",
                    "pattern:wandb_key"},
        PatternCase{"WANDB_API_KEY="s + kWandbKey + " python train.py",
                    "WANDB_API_KEY=[REDACTED] python train.py", "pattern:wandb_key"},
        PatternCase{"wandb.login(key=\""s + kWandbKey + "\")", "wandb.login(key=\"[REDACTED]\")",
                    "pattern:wandb_key"},
        PatternCase{"[default]\nbase_url = https://api.wandb.ai\napi_key = "s + kWandbKey + "\n",
                    "[default]\nbase_url = https://api.wandb.ai\napi_key = [REDACTED]\n",
                    "pattern:wandb_key"},
        PatternCase{"machine api.wandb.ai login user password "s + kWandbKey,
                    "machine api.wandb.ai login user password [REDACTED]", "pattern:wandb_key"},
        PatternCase{"machine api.wandb.ai\n  login user\n  password "s + kWandbKey + "\n",
                    "machine api.wandb.ai\n  login user\n  password [REDACTED]\n",
                    "pattern:wandb_key"},
        // The red team's gaps (security round 3).
        PatternCase{"mysql -uroot -pS3cr3tPw db", "mysql -uroot -p[REDACTED] db",
                    "pattern:secret_option"},
        PatternCase{"serve --auth hunter2xyz --port 80", "serve --auth [REDACTED] --port 80",
                    "pattern:secret_option"},
        PatternCase{"upload --key 9f8e7d6c5b4a", "upload --key [REDACTED]",
                    "pattern:secret_option"},
        PatternCase{"Authorization: Basic dXNlcjpwYXNzd29yZA==\r\n",
                    "Authorization: Basic [REDACTED]\r\n", "pattern:authorization"},
        PatternCase{"CI_TOKEN glpat-abcdefghij0123456789xyz ok", "CI_TOKEN [REDACTED] ok",
                    "pattern:gitlab_token"},
        PatternCase{"maps AIzaSyA1234567890abcdefghijklmnopqrstuv end", "maps [REDACTED] end",
                    "pattern:google_api_key"},
        PatternCase{"twine pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejEyMzQ1 x",
                    "twine [REDACTED] x", "pattern:pypi_token"},
        PatternCase{"NGC nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-ab end", "NGC [REDACTED] end",
                    "pattern:nvidia_key"},
        PatternCase{"GET /v1/data?access_token=abc123def&page=2 200",
                    "GET /v1/data?access_token=[REDACTED]&page=2 200", "pattern:query_secret"},
        PatternCase{R"({"api_key": "abcdef123456", "model": "llama"})",
                    R"({"api_key": "[REDACTED]", "model": "llama"})", "pattern:key_field"},
        PatternCase{R"({"auth_token": "xyz98765", "step": 3})",
                    R"({"auth_token": "[REDACTED]", "step": 3})", "pattern:key_field"},
        PatternCase{"epoch 3:  40%|####  | desc=run api_key=sk1234abcd",
                    "epoch 3:  40%|####  | desc=run api_key=[REDACTED]", "pattern:key_field"}));

class RedactorHarmlessTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RedactorHarmlessTest, StaysAsItIs) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(Redact(*redactor, GetParam(), &counts), GetParam());
  EXPECT_EQ(counts.total(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    RedactorLookAlikes, RedactorHarmlessTest,
    ::testing::Values(
        "AKIA", "ASIA/Tokyo", "AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPLEX",
        "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
        "commit 3f2a9c1d0b8e7f6a5c4d3e2f1a0b9c8d7e6f5a4b",
        "wandb: git commit 3f2a9c1d0b8e7f6a5c4d3e2f1a0b9c8d7e6f5a4b",
        "wandb: W&B API key is configured. Use `wandb login --relogin` to force relogin",
        "hf_hub_download(repo_id='meta-llama/Llama-2-7b', filename='config.json')", "hf_transfer",
        "ghp_short", "github_pat_", "eyJhbGciOiJIUzI1NiJ9 header only", "https://example.com/path",
        "https://example.com:8443/path?a=b", "ssh://git@github.com/org/repo.git",
        "https://user@host/x", "user@host", "--password-file /x", "a bearer token",
        "Bearer ${TOKEN}", "TOKENIZERS_PARALLELISM=false",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEF\n",
        "expected -----BEGIN PRIVATE KEY----- in the file", "",
        // 40 hex digits after a key word but nowhere near "wandb": the fast pass proposes it,
        // the regex turns it down.
        "key = 0123456789abcdef0123456789abcdef01234567",
        "[2024-05-01 12:00:01,123] [INFO] step=1234 loss=2.3456 lr=3e-4 grad_norm=0.98"));

TEST(RedactorText, SeveralSecretsOfSeveralKindsOnOneLine) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(Redact(*redactor,
                   "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF1234; curl -H "
                   "'Authorization: Bearer abcdefgh12345678' "
                   "https://bob:hunter22@example.com/x?key=AKIAIOSFODNN7EXAMPLE "
                   "ghp_0123456789abcdefghijABCDEFGHIJ012345 hf_zyxwvutsrqponmlkjihgfedcbaZYXWVU",
                   &counts),
            "export HF_TOKEN=[REDACTED]; curl -H 'Authorization: Bearer [REDACTED]' "
            "https://bob:[REDACTED]@example.com/x?key=[REDACTED] [REDACTED] [REDACTED]");
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{"pattern:aws_access_key", 1},
                                                                  {"pattern:bearer", 1},
                                                                  {"pattern:github_token", 1},
                                                                  {"pattern:hf_token", 2},
                                                                  {"pattern:url_password", 1}}));
  EXPECT_EQ(counts.total(), 6u);
}

TEST(RedactorText, ATokenInsideAnotherPatternIsCountedOnce) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(
      Redact(*redactor,
             "https://x-access-token:ghs_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r "
             "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghij",
             &counts),
      "https://x-access-token:[REDACTED]@github.com/o/r Authorization: Bearer [REDACTED]");
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{"pattern:github_token", 1},
                                                                  {"pattern:jwt", 1}}));
}

TEST(RedactorText, FindsASecretFarIntoALargeText) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  std::string filler;
  for (int i = 0; i < 20000; ++i) {
    filler += "[INFO] step=" + std::to_string(i) + " loss=2.34 https://wandb.ai/team/run\n";
  }
  RedactionCounts counts;
  EXPECT_EQ(Redact(*redactor, filler + "token AKIAIOSFODNN7EXAMPLE\n" + filler, &counts),
            filler + "token [REDACTED]\n" + filler);
  EXPECT_EQ(counts.total(), 1u);
}

TEST(RedactorText, CountsNameRulesNeverValues) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  Redact(*redactor, "a AKIAIOSFODNN7EXAMPLE b AKIAIOSFODNN7EXAMPLF c", &counts);
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{"pattern:aws_access_key", 2}}));
  for (const auto& [rule, n] : counts.by_rule) {
    EXPECT_EQ(rule.find("AKIA"), std::string::npos) << rule;
  }
}

TEST(RedactorText, IsSafeFromSeveralThreadsAtOnce) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  std::vector<std::thread> threads;
  std::vector<std::string> results(4);
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        results[t] = Redact(*redactor, "x hf_abcdefghijklmnopqrstuvwxyzABCDEF1234 y");
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (const std::string& result : results) {
    EXPECT_EQ(result, "x [REDACTED] y");
  }
}

TEST(RedactorCounts, MergeAddsAndTotalSums) {
  RedactionCounts a;
  a.Add("env:HF_TOKEN");
  a.Add("pattern:jwt", 2);
  RedactionCounts b;
  b.Add("pattern:jwt");
  b.Add("pattern:bearer", 4);
  a.Merge(b);
  EXPECT_EQ(a.by_rule, (std::map<std::string, std::uint64_t>{
                           {"env:HF_TOKEN", 1}, {"pattern:bearer", 4}, {"pattern:jwt", 3}}));
  EXPECT_EQ(a.total(), 8u);
  EXPECT_EQ(RedactionCounts{}.total(), 0u);
}

class RedactorSecretNameTest : public ::testing::TestWithParam<std::string> {};
class RedactorHarmlessNameTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RedactorSecretNameTest, IsSecret) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  EXPECT_TRUE(redactor->IsSecretName(GetParam()));
}

TEST_P(RedactorHarmlessNameTest, IsNotSecret) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  EXPECT_FALSE(redactor->IsSecretName(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(RedactorBuiltins, RedactorSecretNameTest,
                         ::testing::Values("WANDB_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                           "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                           "AWS_ACCESS_KEY_ID", "GITHUB_TOKEN", "DATABASE_PASSWORD",
                                           "MLFLOW_TRACKING_PASSWORD", "NGC_API_KEY",
                                           "OPENAI_APIKEY", "SMTP_PASSWD", "HTTP_AUTHORIZATION",
                                           "PROXY_AUTH", "GOOGLE_APPLICATION_CREDENTIALS",
                                           "SSH_PRIVATE_KEY", "FLASK_SESSION_SECRET_KEY",
                                           "AWS_SESSIONKEY", "DB_PASS", "SIGNING_KEY",
                                           "GPG_PASSPHRASE", "wandb_api_key", "Hf_Token",
                                           "MYSQL_PWD", "SSHPASS", "DB_PWD"));

// TOKENIZERS_PARALLELISM (Hugging Face's true/false switch) contains TOKEN: it is exempt,
// as every TOKENIZ... name is, because its value explains how a job ran and hides nothing.
INSTANTIATE_TEST_SUITE_P(RedactorBuiltins, RedactorHarmlessNameTest,
                         ::testing::Values("PATH", "HOME", "PWD", "OLDPWD", "HABANA_LOGS",
                                           "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "GIT_AUTHOR_NAME",
                                           "GIT_AUTHOR_EMAIL", "TOKENIZERS_PARALLELISM",
                                           "HF_TOKENIZER_PATH", "HF_HOME", "WORLD_SIZE",
                                           "PT_HPU_LAZY_MODE", "KEYBOARD_LAYOUT", "PASSIVE_MODE",
                                           ""));

TEST(RedactorNames, ATokenizerNameWithAnotherSecretPartIsStillSecret) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  EXPECT_TRUE(redactor->IsSecretName("TOKENIZER_HUB_TOKEN"));
  EXPECT_TRUE(redactor->IsSecretName("GIT_AUTHOR_PASSWORD"));
}

TEST(RedactorNames, OperatorGlobsMatchCaseInsensitively) {
  const auto redactor = Make({.names = {"*_ENDPOINT", "internal_?"}, .patterns = {}});
  ASSERT_NE(redactor, nullptr);
  EXPECT_TRUE(redactor->IsSecretName("MLFLOW_ENDPOINT"));
  EXPECT_TRUE(redactor->IsSecretName("mlflow_endpoint"));
  EXPECT_TRUE(redactor->IsSecretName("INTERNAL_A"));
  EXPECT_FALSE(redactor->IsSecretName("MLFLOW_ENDPOINT_HOST"));
  EXPECT_FALSE(redactor->IsSecretName("INTERNAL_AB"));
  EXPECT_FALSE(Make()->IsSecretName("MLFLOW_ENDPOINT"));
}

TEST(RedactorEnvironment, ReplacesSecretValuesByNameAndCountsThem) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  const std::string environ =
      "PATH=/usr/bin:/bin\0HF_TOKEN=hf_abc\0PWD=/workspace\0WANDB_API_KEY=x\0"
      "GIT_AUTHOR_NAME=Ada\0TOKENIZERS_PARALLELISM=false\0AWS_SECRET_ACCESS_KEY=abc/def\0"
      "HABANA_LOGS=/var/log/habana_logs\0CUDA_VISIBLE_DEVICES=0,1\0MASTER_ADDR=10.0.0.1\0"
      "HUGGING_FACE_HUB_TOKEN=t\0AWS_SESSION_TOKEN=s\0GITHUB_TOKEN=g\0DATABASE_PASSWORD=p\0"
      "MLFLOW_TRACKING_PASSWORD=m\0NGC_API_KEY=n\0HOME=/root\0"s;
  RedactionCounts counts;
  EXPECT_EQ(redactor->RedactEnvironment(environ, counts),
            "PATH=/usr/bin:/bin\nHF_TOKEN=[REDACTED]\nPWD=/workspace\nWANDB_API_KEY=[REDACTED]\n"
            "GIT_AUTHOR_NAME=Ada\nTOKENIZERS_PARALLELISM=false\nAWS_SECRET_ACCESS_KEY=[REDACTED]\n"
            "HABANA_LOGS=/var/log/habana_logs\nCUDA_VISIBLE_DEVICES=0,1\nMASTER_ADDR=10.0.0.1\n"
            "HUGGING_FACE_HUB_TOKEN=[REDACTED]\nAWS_SESSION_TOKEN=[REDACTED]\n"
            "GITHUB_TOKEN=[REDACTED]\nDATABASE_PASSWORD=[REDACTED]\n"
            "MLFLOW_TRACKING_PASSWORD=[REDACTED]\nNGC_API_KEY=[REDACTED]\nHOME=/root\n");
  EXPECT_EQ(counts.by_rule,
            (std::map<std::string, std::uint64_t>{{"env:AWS_SECRET_ACCESS_KEY", 1},
                                                  {"env:AWS_SESSION_TOKEN", 1},
                                                  {"env:DATABASE_PASSWORD", 1},
                                                  {"env:GITHUB_TOKEN", 1},
                                                  {"env:HF_TOKEN", 1},
                                                  {"env:HUGGING_FACE_HUB_TOKEN", 1},
                                                  {"env:MLFLOW_TRACKING_PASSWORD", 1},
                                                  {"env:NGC_API_KEY", 1},
                                                  {"env:WANDB_API_KEY", 1}}));
  EXPECT_EQ(counts.total(), 9u);
}

TEST(RedactorEnvironment, OtherValuesGoThroughTheValuePatterns) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(
      redactor->RedactEnvironment(
          "MLFLOW_TRACKING_URI=https://ml:pw1234@mlflow.corp\nNOTE=AKIAIOSFODNN7EXAMPLE\n", counts),
      "MLFLOW_TRACKING_URI=https://ml:[REDACTED]@mlflow.corp\nNOTE=[REDACTED]\n");
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{"pattern:aws_access_key", 1},
                                                                  {"pattern:url_password", 1}}));
}

TEST(RedactorEnvironment, NewlinesInsideNulSeparatedValuesAreEscaped) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(redactor->RedactEnvironment(
                "BASH_FUNC_f%%=() {  echo hi\n}\0PS1=a\r\nb\0SSH_KEY=-----BEGIN\nx\0"s, counts),
            "BASH_FUNC_f%%=() {  echo hi\\n}\nPS1=a\\r\\nb\nSSH_KEY=[REDACTED]\n");
  EXPECT_EQ(counts.total(), 1u);
}

TEST(RedactorEnvironment, EmptySecretsAndEntriesWithoutValueStayAsTheyAre) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(redactor->RedactEnvironment("HF_TOKEN=\n\nJUST_A_WORD\nEMPTY=\n", counts),
            "HF_TOKEN=\nJUST_A_WORD\nEMPTY=\n");
  EXPECT_EQ(counts.total(), 0u);
  EXPECT_EQ(redactor->RedactEnvironment("", counts), "");
}

TEST(RedactorEnvironment, OperatorNamesApply) {
  const auto redactor = Make({.names = {"*_dsn"}, .patterns = {}});
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(redactor->RedactEnvironment("SENTRY_DSN=https://abc@o1.ingest.sentry.io/2\0"s, counts),
            "SENTRY_DSN=[REDACTED]\n");
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{"env:SENTRY_DSN", 1}}));
}

TEST(RedactorOperatorPatterns, ReplaceTheWholeMatchAndCountByPosition) {
  const auto redactor =
      Make({.names = {}, .patterns = {"corp-[0-9]{6}", "(secret)=(\\w+)", "café-[0-9]+"}});
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(
      Redact(*redactor, "id corp-123456 and corp-654321; secret=abc café-12 corp-12", &counts),
      "id [REDACTED] and [REDACTED]; [REDACTED] [REDACTED] corp-12");
  EXPECT_EQ(counts.by_rule,
            (std::map<std::string, std::uint64_t>{
                {"pattern:custom_1", 2}, {"pattern:custom_2", 1}, {"pattern:custom_3", 1}}));
  EXPECT_EQ(counts.total(), 4u);
}

TEST(RedactorOperatorPatterns, ABadPatternIsAnErrorNamingIt) {
  auto bad = Redactor::Create({.names = {}, .patterns = {"fine-[0-9]+", "(unclosed"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("(unclosed"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("pattern 2"), std::string::npos) << bad.error().message;
}

TEST(RedactorOperatorPatterns, APatternMatchingNothingIsAnError) {
  for (const std::string pattern : {"x*", "^", "\\b", "(?:)", "a|", "\\s*"}) {
    auto bad = Redactor::Create({.names = {}, .patterns = {pattern}});
    ASSERT_FALSE(bad.ok()) << pattern;
    EXPECT_NE(bad.error().message.find("empty"), std::string::npos) << bad.error().message;
    EXPECT_NE(bad.error().message.find(pattern), std::string::npos) << bad.error().message;
  }
}

}  // namespace
}  // namespace trainwatch::collect
