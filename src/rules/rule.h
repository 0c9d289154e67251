// Rule: one operator-editable detection rule as plain data, exactly as a rule file states it
// (see rules/README.md for the schema). Loaded by rule_loader, compiled by CompiledRules.
// Value type; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/quantity.h"
#include "core/source_location.h"
#include "rules/verdict.h"

namespace trainwatch::rules {

// kDiverged: the training itself went wrong while its processes run on (a loss that stays
// NaN): an incident of its own, not a crash or a hang. kSlow: the job runs on, slower than its
// own recent pace (a `pace` rule): an incident that resolves when the pace comes back.
enum class RuleKind { kCrash, kHang, kDevice, kWarning, kDiverged, kSlow };

std::string_view RuleKindName(RuleKind kind);
std::optional<RuleKind> ParseRuleKind(std::string_view name);
// crash, hang and device are the kinds that make `scan` exit 1 and the daemon capture.
bool IsAlarm(RuleKind kind);

enum class Multiline { kNone, kPythonTraceback };

// A regex (RE2 syntax) written in a rule file, with where it was written.
struct Pattern {
  std::string regex;
  SourceLocation where;
};

// Fires on every line segment that matches `match` and not `unless`. With
// multiline: python-traceback, `match` is the traceback header and the event is the
// whole traceback, summarised by its final exception line.
//
// With last_words, a match fires only if it is its writer's last word: nothing but blank lines
// of the same writer (the same rank prefix) follow it before the input ends (`scan`) or the
// writer exits (the daemon). A bare exception line a job survives is followed by more output.
struct PatternDetector {
  Pattern match;
  std::optional<Pattern> unless;
  Multiline multiline = Multiline::kNone;
  bool last_words = false;
};

// Fires when `count` segments matched within `within`.
struct ThresholdDetector {
  Pattern match;
  std::optional<Pattern> unless;
  std::uint32_t count = 0;
  Duration within{0};
};

// A progress bar that stops advancing while its process lives. With `factor`, the threshold
// follows the job: factor x the bar's recent p99 interval between advances, at least `min`,
// at most `stall_after` (then the cap).
struct ProgressDetector {
  Duration stall_after{0};
  Duration startup_grace{0};
  double factor = 0;  // 0: a fixed stall_after
  Duration min{0};
};

// A bar advancing `slower_by` times slower over the last `hold` than over the `baseline`
// before it (each as steps per second: count moved over time taken), while it still advances.
// Kind slow only (detect/pace.h).
struct PaceDetector {
  double slower_by = 0;
  Duration hold{0};
  Duration baseline{0};
};

// No bytes at all from the source.
struct SilenceDetector {
  Duration after{0};
};

// A watched or wrapped process that exits with one of these codes or signals.
struct ExitDetector {
  std::vector<int> codes;
  std::vector<int> signals;  // signal numbers, parsed from names like SIGKILL
  bool any_nonzero = false;
};

// Judges a hang's stacks, not lines: a rank whose main thread has a Python frame whose function
// matches `function` (and whose file matches `file`, when given) is the culprit, and `says` the
// sentence for it, with {rank}, {function}, {file} (its base name) and {line} filled in.
// Kind hang only; checked before the built-in verdicts (diagnose/stack_rules.h).
struct StackDetector {
  Pattern function;
  std::optional<Pattern> file;
  std::string says;
};

// A training metric the job prints (detect/metric_parser.h): fires when it is NaN or
// infinite on `not_finite_for` consecutive lines of one writer (one rank prefix), once per run
// of them. `match` picks the candidate lines (the prefilter's); the parser reads the value.
// Its default pattern, kMetricLossWord, also tells where a reading can start: at or after the
// first "loss" in the line.
inline constexpr std::string_view kMetricLossWord = "(?i)loss";
struct MetricDetector {
  Pattern match;
  std::optional<Pattern> unless;
  std::string metric = "loss";  // the only one read today
  std::uint32_t not_finite_for = 3;
};

// The job's own report of its ranks' spread: the fastest and the slowest rank's time for the
// same work, on one line (Megatron's straggler report, "MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk:
// 4610.20ms/0"). `match` names groups `low` and `high` (numbers, the same unit) and may name
// `rank` (the slow one). Fires when high is at least `above` times low on `for_reports`
// reports in a row of one writer, once per run of them; the incident's rank is `rank`'s.
// Kind slow only.
inline constexpr int kMaxSpreadGroups = 16;  // the groups a report's line is read by
struct SpreadDetector {
  Pattern match;
  std::optional<Pattern> unless;
  double above = 0;
  std::uint32_t for_reports = 1;
};

using Detector =
    std::variant<PatternDetector, ThresholdDetector, ProgressDetector, SilenceDetector,
                 ExitDetector, StackDetector, MetricDetector, PaceDetector, SpreadDetector>;

// A text example and where it was written.
struct Example {
  std::string text;
  SourceLocation where;
};

struct Rule {
  std::string id;
  RuleKind kind = RuleKind::kCrash;
  std::vector<std::string> tags;
  std::string description;
  Verdict verdict;  // cause and action; unknown / inspect when the file gives none
  Role role = Role::kPrimary;
  Detector detector;
  std::vector<Example> fires;
  std::vector<Example> quiet;
  SourceLocation where;  // the rule's `- id:` entry
  // A pattern rule whose lines end a failure rather than report one ("nfs: server X OK"):
  // each match resolves the open incidents `resolves` (a rule id) fired in from the same
  // source, and opens none. When both rules' regexes have a capture group, the first groups
  // must agree (the same server). Its `kind` is not used (warning when absent).
  std::string resolves;

  bool HasTag(std::string_view tag) const;
  // Pattern, threshold, metric and spread rules look at line text; the others at time and
  // processes.
  bool MatchesLines() const;
};

}  // namespace trainwatch::rules
