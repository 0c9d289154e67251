#include "collect/redactor.h"

#include <fnmatch.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <exception>

#include "collect/redaction_patterns.h"
#include "core/multi_regex.h"
#include "core/multi_regex_scanner.h"
#include "core/regex_options.h"

namespace trainwatch::collect {
namespace {

// Strings a sane operator pattern must not match with nothing: one that does would put
// [REDACTED] between every two bytes. Matches of nothing are skipped at run time as well.
constexpr std::string_view kEmptyProbes[] = {"",    "a", "Z", "0", "_", " ",  "\n",
                                             "a b", ".", "=", "-", "/", "\"", "x=y"};

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

bool HasSecretPart(const std::string& name, std::string_view part) {
  for (std::size_t at = name.find(part); at != std::string::npos; at = name.find(part, at + 1)) {
    const std::string_view rest = std::string_view(name).substr(at + part.size());
    if (part == "TOKEN" && rest.substr(0, 2) == "IZ") {
      continue;  // TOKENIZERS_PARALLELISM, TOKENIZER_PATH
    }
    if (part == "AUTH" && rest.substr(0, 2) == "OR" && rest.substr(0, 4) != "ORIZ") {
      continue;  // GIT_AUTHOR_NAME, but not HTTP_AUTHORIZATION
    }
    return true;
  }
  return false;
}

// Newlines inside a value would break the one-variable-per-line output.
void AppendEscaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
}

}  // namespace

struct Redactor::Impl {
  struct Entry {
    std::string counter;       // "pattern:hf_token"
    bool whole_match = false;  // operator patterns: the whole match goes, groups or not
  };

  std::vector<Entry> entries;
  MultiRegex regexes;  // entries[i]'s regex is pattern i
  std::vector<std::string> name_globs;

  // `scanner` null (its scratch could not be allocated) or a failed scan (a text over 4 GiB)
  // skips the prefilter: then every pattern runs.
  void Redact(std::string& text, RedactionCounts& counts, MultiRegexScanner* scanner) const {
    if (text.empty()) {
      return;
    }
    std::vector<char> hit(entries.size(), 0);
    bool scanned = false;
    if (scanner != nullptr) {
      std::size_t remaining = regexes.prefiltered_count();
      scanned = scanner->Scan(text, [&](std::uint32_t pattern, std::uint64_t /*end*/) {
        if (hit[pattern] == 0) {
          hit[pattern] = 1;
          --remaining;
        }
        return remaining > 0;  // every prefiltered pattern seen: the rest cannot add any
      });
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (!scanned || !regexes.prefiltered(i) || hit[i] != 0) {
        Replace(entries[i], regexes.regex(i), text, counts);
      }
    }
  }

  // Replaces each match's secret part by kRedacted, left to right. Matches of nothing are
  // skipped: they hold no secret.
  static void Replace(const Entry& entry, const RE2& regex, std::string& text,
                      RedactionCounts& counts) {
    const int groups = entry.whole_match ? 0 : regex.NumberOfCapturingGroups();
    std::vector<re2::StringPiece> match(static_cast<std::size_t>(groups) + 1);
    const re2::StringPiece input(text.data(), text.size());
    std::string out;
    std::size_t copied = 0;  // text before this offset is already in `out`
    std::uint64_t replaced = 0;
    std::size_t pos = 0;
    while (pos <= text.size() &&
           regex.Match(input, pos, text.size(), RE2::UNANCHORED, match.data(), groups + 1)) {
      re2::StringPiece secret = match[0];
      for (int g = 1; g <= groups; ++g) {
        if (match[static_cast<std::size_t>(g)].data() != nullptr) {
          secret = match[static_cast<std::size_t>(g)];
          break;
        }
      }
      const auto match_end = static_cast<std::size_t>(match[0].end() - text.data());
      if (!secret.empty()) {
        const auto begin = static_cast<std::size_t>(secret.data() - text.data());
        out.append(text, copied, begin - copied);
        out += kRedacted;
        copied = begin + secret.size();
        ++replaced;
      }
      pos = match[0].empty() ? match_end + 1 : match_end;
    }
    if (replaced == 0) {
      return;
    }
    out.append(text, copied, std::string::npos);
    text = std::move(out);
    counts.Add(entry.counter, replaced);
  }
};

