// Parses a rule's detector into Rule::detector: exactly one of pattern (with `unless` and
// `multiline` beside it at the rule level), threshold, progress, silence or exit. Split from
// the rule loader, which reads the rest of the rule and owns the YamlReader; every problem is
// recorded there and parsing goes on, so the operator sees all of them. Single thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/yaml_reader.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// Sets `rule.detector` from the rule's mapping `node`; `label` names the rule in messages.
// Leaves it unset when the detector is missing, doubled or malformed (recorded in `yaml`).
void ParseDetector(const YAML::Node& node, Rule& rule, const std::string& label,
                   config::YamlReader& yaml);

}  // namespace trainwatch::rules
