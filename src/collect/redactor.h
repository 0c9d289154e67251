// Redactor: keeps secrets out of everything the daemon writes — bundles, and the text of
// incidents (summary, firing and context lines) before it reaches incidents.jsonl, the log,
// hooks, status and metrics. Environment variables whose names look secret (*TOKEN*, *SECRET*,
// *PASSWORD*, *WEBHOOK*, *DSN*, ...) lose their values; anywhere in text, values shaped like
// secrets (the tables in collect/redaction_patterns.cpp) become [REDACTED]. Operators add names
// and patterns. Counts say what was redacted — names of variables and of patterns, never
// values. Immutable after Create: any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace trainwatch::collect {

inline constexpr std::string_view kRedacted = "[REDACTED]";

// What operators add to the built-in rules (the config's `capture.redact`).
struct RedactionRules {
  std::vector<std::string> names;     // globs on variable names, case-insensitive: "*_DSN"
  std::vector<std::string> patterns;  // RE2 regexes; the whole match is replaced
};

// How many values each rule replaced: "env:AWS_SECRET_ACCESS_KEY", "pattern:aws_access_key",
// "pattern:hf_token", "pattern:custom_1"...
struct RedactionCounts {
  std::map<std::string, std::uint64_t> by_rule;
  void Add(const std::string& rule, std::uint64_t n = 1) { by_rule[rule] += n; }
  void Merge(const RedactionCounts& other);
  std::uint64_t total() const;
};

// How a Redactor picks the patterns to run on a text.
enum class RedactorMatching {
  kPrefiltered,  // one multi-pattern pass (core/multi_regex.h) says which patterns may match
  kRe2Only,      // every pattern on every text: the reference the fast path is tested against
};

// A line that is a PEM or OpenSSH body line alone: 40 to 100 base64 characters ('=' only as
// padding at the end; 16 suffice with padding, the last line of a body), with upper- and
// lower-case letters and a digit, and a letter past 'f' so hex (a SHA-256, a git SHA) is not.
// Surrounding blanks are allowed.
bool LooksLikeKeyBody(std::string_view line);

class Redactor {
 public:
  // Fails, naming it, on an operator pattern that does not compile or matches the empty string.
  // With `cache_dir`, the prefilter's compiled database is loaded from and saved there
  // (core/prefilter_cache.h): compiling it was two thirds of a small snapshot's time.
  static Result<std::shared_ptr<const Redactor>> Create(
      const RedactionRules& extra = {}, RedactorMatching matching = RedactorMatching::kPrefiltered,
      const std::string& cache_dir = {});

  bool IsSecretName(std::string_view variable) const;
  // An environment as `/proc/PID/environ` has it (NAME=value entries separated by NUL or
  // newline) -> one NAME=value per line, values of secret names replaced, the other values
  // passed through RedactText.
  std::string RedactEnvironment(std::string_view environ, RedactionCounts& counts) const;
  // Replaces, in place, every value shaped like a secret. Cheap on text without any: a fast
  // check for the patterns' fixed parts comes before any regex.
  void RedactText(std::string& text, RedactionCounts& counts) const;
  // Lines read together (an incident's context lines): redacted as one text, so a key block
  // whose BEGIN, body and END lines are separate entries is still found; then every line that
  // is nothing but a key's base64 body (LooksLikeKeyBody) is replaced whole, because a window
  // of lines may hold the body without the BEGIN and END lines that name it. The number of
  // lines may shrink (a key's body becomes one [REDACTED] line).
  void RedactLines(std::vector<std::string>& lines, RedactionCounts& counts) const;

  // Its value patterns (built-in and the operator's), and how many of them the fast check
  // takes; the others run on every text.
  std::size_t patterns() const;
  std::size_t prefiltered_patterns() const;

  ~Redactor();

 private:
  struct Impl;
  explicit Redactor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainwatch::collect
