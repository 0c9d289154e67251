// A firing's log text is redacted where it enters the daemon: its line, summary and context
// lines, a key block split across context lines included.
#include "capture/incident_redaction.h"

#include <gtest/gtest.h>

namespace trainwatch::capture {
namespace {

TEST(RedactFiring, LineSummaryAndContextLoseTheirSecrets) {
  auto redactor = collect::Redactor::Create();
  ASSERT_TRUE(redactor.ok());
  detect::Firing firing;
  firing.event.text =
      "MARK 1 FIRE https://admin:pass@host/x ghp_0123456789abcdefghijABCDEFGHIJ012345";
  firing.event.summary =
      "RuntimeError: login failed for sk-proj-AbCdEf0123456789ghIJklMNopQRstUVwx";
  firing.context = {"-----BEGIN PRIVATE KEY-----",
                    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7R3dT3amPemLine1",
                    "-----END PRIVATE KEY-----", "step 3 loss 0.4"};
  collect::RedactionCounts counts;
  RedactFiring(**redactor, firing, counts);
  EXPECT_EQ(firing.event.text, "MARK 1 FIRE https://admin:[REDACTED]@host/x [REDACTED]");
  EXPECT_EQ(firing.event.summary, "RuntimeError: login failed for [REDACTED]");
  EXPECT_EQ(firing.context,
            (std::vector<std::string>{"-----BEGIN PRIVATE KEY-----", "[REDACTED]",
                                      "-----END PRIVATE KEY-----", "step 3 loss 0.4"}));
  EXPECT_EQ(counts.total(), 4u);
}

}  // namespace
}  // namespace trainwatch::capture
