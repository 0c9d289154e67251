#include "report/report_html.h"

#include <gtest/gtest.h>

#include "report/html_text.h"
#include "report/timeline_svg.h"

namespace trainwatch::report {
namespace {

using json = nlohmann::ordered_json;

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

// A hang of four ranks sharing one log, rank 3 asleep, as the capture writes its manifest.
json HangManifest() {
  constexpr std::int64_t kStall = 1764061920000;  // 09:12:00Z
  json lanes = json::array();
  for (int rank = 0; rank < 4; ++rank) {
    json advances = json::array();
    for (int step = 0; step < (rank == 3 ? 3 : 5); ++step) {
      advances.push_back(kStall - 10000 + step * 1000);
    }
    lanes.push_back({{"stream", "/logs/train.log"},
                     {"bar", "'Epoch 0' at 5/40"},
                     {"rank", rank},
                     {"pids", {4100, 4101, 4102, 4103}},
                     {"first_seen_ms", kStall - 60000},
                     {"complete", false},
                     {"advances_ms", advances}});
  }
  json ranks = json::array();
  for (int rank = 0; rank < 4; ++rank) {
    ranks.push_back({{"label", "rank " + std::to_string(rank)},
                     {"rank", rank},
                     {"pid", 4100 + rank},
                     {"comm", "python3"},
                     {"alive", true},
                     {"cpu_percent", rank == 3 ? 0.0 : 2.0},
                     {"python_route", "gdb"},
                     {"native_route", "eu-stack"},
                     {"where", rank == 3 ? "sleep at data.py:41" : "all_reduce at train.py:88"},
                     {"folder", "ranks/" + std::to_string(rank)}});
  }
  return {{"schema_version", 1},
          {"trainwatch_version", "0.9.0"},
          {"created", "2025-11-25T09:12:20Z"},
          {"created_ms", kStall + 20000},
          {"host", "node-17"},
          {"incident",
           {{"id", "20251125T091210Z-ab12000001"},
            {"kind", "hang"},
            {"summary", "'Epoch 0' at 5/40 has not advanced for 10s <script>alert(1)</script>"},
            {"cause", "unknown"},
            {"action", "inspect"},
            {"verdict", "hang.progress_stall (unknown)"},
            {"fingerprint", "0123456789abcdef"},
            {"recurrence", 2},
            {"rules", {"hang.progress_stall"}},
            {"opened", "2025-11-25T09:12:10Z"},
            {"opened_ms", kStall + 10000},
            {"firings",
             {{{"rule", "hang.progress_stall"},
               {"kind", "hang"},
               {"stream", "/logs/train.log"},
               {"line", 120},
               {"text", "[rank0]: Epoch 0:  12%|#  | 5/40"},
               {"summary", "'Epoch 0' at 5/40 has not advanced for 10s"},
               {"time_ms", kStall + 10000},
               {"context", {"[rank1]: Epoch 0:  12%|#  | 5/40"}}}}}}},
          {"timeline", {{"lanes", lanes}}},
          {"reduced", false},
          {"collectors",
           {{{"name", "hl-smi"},
             {"status", "missing"},
             {"duration_seconds", 0.01},
             {"bytes", 0},
             {"detail", "hl-smi is not installed"}},
            {{"name", "ps"}, {"status", "ok"}, {"duration_seconds", 0.05}, {"bytes", 2048}}}},
          {"files",
           {{{"path", "system/ps.txt"}, {"bytes", 2048}},
            {{"path", "logs/train.log#1"}, {"bytes", 100}}}},
          {"ranks",
           {{"ranks", ranks},
            {"groups",
             {{{"ranks", {"rank 0", "rank 1", "rank 2"}},
               {"where", "all_reduce at train.py:88"},
               {"in_collective", true}},
              {{"ranks", {"rank 3"}}, {"where", "sleep at data.py:41"}, {"in_collective", false}}}},
            {"suspects",
             {{{"label", "rank 3"},
               {"rank", 3},
               {"pid", 4103},
               {"reason", "not inside a collective (sleep at data.py:41)"}}}},
            {"summary", "ranks 0-2: all_reduce at train.py:88; rank 3: sleep at data.py:41"}}}};
}

TEST(ReportHtml, TheVerdictAndActionComeFirstAndEveryTextIsEscaped) {
  const std::string html = ReportHtml(HangManifest(), {});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  const std::size_t verdict = html.find("<header id=\"verdict\" class=\"cause-unknown\">");
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(verdict, html.find("id=\"timeline\""));
  EXPECT_NE(html.find("Cause: <strong>unknown</strong>"), std::string::npos);
  EXPECT_NE(html.find("Action: <strong>inspect: look closer at the evidence below</strong>"),
            std::string::npos);
  EXPECT_NE(html.find("Seen 2 times on this node"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "log text is text";
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

// The first screen answers: the stacks' sentence, the culprit's own frames, the roster, and
// why a rank has no Python stack, in that order, inside the header.
TEST(ReportHtml, TheHeaderHoldsTheCulpritsOwnFramesTheRosterAndWhyStacksAreMissing) {
  json manifest = HangManifest();
  json& ranks = manifest["ranks"];
  ranks["verdict"] = {{"kind", "deadlock"},
                      {"says", "deadlock: rank 3's main thread waits for a lock"},
                      {"cause", "application"},
                      {"action", "inspect"},
                      {"culprits", {"rank 3"}}};
  ranks["roster"] = "world size 4: ranks 0-3 alive";
  ranks["ranks"][3]["own_frames"] = {"log_metrics at job.py:47", "<b>step</b> at job.py:90"};
  ranks["ranks"][1]["python_route"] = "";
  ranks["ranks"][1]["route_notes"] = {
      "gdb: no py-bt, native stacks only: it runs in a container whose python3.11 has no debug "
      "information in its image: install python3.11-dbg in the image"};
  const std::string html = ReportHtml(manifest, {});
  const std::size_t header_end = html.find("</header>");
  const std::size_t said = html.find("id=\"stacks-say\"");
  const std::size_t frames = html.find("id=\"culprit-frames\"");
  const std::size_t roster = html.find("id=\"roster\"");
  const std::size_t missing = html.find("id=\"stacks-missing\"");
  ASSERT_NE(frames, std::string::npos) << html.substr(0, header_end);
  EXPECT_LT(said, frames);
  EXPECT_LT(frames, roster);
  EXPECT_LT(roster, missing);
  EXPECT_LT(missing, header_end);
  EXPECT_NE(html.find("rank 3's own code, innermost first:</p><ol><li><code>log_metrics at "
                      "job.py:47</code></li><li><code>&lt;b&gt;step&lt;/b&gt; at job.py:90"),
            std::string::npos)
      << html.substr(frames, 300);
  EXPECT_NE(html.find("Ranks: <strong>world size 4: ranks 0-3 alive</strong>"), std::string::npos);
  EXPECT_NE(html.find("No Python stack for <strong>rank 1</strong>: gdb: no py-bt"),
            std::string::npos);
  EXPECT_NE(html.find("install python3.11-dbg in the image"), std::string::npos);
  // The rules said unknown: the answer is the stacks', said as theirs.
  EXPECT_NE(html.find("Cause: <strong>application</strong> (from the stacks)"), std::string::npos)
      << html.substr(0, header_end);
  // Without a verdict, the first suspect is the culprit whose frames are shown.
  ranks.erase("verdict");
  EXPECT_NE(ReportHtml(manifest, {}).find("rank 3's own code"), std::string::npos);
}

TEST(ReportHtml, NeedsNothingFromOutsideThePageAndLinksEveryFile) {
  const std::string html = ReportHtml(HangManifest(), {});
  for (const char* outside : {"http://", "https://", "src=", "@import", "url("}) {
    if (std::string(outside) == "http://") {
      // The SVG namespace is a name, not a fetch.
      EXPECT_EQ(Count(html, outside), Count(html, "http://www.w3.org/2000/svg")) << outside;
      continue;
    }
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  }
  EXPECT_NE(html.find("<a href=\"manifest.json\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"system/ps.txt\">system/ps.txt</a>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"logs/train.log%231\">logs/train.log#1</a>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"ranks/3/\">"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"status-missing\">missing</td>"), std::string::npos);
}

TEST(ReportHtml, OneLanePerRankWithTheSuspectHighlightedInTheTimelineAndTheTables) {
  const std::string html = ReportHtml(HangManifest(), {});
  EXPECT_EQ(Count(html, "<g class=\"lane"), 4u);
  EXPECT_EQ(Count(html, "<g class=\"lane suspect\" data-label=\"rank 3\">"), 1u);
  EXPECT_NE(html.find("<li class=\"suspect\" data-rank=\"3\"><strong>rank 3</strong> (pid 4103): "
                      "not inside a collective"),
            std::string::npos);
  EXPECT_NE(html.find("<tr class=\"suspect\"><td>rank 3</td>"), std::string::npos);
  EXPECT_EQ(Count(html, "<circle class=\"advance\""), 3u * 5 + 3);
  EXPECT_EQ(Count(html, "<path class=\"mark kind-hang\""), 1u);
  EXPECT_NE(html.find("opened 09:12:10"), std::string::npos);
  EXPECT_NE(html.find("captured 09:12:20"), std::string::npos);
  EXPECT_NE(html.find("last advance 09:11:52"), std::string::npos) << "rank 3 stopped first";
}

TEST(ReportHtml, DevicesAreRowsAndTheirAbsenceIsSaid) {
  EXPECT_NE(ReportHtml(HangManifest(), {}).find("No device tool answered"), std::string::npos);
  DeviceRow row;
  row.tool = "hl-smi";
  row.index = "0";
  row.utilization = "100 %";
  const std::string html = ReportHtml(HangManifest(), {row});
  EXPECT_NE(html.find("<tr><td>hl-smi</td><td>0</td><td></td><td></td><td>100 %</td>"),
            std::string::npos);
}

TEST(TimelineOf, FiringsFindTheirRanksLaneAndRanksWithoutABarGetOne) {
  json manifest = HangManifest();
  manifest["timeline"]["lanes"] = json::array();  // a log without bars
  manifest["incident"]["firings"][0]["text"] = "[rank2]: RuntimeError: boom";
  manifest["incident"]["firings"][0]["kind"] = "crash";
  const Timeline timeline = TimelineOf(manifest);
  ASSERT_EQ(timeline.lanes.size(), 4u);
  EXPECT_EQ(timeline.lanes[2].label, "rank 2");
  EXPECT_EQ(timeline.lanes[2].marks.size(), 1u);
  EXPECT_EQ(timeline.lanes[2].detail, "all_reduce at train.py:88");
  EXPECT_TRUE(timeline.lanes[3].suspect);
  EXPECT_EQ(timeline.first_error_ms, 1764061930000);
}

TEST(TimelineOf, AManifestWithoutTimelineOrRanksStillDraws) {
  const json bare = {{"incident", {{"kind", "manual"}, {"firings", json::array()}}}};
  const Timeline timeline = TimelineOf(bare);
  EXPECT_TRUE(timeline.lanes.empty());
  EXPECT_NE(TimelineSvg(timeline).find("no progress bar or firing line to draw"),
            std::string::npos);
  EXPECT_NE(ReportHtml(json::object(), {}).find("</html>"), std::string::npos);
}

TEST(TimelineOf, TwoBarsOfOneLogAreTwoLanesThatSayWhich) {
  json manifest = HangManifest();
  manifest.erase("ranks");
  for (json& lane : manifest["timeline"]["lanes"]) {
    lane["rank"] = nullptr;
  }
  manifest["timeline"]["lanes"][1]["bar"] = "'step' at 19";
  const Timeline timeline = TimelineOf(manifest);
  ASSERT_GE(timeline.lanes.size(), 2u);
  EXPECT_EQ(timeline.lanes[0].label, "train.log 'Epoch 0'");
  EXPECT_EQ(timeline.lanes[1].label, "train.log 'step'");
}

TEST(ReportHtml, RanksWhoseProcessesWereGoneSaySo) {
  json manifest = HangManifest();
  manifest["ranks"]["ranks"] = json::array();
  manifest["ranks"]["groups"] = json::array();
  manifest["ranks"]["suspects"] = json::array();
  const std::string html = ReportHtml(manifest, {});
  EXPECT_NE(html.find("No rank's stacks were taken"), std::string::npos);
  EXPECT_EQ(html.find("id=\"groups\""), std::string::npos);
}

TEST(ReportHtml, AManifestOfWrongTypesStillMakesAPageWithoutAThrow) {
  const json odd = json::parse(R"({"incident": "x", "reduced": "yes", "files": {},
    "ranks": {"ranks": [{"rank": "3", "cpu_percent": "hi", "alive": 3, "pid": []}],
              "suspects": 5, "groups": [{"ranks": "all", "in_collective": "no"}]},
    "collectors": [{"duration_seconds": "x", "status": 7}],
    "timeline": {"lanes": [{"advances_ms": "no", "pids": {}, "rank": 1.5}, 3]}})");
  std::string html;
  EXPECT_NO_THROW(html = ReportHtml(odd, {}));
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NO_THROW(ReportHtml(json::array(), {}));
}

TEST(HtmlText, EscapesWhatHtmlReads) {
  EXPECT_EQ(Escape(R"(<a href="x">'&'</a>)"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(ClockOf(1764061920000), "09:12:00");
}

}  // namespace
}  // namespace trainwatch::report