void RedactionCounts::Merge(const RedactionCounts& other) {
  for (const auto& [rule, n] : other.by_rule) {
    by_rule[rule] += n;
  }
}

std::uint64_t RedactionCounts::total() const {
  std::uint64_t sum = 0;
  for (const auto& [rule, n] : by_rule) {
    sum += n;
  }
  return sum;
}

Result<std::shared_ptr<const Redactor>> Redactor::Create(const RedactionRules& extra,
                                                         RedactorMatching matching,
                                                         const std::string& cache_dir) {
  try {
    auto impl = std::make_unique<Impl>();
    std::vector<RegexPattern> patterns;
    for (const BuiltinPattern& builtin : BuiltinPatterns()) {
      const std::string counter = "pattern:" + std::string(builtin.name);
      auto regex = std::make_unique<const RE2>(
          re2::StringPiece(builtin.regex.data(), builtin.regex.size()), RegexOptions());
      if (!regex->ok()) {  // a bug in the table above; the tests compile it
        return Error{"built-in redaction pattern " + counter + ": " + regex->error()};
      }
      impl->entries.push_back({counter, false});
      patterns.push_back({std::move(regex), std::string(builtin.prefilter)});
    }
    for (std::size_t i = 0; i < extra.patterns.size(); ++i) {
      const std::string& pattern = extra.patterns[i];
      const std::string label = "redact pattern " + std::to_string(i + 1) + " '" + pattern + "'";
      auto regex = std::make_unique<const RE2>(pattern, RegexOptions());
      if (!regex->ok()) {
        return Error{label + ": " + regex->error()};
      }
      for (std::string_view probe : kEmptyProbes) {
        re2::StringPiece found;
        if (regex->Match(re2::StringPiece(probe.data(), probe.size()), 0, probe.size(),
                         RE2::UNANCHORED, &found, 1) &&
            found.empty()) {
          return Error{label + ": matches the empty string"};
        }
      }
      impl->entries.push_back({"pattern:custom_" + std::to_string(i + 1), true});
      patterns.push_back({std::move(regex), {}});
    }
    impl->name_globs = extra.names;
    // A text is judged whole, and one candidate says a pattern must run on it. Where the
    // prefilter cannot take a pattern (or cannot run at all: a CPU without SSSE3), that
    // pattern runs on every text: slow but still redacted.
    MultiRegexOptions options;
    options.first_candidate_only = true;
    options.prefilter = matching == RedactorMatching::kPrefiltered;
    options.cache_dir = cache_dir;
    // Built on the loop at the first firing, where a helper process would stall every file
    // for its start-up (seconds on a loaded machine); a small set, and cached after that once.
    options.compile_in_helper = false;
    impl->regexes = MultiRegex::Build(std::move(patterns), options);
    return std::shared_ptr<const Redactor>(new Redactor(std::move(impl)));
  } catch (const std::exception& e) {
    return Error{std::string("cannot build the redactor: ") + e.what()};
  }
}

Redactor::Redactor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Redactor::~Redactor() = default;

bool Redactor::IsSecretName(std::string_view variable) const {
  if (variable.empty()) {
    return false;
  }
  const std::string upper = Upper(variable);
  for (std::string_view part : SecretNameParts()) {
    if (HasSecretPart(upper, part)) {
      return true;
    }
  }
  // SESSION...KEY: AWS_SESSION_KEY, FLASK_SESSION_SECRET_KEY.
  const std::size_t session = upper.find("SESSION");
  if (session != std::string::npos && upper.find("KEY", session) != std::string::npos) {
    return true;
  }
  for (std::string_view suffix : SecretNameSuffixes()) {
    if (upper.size() >= suffix.size() &&
        std::string_view(upper).substr(upper.size() - suffix.size()) == suffix) {
      return true;
    }
  }
  const std::string name(variable);
  return std::any_of(impl_->name_globs.begin(), impl_->name_globs.end(),
                     [&](const std::string& glob) {
                       return fnmatch(glob.c_str(), name.c_str(), FNM_CASEFOLD) == 0;
                     });
}

