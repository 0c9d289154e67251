#include "detect/fingerprint.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <cstdint>

namespace trainwatch::detect {

std::string NormalizeErrorText(std::string_view text) {
  // In order: what says where or when rather than what failed goes first (prefixes, dates
  // and times, addresses, ids), then every number that is left.
  static const RE2 kPrefixes(
      R"((?:^|\s)(?:\[(?:rank|default)\d+\]:|\[\d+,\d+\]<std(?:out|err)>:|\(pid=\d+(?:, ip=[^)]*)?\)))");
  static const RE2 kDateTime(
      R"(\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?|\b\d\d:\d\d:\d\d(?:[.,]\d+)?)");
  static const RE2 kAddress(R"(\b0[xX][0-9a-fA-F]+\b)");
  static const RE2 kHexId(R"(\b[0-9a-fA-F]*\d[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\b)");
  static const RE2 kNumber(R"(\d+(?:\.\d+)?)");
  static const RE2 kSpace(R"(\s+)");
  std::string out(text);
  RE2::GlobalReplace(&out, kPrefixes, " ");
  RE2::GlobalReplace(&out, kDateTime, "");
  RE2::GlobalReplace(&out, kAddress, "<addr>");
  RE2::GlobalReplace(&out, kHexId, "<id>");
  RE2::GlobalReplace(&out, kNumber, "#");
  RE2::GlobalReplace(&out, kSpace, " ");
  const std::size_t begin = out.find_first_not_of(' ');
  if (begin == std::string::npos) {
    return {};
  }
  const std::size_t end = out.find_last_not_of(' ');
  return out.substr(begin, end - begin + 1);
}

std::string NormalizeFrame(std::string_view frame) {
  static const RE2 kFrame(R"re(File "(?:[^"]*/)?([^"/]*)", line \d+, in (.+))re");
  std::string file;
  std::string function;
  if (RE2::FullMatch(frame, kFrame, &file, &function)) {
    return file + " in " + function;
  }
  return NormalizeErrorText(frame);
}

namespace {

// The frame of the firing the incident's summary came from, else of the first that has one.
std::string_view FrameOf(const Incident& incident) {
  const Firing* first = nullptr;
  for (const Firing& firing : incident.firings) {
    if (firing.event.frame.empty()) {
      continue;
    }
    if (firing.event.summary == incident.summary) {
      return firing.event.frame;
    }
    if (first == nullptr) {
      first = &firing;
    }
  }
  return first != nullptr ? std::string_view(first->event.frame) : std::string_view();
}

}  // namespace

std::string Fingerprint(const Incident& incident) {
  const std::string& rule = !incident.verdict.rule.empty()
                                ? incident.verdict.rule
                                : (incident.rules.empty() ? std::string() : incident.rules[0]);
  std::string key = std::string(rules::RuleKindName(incident.kind)) + '\n' + rule + '\n' +
                    NormalizeErrorText(incident.summary);
  if (const std::string_view frame = FrameOf(incident); !frame.empty()) {
    key += '\n';
    key += NormalizeFrame(frame);
  }
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64: stable, and enough for a label
  for (unsigned char c : key) {
    hash = (hash ^ c) * 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace trainwatch::detect
