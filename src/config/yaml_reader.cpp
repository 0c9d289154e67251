#include "config/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace trainwatch::config {
namespace {

// yaml-cpp 0.7 (Debian 12) loops forever in LoadAll when a document's first token is ','
// (",a", found by tests/fuzz/rule_loader_fuzz): the line (1-based) where one does, or 0.
int CommaStartingADocument(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) {
    text.remove_prefix(3);  // a UTF-8 byte order mark
  }
  bool at_start = true;
  int line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const bool marker = line.starts_with("---") &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    if (marker || line.starts_with("...")) {
      at_start = true;
      line.remove_prefix(3);
    } else if (at_start && line.starts_with('%')) {
      continue;  // a directive
    }
    if (!at_start) {
      continue;
    }
    line.remove_prefix(std::min(line.find_first_not_of(" \t\r"), line.size()));
    if (line.starts_with(',')) {
      return line_number;
    }
    at_start = line.empty() || line.starts_with('#');
  }
  return 0;
}

// Notes where a document's first node starts, if it has one; builds nothing.
class ContentSpotter : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> content;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Spot(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Spot(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Spot(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Spot(mark);
  }
  void OnMapEnd() override {}

 private:
  void Spot(const YAML::Mark& mark) {
    if (!content) {
      content = mark;
    }
  }
};

}  // namespace

YamlReader::YamlReader(std::string file, std::vector<Diagnostic>& errors)
    : file_(std::move(file)), errors_(errors) {}

YAML::Node YamlReader::ParseDocument(std::string_view text) {
  if (const int line = CommaStartingADocument(text); line > 0) {
    YAML::Mark mark;
    mark.line = line - 1;
    Fail(mark, "malformed YAML: a document cannot start with ','");
    return YAML::Node();
  }
  YAML::Node first;
  try {
    first = YAML::Load(std::string(text));
    // Not LoadAll: yaml-cpp 0.7's loops forever on a stray ',' in block context (found by
    // tests/fuzz/rule_loader_fuzz). Each document takes at least a line, so no more passes
    // than lines are needed to see them all.
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    const auto passes = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 2;
    for (std::size_t i = 0; i < passes; ++i) {
      ContentSpotter spotter;
      if (!parser.HandleNextDocument(spotter)) {
        break;
      }
      if (i > 0 && spotter.content) {
        Fail(*spotter.content,
             "a file holds one YAML document; this one (after '---') would be ignored: move its "
             "content into the first document or another file");
      }
    }
  } catch (const YAML::Exception& e) {
    Fail(e.mark, "malformed YAML: " + e.msg);
    return YAML::Node();
  }
  return first;
}

SourceLocation YamlReader::Where(const YAML::Mark& mark) const {
  // yaml-cpp counts from 0 and uses -1 for "unknown".
  return {file_, mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0};
}

void YamlReader::Fail(const YAML::Mark& mark, std::string message) {
  errors_.push_back({Where(mark), std::move(message)});
}

void YamlReader::FailAtStart(std::string message) {
  Diagnostic diagnostic;
  diagnostic.where.file = file_;
  diagnostic.where.line = 1;
  diagnostic.message = std::move(message);
  errors_.push_back(std::move(diagnostic));
}

void YamlReader::CheckKeys(const YAML::Node& map, const std::set<std::string, std::less<>>& allowed,
                           const std::string& where) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    const std::string key = entry.first.as<std::string>("");
    key_marks_[key] = entry.first.Mark();
    if (!allowed.contains(key)) {
      std::string list;
      for (const auto& name : allowed) {
        list += (list.empty() ? "" : ", ") + name;
      }
      Fail(entry.first,
           "unknown key '" + key + "' in " + where + " (expected one of: " + list + ")");
    } else if (!seen.insert(key).second) {
      Fail(entry.first, "key '" + key + "' appears twice in " + where);
    }
  }
}

YAML::Mark YamlReader::MarkOf(const YAML::Node& node, const std::string& what) const {
  // An empty value has the position of whatever comes next; the key's line is the useful one.
  if (node.IsNull()) {
    const std::string key = what.substr(what.rfind(' ') + 1);
    if (auto it = key_marks_.find(key); it != key_marks_.end()) {
      return it->second;
    }
  }
  return node.Mark();
}

std::optional<std::string> YamlReader::Scalar(const YAML::Node& node, const std::string& what) {
  if (node.IsNull()) {
    Fail(MarkOf(node, what), what + " has no value");
    return std::nullopt;
  }
  if (!node.IsScalar()) {
    Fail(node, what + " must be a single value");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<bool> YamlReader::BoolField(const YAML::Node& node, const std::string& what) {
  auto text = Scalar(node, what);
  if (!text) {
    return std::nullopt;
  }
  if (*text != "true" && *text != "false") {
    Fail(node, what + " must be true or false");
    return std::nullopt;
  }
  return *text == "true";
}

std::optional<Duration> YamlReader::DurationField(const YAML::Node& node, const std::string& what) {
  auto text = Scalar(node, what);
  if (!text) {
    return std::nullopt;
  }
  auto parsed = ParseDuration(*text);
  if (!parsed) {
    Fail(node, what + ": " + parsed.error().message);
    return std::nullopt;
  }
  return *parsed;
}

}  // namespace trainwatch::config
