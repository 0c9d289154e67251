// The secret kinds the red team planted past the first redactor (issue 11), each with the
// look-alikes that must stay: URL user info, GitHub tokens, command-line options, webhook
// URLs, Azure keys, DSNs, OpenAI keys, a bare AWS secret key, a key's body lines alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collect/redactor.h"

namespace trainwatch::collect {
namespace {

using namespace std::string_literals;

// Built once for the file: compiling the patterns costs tens of milliseconds, the cases
// microseconds. Immutable, so sharing it changes nothing.
std::shared_ptr<const Redactor> Make() {
  static const std::shared_ptr<const Redactor> shared = [] {
    auto redactor = Redactor::Create();
    EXPECT_TRUE(redactor.ok()) << (redactor.ok() ? "" : redactor.error().message);
    return redactor.ok() ? *redactor : nullptr;
  }();
  return shared;
}

std::string Redact(const Redactor& redactor, std::string text, RedactionCounts& counts) {
  redactor.RedactText(text, counts);
  return text;
}

constexpr char kAwsSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

struct Case {
  std::string input;
  std::string expected;
  std::map<std::string, std::uint64_t> counts;
};

class RedactionKindTest : public ::testing::TestWithParam<Case> {};

TEST_P(RedactionKindTest, ReplacesTheSecretAndCountsIt) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(Redact(*redactor, GetParam().input, counts), GetParam().expected);
  EXPECT_EQ(counts.by_rule, GetParam().counts);
}

INSTANTIATE_TEST_SUITE_P(
    RedTeam, RedactionKindTest,
    ::testing::Values(
        Case{"GET https://admin:pass@host/v1/models failed",
             "GET https://admin:[REDACTED]@host/v1/models failed",
             {{"pattern:url_password", 1}}},
        Case{"remote: https://0123456789abcdef0123456789abcdef@o12345.ingest.sentry.io/4505",
             "remote: https://[REDACTED]@o12345.ingest.sentry.io/4505",
             {{"pattern:url_password", 1}}},
        Case{
            "gho_0123456789abcdefghijABCDEFGHIJ012345 and ghs_0123456789abcdefghijABCDEFGHIJ012345",
            "[REDACTED] and [REDACTED]",
            {{"pattern:github_token", 2}}},
        Case{"python train.py --password=hunter2 --lr 3e-4",
             "python train.py --password=[REDACTED] --lr 3e-4",
             {{"pattern:secret_option", 1}}},
        Case{"python train.py --password hunter2 --lr 3e-4",
             "python train.py --password [REDACTED] --lr 3e-4",
             {{"pattern:secret_option", 1}}},
        Case{"train.py '--db-password=p w' --hub-token 'abc def' --secret-key=\"x y\"",
             "train.py '--db-password=[REDACTED] w' --hub-token '[REDACTED]' "
             "--secret-key=\"[REDACTED]\"",
             {{"pattern:secret_option", 3}}},
        Case{"serve --api-key sk-proj-AbCdEf0123456789ghIJklMNopQRstUVwx",
             "serve --api-key [REDACTED]",
             {{"pattern:openai_key", 1}}},
        Case{"OPENAI said sk-abcdefghijABCDEFGHIJ0123456789abcdefghijKLMNOPQR.",
             "OPENAI said [REDACTED].",
             {{"pattern:openai_key", 1}}},
        Case{"key sk-ant-api03-AbCdEf0123456789ghIJklMNopQRstUVwx_yz",
             "key [REDACTED]",
             {{"pattern:openai_key", 1}}},
        Case{"AKIAIOSFODNN7EXAMPLE "s + kAwsSecret + "\n",
             "[REDACTED] [REDACTED]\n",
             {{"pattern:aws_access_key", 1}, {"pattern:aws_secret", 1}}},
        Case{"creds: secret="s + kAwsSecret + ", id=AKIAIOSFODNN7EXAMPLE",
             "creds: secret=[REDACTED], id=[REDACTED]",
             {{"pattern:aws_access_key", 1}, {"pattern:aws_secret", 1}}},
        Case{"aws_secret_access_key="s + kAwsSecret,
             "aws_secret_access_key=[REDACTED]",
             {{"pattern:aws_secret", 1}}},
        Case{"posting to https://hooks.slack.com/services/T0000AAAA/B0000BBBB/XXXXXXXXXXXXXXXX",
             "posting to https://hooks.slack.com/services/[REDACTED]",
             {{"pattern:webhook_url", 1}}},
        Case{"https://discord.com/api/webhooks/123456789/abcdefGHIJK-lmn",
             "https://discord.com/api/webhooks/[REDACTED]",
             {{"pattern:webhook_url", 1}}},
        Case{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIz"
             "NDU2Nzg5MGFiY2RlZg==;EndpointSuffix=core.windows.net",
             "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED];"
             "EndpointSuffix=core.windows.net",
             {{"pattern:azure_key", 1}}},
        Case{"https://acct.blob.core.windows.net/c/x?sv=2022-11-02&sig=AbCd%2Bef0123456789xyz%3D",
             "https://acct.blob.core.windows.net/c/x?sv=2022-11-02&sig=[REDACTED]",
             {{"pattern:azure_key", 1}}},
        Case{"Server=db;User Id=sa;Password=Pa55w0rd!;",
             "Server=db;User Id=sa;Password=[REDACTED];",
             {{"pattern:password_field", 1}}},
        Case{"DB_PASSWORD: s3cr3t\n", "DB_PASSWORD: [REDACTED]\n", {{"pattern:password_field", 1}}},
        Case{"xoxb-123456789012-abcdefghijkl", "[REDACTED]", {{"pattern:slack_token", 1}}},
        // BEGIN cut off: the body lines before END go, the END line stays.
        Case{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nBKcw==\n"
             "-----END PRIVATE KEY-----\n",
             "[REDACTED]\n-----END PRIVATE KEY-----\n",
             {{"pattern:private_key", 1}}},
        Case{R"("key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcw==\n-----END PRIVATE KEY-----\n")",
             R"("key": "[REDACTED]\n-----END PRIVATE KEY-----\n")",
             {{"pattern:private_key", 1}}}));

class RedactionLookAlikeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RedactionLookAlikeTest, StaysAsItIs) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  EXPECT_EQ(Redact(*redactor, GetParam(), counts), GetParam());
  EXPECT_EQ(counts.total(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    RedTeam, RedactionLookAlikeTest,
    ::testing::Values(
        // Hashes, SHAs, shapes and counters in ordinary training logs.
        "commit 3f2a9c1d0b8e7f6a5c4d3e2f1a0b9c8d7e6f5a4b",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "checkpoint md5 d41d8cd98f00b204e9800998ecf8427e saved",
        "RuntimeError: shape '[64, 3, 224, 224]' is invalid for input of size 9633792",
        "step 120000/500000 loss=2.3456 lr=3e-4 tokens/s=123456 torch.Size([4096, 4096])",
        "--password-file /run/secrets/db --max-tokens 512 --tokenizer gpt2 --secret-name prod",
        "ssh://git@github.com/org/repo.git", "https://user@host/x",
        "https://huggingface.co/meta-llama/Llama-2-7b/resolve/main/config.json",
        "scikit-learn==1.3.2 sk-learn task-0123456789abcdefghijklmnopqrstuvwxyz",
        "hooks.slack.com is reachable", "AccountName=acct;EndpointSuffix=core.windows.net",
        "PasswordAuthentication no", "PWD=/home/user/run OLDPWD=/home/user",
        // An AWS key id alone is redacted (aws_access_key); a 40-hex SHA far from any key is not.
        "wandb: git commit 3f2a9c1d0b8e7f6a5c4d3e2f1a0b9c8d7e6f5a4b", "-----END PUBLIC KEY-----"));

TEST(RedactLines, AKeyBlockSplitAcrossLinesIsFound) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  std::vector<std::string> lines = {"loading key", "-----BEGIN RSA PRIVATE KEY-----",
                                    "MIIEowIBAAKCAQEA7bq98xYz0123456789abcdefABCDEF",
                                    "-----END RSA PRIVATE KEY-----", "done"};
  RedactionCounts counts;
  redactor->RedactLines(lines, counts);
  EXPECT_EQ(lines,
            (std::vector<std::string>{"loading key", "-----BEGIN RSA PRIVATE KEY-----",
                                      "[REDACTED]", "-----END RSA PRIVATE KEY-----", "done"}));
  EXPECT_EQ(counts.total(), 1u);
}