std::string Redactor::RedactEnvironment(std::string_view environ, RedactionCounts& counts) const {
  std::string out;
  try {
    out.reserve(environ.size() + environ.size() / 8);
    // /proc/PID/environ separates with NUL, and then a value may hold newlines; text from
    // elsewhere (`env` output, a file) has one variable per line.
    const char separator = environ.find('\0') != std::string_view::npos ? '\0' : '\n';
    Result<MultiRegexScanner> scanner = MultiRegexScanner::Create(impl_->regexes);
    std::string value;
    std::size_t start = 0;
    while (start < environ.size()) {
      std::size_t end = environ.find(separator, start);
      if (end == std::string_view::npos) {
        end = environ.size();
      }
      const std::string_view entry = environ.substr(start, end - start);
      start = end + 1;
      if (entry.empty()) {
        continue;
      }
      const std::size_t eq = entry.find('=');
      const std::string_view name = eq == std::string_view::npos ? "" : entry.substr(0, eq);
      value.assign(eq == std::string_view::npos ? entry : entry.substr(eq + 1));
      out += name;
      if (eq != std::string_view::npos) {
        out += '=';
      }
      // An empty secret (HF_TOKEN=) stays empty: "set but empty" explains many a failed
      // login, and there is nothing to hide.
      if (!name.empty() && !value.empty() && IsSecretName(name)) {
        out += kRedacted;
        counts.Add("env:" + std::string(name));
      } else {
        impl_->Redact(value, counts, scanner ? &*scanner : nullptr);
        AppendEscaped(out, value);
      }
      out += '\n';
    }
  } catch (const std::exception&) {
    // Out of memory midway: nothing half redacted leaves here.
    out.clear();
    counts.Add("error:redaction_failed");
  }
  return out;
}

void Redactor::RedactText(std::string& text, RedactionCounts& counts) const {
  try {
    Result<MultiRegexScanner> scanner = MultiRegexScanner::Create(impl_->regexes);
    impl_->Redact(text, counts, scanner ? &*scanner : nullptr);
  } catch (const std::exception&) {
    // Out of memory midway: the text may still hold a secret, so none of it is kept.
    text.assign(kRedacted);
    counts.Add("error:redaction_failed");
  }
}

void Redactor::RedactLines(std::vector<std::string>& lines, RedactionCounts& counts) const {
  if (lines.empty()) {
    return;
  }
  std::string joined;
  for (const std::string& line : lines) {
    joined += line;
    joined += '\n';
  }
  joined.pop_back();
  RedactText(joined, counts);
  lines.clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t end = joined.find('\n', start);
    std::string line = joined.substr(start, end == std::string::npos ? end : end - start);
    if (LooksLikeKeyBody(line)) {
      line.assign(kRedacted);
      counts.Add("pattern:private_key");
    }
    lines.push_back(std::move(line));
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
}

bool LooksLikeKeyBody(std::string_view line) {
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())) != 0) {
    line.remove_prefix(1);
  }
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) {
    line.remove_suffix(1);
  }
  std::size_t padding = 0;
  while (padding < 2 && padding < line.size() && line[line.size() - 1 - padding] == '=') {
    ++padding;
  }
  const std::string_view body = line.substr(0, line.size() - padding);
  if (line.size() > 100 || line.size() < (padding > 0 ? 16 : 40)) {
    return false;
  }
  bool upper = false;
  bool lower = false;
  bool digit = false;
  bool past_hex = false;
  for (const char c : body) {
    if (c >= 'A' && c <= 'Z') {
      upper = true;
      past_hex = past_hex || c > 'F';
    } else if (c >= 'a' && c <= 'z') {
      lower = true;
      past_hex = past_hex || c > 'f';
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '+' && c != '/') {
      return false;
    }
  }
  return upper && lower && digit && past_hex;
}

std::size_t Redactor::patterns() const { return impl_->regexes.size(); }

std::size_t Redactor::prefiltered_patterns() const { return impl_->regexes.prefiltered_count(); }

}  // namespace trainwatch::collect
