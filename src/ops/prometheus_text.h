// The Prometheus text exposition format (version 0.0.4), which node_exporter's textfile
// collector reads: families of samples with HELP and TYPE lines, label values escaped. No
// library for it is packaged in Debian 12 (prometheus-cpp is not), and the format is three
// escapes and a line layout. Value types; any thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainwatch::ops {

struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

struct MetricFamily {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total
  std::string help;
  std::string type;  // "counter" or "gauge"
  std::vector<MetricSample> samples;
};

// The families as exposition text. A family without samples is left out (an empty HELP/TYPE
// pair says nothing); a sample whose labels repeat an earlier one's is left out (a series
// twice makes the collector reject the file); text that is not UTF-8 becomes U+FFFD.
std::string PrometheusText(const std::vector<MetricFamily>& families);

}  // namespace trainwatch::ops