TEST(RedactLines, BodyLinesWithoutBeginOrEndAreReplaced) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  // The middle of a key printed to a log: no line names it.
  std::vector<std::string> lines = {
      "MIIEowIBAAKCAQEA7bq98xYz0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZab",
      "  b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW  ",
      "QyNTUxOQAAACBf2k3s0Jt0p9x8w==", "Traceback (most recent call last):"};
  RedactionCounts counts;
  redactor->RedactLines(lines, counts);
  EXPECT_EQ(lines, (std::vector<std::string>{"[REDACTED]", "[REDACTED]", "[REDACTED]",
                                             "Traceback (most recent call last):"}));
  EXPECT_EQ(counts.by_rule, (std::map<std::string, std::uint64_t>{{"pattern:private_key", 3}}));
}

TEST(RedactLines, HashesAndOrdinaryLinesStay) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  const std::vector<std::string> original = {
      "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
      "3f2a9c1d0b8e7f6a5c4d3e2f1a0b9c8d7e6f5a4b",
      "Epoch 1: 100%|##########| 903/903",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      ""};
  std::vector<std::string> lines = original;
  RedactionCounts counts;
  redactor->RedactLines(lines, counts);
  EXPECT_EQ(lines, original);
  EXPECT_EQ(counts.total(), 0u);
}

class SecretNameTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SecretNameTest, IsSecret) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  EXPECT_TRUE(redactor->IsSecretName(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(RedTeam, SecretNameTest,
                         ::testing::Values("SLACK_WEBHOOK_URL", "SENTRY_DSN", "DATABASE_DSN",
                                           "AZURE_STORAGE_CONNECTION_STRING",
                                           "SERVICEBUS_CONNECTIONSTRING", "REDIS_CONN_STR",
                                           "HF_HUB_COOKIE"));

TEST(RedactEnvironment, RedTeamEnvironmentLosesEverySecret) {
  const auto redactor = Make();
  ASSERT_NE(redactor, nullptr);
  RedactionCounts counts;
  const std::string out = redactor->RedactEnvironment(
      "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0/B0/XXXXXXXXXXXXXXXX\n"
      "AZURE_STORAGE_CONNECTION_STRING=AccountName=a;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2\n"
      "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2\n"
      "STORE=AccountName=a;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2\n"
      "MIRROR=https://admin:pass@mirror.corp/simple\n"
      "CUDA_VISIBLE_DEVICES=0,1\n",
      counts);
  EXPECT_EQ(out,
            "SLACK_WEBHOOK_URL=[REDACTED]\nAZURE_STORAGE_CONNECTION_STRING=[REDACTED]\n"
            "SENTRY_DSN=[REDACTED]\nSTORE=AccountName=a;AccountKey=[REDACTED]\n"
            "MIRROR=https://admin:[REDACTED]@mirror.corp/simple\nCUDA_VISIBLE_DEVICES=0,1\n");
  EXPECT_EQ(counts.total(), 5u);
}

}  // namespace
}  // namespace trainwatch::collect
