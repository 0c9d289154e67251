#include "collect/redactor.h"

#include <fnmatch.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <exception>

#include "core/multi_regex.h"
#include "core/multi_regex_scanner.h"
#include "core/regex_options.h"

namespace trainwatch::collect {
namespace {

// Secret-looking names, matched as case-insensitive substrings of the variable's name.
// Two substrings have harmless look-alikes, skipped where they occur (see IsSecretName):
// TOKEN in TOKENIZ (TOKENIZERS_PARALLELISM=false is set in most Hugging Face jobs and says
// how the job ran) and AUTH in AUTHOR (GIT_AUTHOR_NAME), except AUTHORIZ (HTTP_AUTHORIZATION
// holds a credential). PWD is deliberately absent: it is the working directory.
constexpr std::string_view kSecretParts[] = {"TOKEN",      "SECRET",  "PASSWORD",   "PASSWD",
                                             "PASSPHRASE", "API_KEY", "APIKEY",     "ACCESS_KEY",
                                             "CREDENTIAL", "AUTH",    "PRIVATE_KEY"};
// Names ending in these are secret too (DB_PASS, OPENAI_KEY, SIGNING_KEY); a harmless
// *_KEY (GPG_KEY, a public fingerprint in Python images) is over-redacted, which only hides
// a value nobody debugging a training job needs.
constexpr std::string_view kSecretSuffixes[] = {"_PASS", "_KEY"};

// A built-in value pattern. The regex (RE2) replaces the first capture group that took
// part in the match, so context the pattern needs (`Bearer `, `user:` in a URL, the
// BEGIN/END lines of a key) stays readable; without groups the whole match goes.
// `prefilter` is the form the prefilter pass scans for (empty: derived from the regex); it must
// match wherever the regex does. Negated classes spell out \x0b because RE2's \s lacks the
// vertical tab that Hyperscan's (PCRE's) \s has, and \v means different things in the two.
struct BuiltinPattern {
  std::string_view name;
  std::string_view regex;
  std::string_view prefilter;
};

// Order matters where patterns overlap: the first to match gets the value and the count, and
// later ones do not match [REDACTED] ('[' is outside their classes). A token used as a URL
// password (https://x-access-token:ghs_...@github.com) counts as github_token, a JWT after
// Bearer as jwt.
constexpr BuiltinPattern kBuiltins[] = {
    // A key block: the body between the BEGIN and END lines becomes [REDACTED], keeping the
    // lines (and the newlines, real or JSON-escaped "\n", around the body). The body may hold
    // only what PEM bodies hold, so log lines between a truncated key and a later key's END
    // (with their '[', '(', '_', quotes) are not taken for a body. A block cut short (a truncated
    // log, no END) loses its base64 lines.
    {"private_key",
     // BEGIN line, an optional line break, then the body up to the END line (group 1), or
     // base64 lines (group 2) when no END follows.
     R"re(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|\\n)?)re"
     R"re((?:((?:[A-Za-z0-9+/=\s:,.-]|\\[nr])*?))re"
     R"re((?:\r?\n|\\n)?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)re"
     R"re(|([A-Za-z0-9+/=]{16,}(?:(?:\s|\\[nr])+[A-Za-z0-9+/=]{16,})*)))re",
     R"re(-----BEGIN [A-Z0-9 ]*PRIVATE KEY)re"},
    {"aws_access_key", R"re(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)re", ""},
    // aws_secret_access_key=..., AWS_SECRET_ACCESS_KEY: ..., "SecretAccessKey": "..." (what
    // `aws sts` prints), --aws-secret-access-key ...: the 40 characters after the name.
    {"aws_secret",
     R"re((?i)secret[_-]?access[_-]?key["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?([A-Za-z0-9/+]{40}))re",
     ""},
    {"hf_token", R"re(\bhf_[A-Za-z0-9]{30,}\b)re", ""},
    {"github_token", R"re(\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b)re", ""},
    {"jwt", R"re(\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})re", ""},
    // W&B keys are 40 hex digits, like git commit hashes, so they need a W&B context:
    // `wandb login [flags] KEY` on one line, or KEY after a key/password word at most 300
    // characters after "wandb": WANDB_API_KEY=KEY, wandb.login(key="KEY"), a settings file's
    // `api_key = KEY`, netrc's `machine api.wandb.ai login user password KEY`.
    {"wandb_key", R"re((?i)\bwandb[ \t]+login\b[^\n]*?[ \t=]([0-9a-f]{40})\b)re", ""},
    {"wandb_key",
     R"re((?i)wandb(?s:.{0,300}?)(?:api_?key|\bkey|password))re"
     R"re(["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?([0-9a-f]{40})\b)re",
     // Without "wandb": the bounded gap costs Hyperscan half its speed on logs of W&B runs,
     // while a key word right before 40 hex digits is rare enough on its own.
     R"re((?i)(?:key|password)["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?[0-9a-f]{40})re"},
    // "Bearer" stays. Tokens shorter than 8 characters are left alone so that prose ("a
    // bearer token", "Bearer auth failed") is not redacted; real tokens are far longer.
    {"bearer", R"re((?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{8,}=*))re", ""},
    // scheme://user:password@host: only the password goes. The user may be empty
    // (redis://:pw@host); the password runs to the last '@' before the path, so one with an
    // unencoded '@' is not half left.
    {"url_password", R"re(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\x0b/?#@:]*:([^\s\x0b/?#"'<>\[\]]+)@)re",
     R"re(://[^\s\x0b/?#@:]*:[^\s\x0b/?#"'<>\[\]]+@)re"},
};

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
                                                         RedactorMatching matching) {
  try {
    auto impl = std::make_unique<Impl>();
    std::vector<RegexPattern> patterns;
    for (const BuiltinPattern& builtin : kBuiltins) {
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
  for (std::string_view part : kSecretParts) {
    if (HasSecretPart(upper, part)) {
      return true;
    }
  }
  // SESSION...KEY: AWS_SESSION_KEY, FLASK_SESSION_SECRET_KEY.
  const std::size_t session = upper.find("SESSION");
  if (session != std::string::npos && upper.find("KEY", session) != std::string::npos) {
    return true;
  }
  for (std::string_view suffix : kSecretSuffixes) {
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

std::size_t Redactor::patterns() const { return impl_->regexes.size(); }

std::size_t Redactor::prefiltered_patterns() const { return impl_->regexes.prefiltered_count(); }

}  // namespace trainwatch::collect
