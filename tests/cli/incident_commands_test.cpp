#include "cli/incident_commands.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "support/temp_dir.h"

namespace trainwatch::cli {
namespace {

// Two incidents, the first with its bundle record, the second still capturing, a line that is
// not JSON, and an unfinished last line.
constexpr const char* kLog =
    R"log({"id":"20261125T091200Z-ab12000001","kind":"crash","summary":"KeyError: 'labels'","cause":"application","action":"cancel_retries","verdict":"python.traceback (application); the same application failure for the 2nd time: retrying repeats it","fingerprint":"0123456789abcdef","recurrence":{"count":2,"first":"2026-11-25T08:00:00.000Z","previous":"2026-11-25T08:00:00.000Z"},"rules":["python.traceback"],"opened":"2026-11-25T09:12:00.000Z","closed":"2026-11-25T09:12:02.000Z","firings":[{"rule":"python.traceback","stream":"/logs/train.log","line":41,"text":"Traceback (most recent call last):","summary":"KeyError: 'labels'"}]}
not json
{"bundle_for":"20261125T091200Z-ab12000001","bundle":"/var/lib/trainwatch/bundles/x.tar.zst","ranks":"ranks 0-2: all_reduce at train.py:88; rank 3: sleep at data.py:41","suspects":[{"label":"rank 3","rank":3,"pid":4242,"reason":"not inside a collective"}]}
{"id":"20261125T100000Z-ab12000002","kind":"hang","summary":"no progress for 600s","cause":"unknown","action":"inspect","verdict":"hang.progress_stall (unknown)","rules":["hang.progress_stall"],"opened":"2026-11-25T10:00:00.000Z","closed":"2026-11-25T10:00:02.000Z","firings":[]}
{"id":"20261125T1100)log";

class IncidentCommandsTest : public ::testing::Test {
 protected:
  IncidentsOptions Options(const std::string& file = {}) {
    IncidentsOptions options;
    options.file = file.empty() ? temp_.Write("incidents.jsonl", kLog) : file;
    return options;
  }
  testing::TempDir temp_;
  std::ostringstream out_, err_;
};

TEST_F(IncidentCommandsTest, RecordsJoinTheirBundleRecordAndSkipWhatIsNotWhole) {
  const auto records = ReadIncidentRecords(kLog);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["bundle"], "/var/lib/trainwatch/bundles/x.tar.zst");
  EXPECT_EQ(records[0]["suspects"][0]["rank"], 3);
  EXPECT_FALSE(records[1].contains("bundle"));
}

TEST_F(IncidentCommandsTest, ListShowsEachIncidentsVerdictRecurrenceAndBundle) {
  ASSERT_EQ(RunIncidentsList(Options(), out_, err_), 0) << err_.str();
  const std::string text = out_.str();
  EXPECT_NE(text.find("2026-11-25T09:12:00.000Z  crash  20261125T091200Z-ab12000001\n"
                      "    KeyError: 'labels'\n"
                      "    cause application, action cancel_retries; seen 2 times since "
                      "2026-11-25T08:00:00.000Z\n"
                      "    open\n"
                      "    bundle /var/lib/trainwatch/bundles/x.tar.zst\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hang  20261125T100000Z-ab12000002"), std::string::npos) << text;
}

TEST_F(IncidentCommandsTest, ShowTakesAUniqueStartOfAnId) {
  IncidentsOptions options = Options();
  options.id = "20261125T0912";
  ASSERT_EQ(RunIncidentsShow(options, out_, err_), 0) << err_.str();
  EXPECT_NE(out_.str().find("verdict    cause application, action cancel_retries: "
                            "python.traceback (application); the same"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("suspect    rank 3 (pid 4242): not inside a collective"),
            std::string::npos);
  EXPECT_NE(out_.str().find("    -> KeyError: 'labels'"), std::string::npos);
  options.id = "20261125T";
  EXPECT_EQ(RunIncidentsShow(options, out_, err_), 2);
  EXPECT_NE(err_.str().find("names 2 incidents"), std::string::npos) << err_.str();
  options.id = "20261125T100000Z-ab12000002";
  out_.str("");
  ASSERT_EQ(RunIncidentsShow(options, out_, err_), 0);
  EXPECT_NE(out_.str().find("bundle     not recorded"), std::string::npos) << out_.str();
}

TEST_F(IncidentCommandsTest, AckRecordsTheResolutionOnceAndListAndShowSayIt) {
  IncidentsOptions options = Options();
  options.id = "20261125T1000";
  options.why = "node rebooted";
  options.now = std::chrono::system_clock::time_point(std::chrono::seconds(1795601100));
  ASSERT_EQ(RunIncidentsAck(options, out_, err_), 0) << err_.str();
  EXPECT_NE(out_.str().find("incident 20261125T100000Z-ab12000002 resolved: acknowledged by an "
                            "operator: node rebooted (recorded in "),
            std::string::npos)
      << out_.str();

  // The record follows the unfinished line on a line of its own, and is joined to its incident.
  std::ifstream in(options.file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto records = ReadIncidentRecords(text);
  ASSERT_EQ(records.size(), 2u) << text;
  EXPECT_FALSE(records[0].contains("resolved"));
  ASSERT_TRUE(records[1].contains("resolved")) << records[1].dump(1);
  EXPECT_EQ(records[1]["resolved"]["how"], "ack");
  EXPECT_EQ(records[1]["resolved"]["why"], "acknowledged by an operator: node rebooted");
  EXPECT_EQ(records[1]["resolved"]["at"], "2026-11-25T10:05:00.000Z") << "the time it was given";

  out_.str("");
  ASSERT_EQ(RunIncidentsList(Options(options.file), out_, err_), 0);
  EXPECT_NE(out_.str().find("    resolved 20"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find(" (ack): acknowledged by an operator: node rebooted\n"),
            std::string::npos)
      << out_.str();

  EXPECT_EQ(RunIncidentsAck(options, out_, err_), 2);
  EXPECT_NE(err_.str().find("incident 20261125T100000Z-ab12000002 is not open: resolved "),
            std::string::npos)
      << err_.str();
  options.id = "nonesuch";
  EXPECT_EQ(RunIncidentsAck(options, out_, err_), 2);
  EXPECT_NE(err_.str().find("no incident 'nonesuch' in "), std::string::npos) << err_.str();
}

// Security round 3, item 12: a log line's terminal escapes (a retitle, a screen clear) are
// shown, never run, by list and show.
TEST_F(IncidentCommandsTest, TerminalEscapesFromTheLogAreShownNotRun) {
  const std::string log = temp_.Write(
      "escapes.jsonl",
      R"({"id":"20261125T110000Z-ab12000003","kind":"crash","summary":"boom\u001b]0;owned\u0007\u001b[2J","cause":"application","action":"inspect","verdict":"v","rules":["r"],"opened":"2026-11-25T11:00:00.000Z","firings":[{"rule":"r","stream":"/logs/x.log","line":1,"text":"\u009b2J boom"}]})"
      "\n");
  ASSERT_EQ(RunIncidentsList(Options(log), out_, err_), 0) << err_.str();
  IncidentsOptions show = Options(log);
  show.id = "20261125T110000Z";
  ASSERT_EQ(RunIncidentsShow(show, out_, err_), 0) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
  EXPECT_NE(text.find("boom\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("\\x9b2J boom"), std::string::npos) << text;
}

TEST_F(IncidentCommandsTest, NoLogYetIsNoIncidentNotAnError) {
  IncidentsOptions options;
  options.file = (temp_.path() / "none.jsonl").string();
  ASSERT_EQ(RunIncidentsList(options, out_, err_), 0);
  EXPECT_NE(out_.str().find("no incidents in "), std::string::npos);
}

}  // namespace
}  // namespace trainwatch::cli
