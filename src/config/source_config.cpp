#include "config/source_config.h"

#include <map>

#include "config/yaml_shapes.h"

namespace trainwatch::config {
namespace {

// Like the daemon config parser it was split from: a problem is recorded and parsing goes on.
class SourcesParser {
 public:
  SourcesParser(
      YamlReader& yaml,
      const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path)
      : yaml_(yaml), path_(path) {}

  void Parse(const YAML::Node& node, std::vector<SourceConfig>& out) {
    // No sources is fine (a daemon may only watch wrapped processes), and "sources:" with
    // every entry commented out says the same.
    if (node.IsNull()) {
      return;
    }
    if (!node.IsSequence()) {
      yaml_.Fail(node, "'sources' must be a list of sources, each with a name and tags");
      return;
    }
    std::map<std::string, int> lines;  // source name -> the line it was first given at
    for (const auto& item : node) {
      auto source = ParseSource(item);
      if (!source) {
        continue;
      }
      auto [it, inserted] = lines.try_emplace(source->name, yaml_.Where(item["name"]).line);
      if (!inserted) {
        yaml_.Fail(item["name"], "duplicate source name '" + source->name +
                                     "' (first given at line " + std::to_string(it->second) + ")");
        continue;
      }
      out.push_back(std::move(*source));
    }
  }

 private:
  // nullopt when the entry has no usable name; other problems are recorded and the entry is
  // still returned, so a duplicate name is caught even in a broken entry.
  std::optional<SourceConfig> ParseSource(const YAML::Node& node) {
    if (!node.IsMap()) {
      yaml_.Fail(node,
                 "each entry of 'sources' must be a mapping with name, tags, paths, kmsg or "
                 "processes");
      return std::nullopt;
    }
    yaml_.ForgetKeys();
    yaml_.CheckKeys(node,
                    {"name", "tags", "paths", "kmsg", "processes", "blocked_after", "start_at"},
                    "a source");
    SourceConfig source;
    source.where = yaml_.Where(node);
    const YAML::Node name = node["name"];
    if (!name) {
      yaml_.Fail(node, "a source has no 'name'");
    } else if (auto text = yaml_.Scalar(name, "source name")) {
      if (*text == "wrap") {
        // `trainwatch wrap` adds its command's output as the source "wrap".
        yaml_.Fail(name, "source name 'wrap' is reserved for the output of `trainwatch wrap`");
      } else if (IsPlainName(*text)) {
        source.name = *text;
      } else {
        yaml_.Fail(name, "source name '" + *text +
                             "' must be letters, digits, '.', '_' or '-', starting with a letter "
                             "or digit");
      }
    }
    const std::string label = source.name.empty() ? "a source" : "source '" + source.name + "'";

    if (const YAML::Node tags = node["tags"]) {
      if (IsNonEmptyList(yaml_, tags, label + " tags", "[train]")) {
        for (const auto& tag : tags) {
          auto text = yaml_.Scalar(tag, "a tag");
          if (text && text->empty()) {
            yaml_.Fail(tag, label + ": a tag is empty");
          } else if (text) {
            source.tags.push_back(*text);
          }
        }
      }
    } else {
      yaml_.Fail(node, label + " has no 'tags' (which rules apply to it, like [train])");
    }

    if (const YAML::Node kmsg = node["kmsg"]) {
      source.kmsg = yaml_.BoolField(kmsg, label + ": kmsg").value_or(false);
    }
    const YAML::Node processes = node["processes"];
    if (processes) {
      source.processes = yaml_.BoolField(processes, label + ": processes").value_or(false);
    }
    const YAML::Node paths = node["paths"];
    if (source.kmsg && source.processes) {
      yaml_.Fail(processes,
                 label + " has both 'kmsg: true' and 'processes: true'; make them two sources");
    } else if (paths && (source.kmsg || source.processes)) {
      yaml_.Fail(paths, label + " has both 'paths' and '" + (source.kmsg ? "kmsg" : "processes") +
                            ": true'; make them two sources");
    } else if (paths) {
      if (IsNonEmptyList(yaml_, paths, label + " paths", "[\"~/logs/**/*.log\"]")) {
        for (const auto& path : paths) {
          if (auto resolved = path_(path, label + " path")) {
            source.paths.push_back(*resolved);
          }
        }
      }
    } else if (!source.kmsg && !source.processes) {
      yaml_.Fail(node, label + " has neither 'paths' nor 'kmsg: true' nor 'processes: true'");
    }
    if (const YAML::Node after = node["blocked_after"]) {
      if (!source.processes) {
        yaml_.Fail(after, label + ": 'blocked_after' is for a source with 'processes: true'");
      } else if (const std::optional<Duration> value =
                     yaml_.DurationField(after, label + " blocked_after")) {
        if (value->count() < kMinBlockedAfter.count() ||
            value->count() > kMaxBlockedAfter.count()) {
          yaml_.Fail(after, label + ": blocked_after must be between 4s and 1h");
        } else {
          source.blocked_after = *value;
        }
      }
    }

    if (const YAML::Node start = node["start_at"]) {
      if (auto text = yaml_.Scalar(start, label + " start_at")) {
        if (*text == "end") {
          source.start_at = StartAt::kEnd;
        } else if (*text == "beginning") {
          source.start_at = StartAt::kBeginning;
        } else {
          yaml_.Fail(start,
                     label + ": unknown start_at '" + *text + "' (expected end or beginning)");
        }
      }
    }
    if (source.name.empty()) {
      return std::nullopt;
    }
    return source;
  }

  YamlReader& yaml_;
  const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path_;
};

}  // namespace

void ParseSources(
    const YAML::Node& node, YamlReader& yaml,
    const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path,
    std::vector<SourceConfig>& out) {
  SourcesParser(yaml, path).Parse(node, out);
}

}  // namespace trainwatch::config
