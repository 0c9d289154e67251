// YamlReader: reads typed values out of one YAML file for a loader (the rule packs; the daemon
// config next), recording every problem as a Diagnostic with file:line:col instead of
// stopping at the first, so an operator sees all mistakes in one run. Exceptions from
// yaml-cpp stop here. Holds no document; single thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/quantity.h"
#include "core/source_location.h"

namespace trainwatch::config {

class YamlReader {
 public:
  // Problems are appended to `errors`, which must outlive the reader.
  YamlReader(std::string file, std::vector<Diagnostic>& errors);

  // The file's one document. A null node when there is none (the caller says what was
  // expected) or when it is malformed (recorded). A second document after '---' is recorded
  // as a problem: a plain load would drop it silently. A trailing '---' is fine.
  YAML::Node ParseDocument(std::string_view text);

  SourceLocation Where(const YAML::Mark& mark) const;
  SourceLocation Where(const YAML::Node& node) const { return Where(node.Mark()); }
  void Fail(const YAML::Mark& mark, std::string message);
  void Fail(const YAML::Node& node, std::string message) { Fail(node.Mark(), std::move(message)); }
  // A problem of the whole file, reported at line 1.
  void FailAtStart(std::string message);

  // Records a problem for every key of `map` not in `allowed` and every key given twice;
  // `where` names the map ("a rule"). Remembers where keys are, for empty values.
  void CheckKeys(const YAML::Node& map, const std::set<std::string, std::less<>>& allowed,
                 const std::string& where);
  // Forgets the key positions of the previous map (call when a new entry starts).
  void ForgetKeys() { key_marks_.clear(); }

  // A single value; `what` names it in messages, and its last word is the key, so an empty
  // value ("pattern:" and nothing after it) is reported at the key's line.
  std::optional<std::string> Scalar(const YAML::Node& node, const std::string& what);
  // A duration such as 30s or 10m (see core/quantity.h).
  std::optional<Duration> DurationField(const YAML::Node& node, const std::string& what);
  // `true` or `false`; anything else fails with "<what> must be true or false".
  std::optional<bool> BoolField(const YAML::Node& node, const std::string& what);

  const std::string& file() const { return file_; }

 private:
  YAML::Mark MarkOf(const YAML::Node& node, const std::string& what) const;

  std::string file_;
  std::vector<Diagnostic>& errors_;
  std::map<std::string, YAML::Mark> key_marks_;
};

}  // namespace trainwatch::config
