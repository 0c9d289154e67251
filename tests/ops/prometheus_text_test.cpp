#include "ops/prometheus_text.h"

#include <gtest/gtest.h>

namespace trainwatch::ops {
namespace {

TEST(PrometheusText, WritesHelpTypeAndEscapedLabels) {
  const std::vector<MetricFamily> families = {
      {"tw_hits_total",
       "Hits\\by rule\nper line.",
       "counter",
       {{{{"rule", "a\"b\\c\nd"}}, 3}, {{{"rule", "plain"}, {"source", "train"}}, 0}}},
      {"tw_empty_total", "Nothing yet.", "counter", {}},
      {"tw_seconds", "A time.", "gauge", {{{}, 1795275982.4740522}, {{{"of", "x"}}, 0.25}}}};
  EXPECT_EQ(PrometheusText(families),
            "# HELP tw_hits_total Hits\\\\by rule\\nper line.\n"
            "# TYPE tw_hits_total counter\n"
            "tw_hits_total{rule=\"a\\\"b\\\\c\\nd\"} 3\n"
            "tw_hits_total{rule=\"plain\",source=\"train\"} 0\n"
            "# HELP tw_seconds A time.\n"
            "# TYPE tw_seconds gauge\n"
            "tw_seconds 1795275982.4740522\n"
            "tw_seconds{of=\"x\"} 0.25\n");
}

TEST(PrometheusText, NeverWritesInvalidUtf8OrTheSameSeriesTwice) {
  const std::vector<MetricFamily> families = {
      {"tw_bar",
       "Bars.",
       "gauge",
       {{{{"bar", "tqdm:\xff\xfe ok \xc3\xa9 \xe2\x82"}}, 1},
        {{{"bar", "same"}}, 2},
        {{{"bar", "same"}}, 3},
        {{{"bar", "\xed\xa0\x80 \xc0\xaf \xf0\x9f\x98\x80"}}, 4}}}};
  EXPECT_EQ(PrometheusText(families),
            "# HELP tw_bar Bars.\n"
            "# TYPE tw_bar gauge\n"
            "tw_bar{bar=\"tqdm:\xEF\xBF\xBD\xEF\xBF\xBD ok \xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD\"} 1\n"
            "tw_bar{bar=\"same\"} 2\n"
            "tw_bar{bar=\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD "
            "\xf0\x9f\x98\x80\"} 4\n");
}

}  // namespace
}  // namespace trainwatch::ops
