#include "detect/progress_parser.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <limits>

#include "core/text_trim.h"
#include "detect/metric_parser.h"

namespace trainwatch::detect {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// What a progress line pads its fields with: spaces and tabs, never line ends.
constexpr std::string_view kBlanks = " \t";

// ASCII only, whatever the locale: log lines are bytes.
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Small scanners: each consumes from the front of `s` and says whether it did.
bool Consume(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) {
    return false;
  }
  s.remove_prefix(prefix.size());
  return true;
}

template <typename Pred>
std::string_view TakeWhile(std::string_view& s, Pred pred) {
  std::size_t n = 0;
  while (n < s.size() && pred(s[n])) {
    ++n;
  }
  const std::string_view taken = s.substr(0, n);
  s.remove_prefix(n);
  return taken;
}

void SkipSpaces(std::string_view& s) { s = TrimLeft(s, kBlanks); }

// "H:MM:SS" or "MM:SS", tqdm's elapsed and remaining time.
bool TakeClock(std::string_view& s) {
  if (TakeWhile(s, IsDigit).empty() || !s.starts_with(':')) {
    return false;
  }
  while (Consume(s, ":")) {
    if (TakeWhile(s, IsDigit).empty()) {
      return false;
    }
  }
  return true;
}

// "45", "5.00" (Ray's fractional counts), "1.23k" (tqdm's unit_scale) -> the whole steps done,
// computed in integers so that "1.13k" is 1130, not 1129.
std::optional<std::int64_t> ParseCount(std::string_view s) {
  const std::string_view whole = TakeWhile(s, IsDigit);
  std::string_view fraction;
  if (Consume(s, ".")) {
    fraction = TakeWhile(s, IsDigit);
  }
  std::int64_t scale = 1;
  if (s.size() == 1) {
    const std::string_view kSuffixes = "kMGT";
    const std::size_t at = kSuffixes.find(s.front());
    if (at == npos) {
      return std::nullopt;
    }
    for (std::size_t i = 0; i <= at; ++i) {
      scale *= 1000;
    }
    s.remove_prefix(1);
  }
  if (whole.empty() || !s.empty() || whole.size() + fraction.size() > 18) {
    return std::nullopt;
  }
  std::int64_t mantissa = 0;
  std::int64_t divisor = 1;
  for (const char c : whole) {
    mantissa = mantissa * 10 + (c - '0');
  }
  for (const char c : fraction) {
    mantissa = mantissa * 10 + (c - '0');
    divisor *= 10;
  }
  // Both are powers of ten, so one divides the other.
  if (divisor >= scale) {
    return mantissa / (divisor / scale);
  }
  const std::int64_t factor = scale / divisor;
  if (mantissa > std::numeric_limits<std::int64_t>::max() / factor) {
    return std::nullopt;
  }
  return mantissa * factor;
}

// Keras 3 colours its bar and rewinds with '\b'; tqdm at a nested position moves the cursor.
std::string StripTerminalCodes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\b') {
      continue;
    }
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      std::size_t end = i + 2;
      while (end < s.size() && (IsDigit(s[end]) || s[end] == ';' || s[end] == '?')) {
        ++end;
      }
      if (end < s.size() && IsAlpha(s[end])) {
        i = end;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// ---- tqdm ------------------------------------------------------------------------------------

}  // namespace

std::size_t WriterPrefixLength(std::string_view left) {
  std::size_t end = 0;
  while (end < left.size() && (left[end] == '[' || left[end] == '(' || left[end] == '<')) {
    const char close = left[end] == '[' ? ']' : left[end] == '(' ? ')' : '>';
    const std::size_t at = left.find(close, end);
    if (at == npos) {
      break;
    }
    end = left.find_first_not_of(" :", at + 1);
    end = end == npos ? left.size() : end;
  }
  const std::size_t colon = left.rfind(": ");
  return colon == npos || colon + 2 < end ? end : colon + 2;
}

namespace {

// Appends `prefix`, with '#' for the digits of dates and times ("2024-01-02", "12:34:56,789":
// runs of digits and ":-/.," holding a digit, one of ":-/", and a digit in a row). Other digits
// name the writer (rank ids, pids, hosts like "gpu250" or "10.0.0.1", MPI's "[1,0]") and stay.
void AppendWriterPrefix(std::string& key, std::string_view prefix) {
  const auto is_number_char = [](char c) {
    return IsDigit(c) || std::string_view(":-/.,").find(c) != npos;
  };
  std::size_t i = 0;
  while (i < prefix.size()) {
    if (!is_number_char(prefix[i])) {
      key += prefix[i++];
      continue;
    }
    std::size_t end = i;
    while (end < prefix.size() && is_number_char(prefix[end])) {
      ++end;
    }
    const std::string_view token = prefix.substr(i, end - i);
    bool clock = false;
    for (std::size_t j = 1; j + 1 < token.size(); ++j) {
      clock |= IsDigit(token[j - 1]) && std::string_view(":-/").find(token[j]) != npos &&
               IsDigit(token[j + 1]);
    }
    for (std::size_t j = 0; j < token.size(); ++j) {
      if (clock && IsDigit(token[j])) {
        if (j == 0 || !IsDigit(token[j - 1])) {
          key += '#';
        }
      } else {
        key += token[j];
      }
    }
    i = end;
  }
}

ProgressUpdate TqdmUpdate(std::string_view left, std::int64_t count,
                          std::optional<std::int64_t> total) {
  // tqdm prints "{desc}: "; Ray's wrapper around a bar without desc leaves "(pid=63079) :".
  left = Trim(TrimRight(left, " \t:"), kBlanks);
  const std::size_t desc_at = WriterPrefixLength(left);
  ProgressUpdate update{.key = "tqdm:", .label = std::string(left), .count = count, .total = total};
  AppendWriterPrefix(update.key, left.substr(0, desc_at));
  for (std::size_t i = desc_at; i < left.size(); ++i) {
    if (!IsDigit(left[i])) {
      update.key += left[i];
    } else if (i == desc_at || !IsDigit(left[i - 1])) {
      update.key += '#';
    }
  }
  return update;
}

// tqdm's right side at `bracket`: "{n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]", or
// without total "{n}{unit} [{elapsed}, {rate}{postfix}]"; the rate's unit holds a '/' ("it/s",
// "s/it", "batch/s"). What stands before the count is the bar and desc.
std::optional<ProgressUpdate> ParseTqdmAt(std::string_view text, std::size_t bracket) {
  std::string_view rest = text.substr(bracket + 1);
  if (!TakeClock(rest)) {
    return std::nullopt;
  }
  const bool has_total = Consume(rest, "<");
  if (has_total && !Consume(rest, "?") && !TakeClock(rest)) {
    return std::nullopt;
  }
  if (!Consume(rest, ",")) {
    return std::nullopt;
  }
  SkipSpaces(rest);
  const std::string_view rate =
      TakeWhile(rest, [](char c) { return c != ',' && c != ']' && c != ' '; });
  if (rate.empty() || !(IsDigit(rate.front()) || rate.front() == '?') || rate.find('/') == npos) {
    return std::nullopt;
  }

  std::string_view left = text.substr(0, bracket - 1);      // the caller saw a ' ' before '['
  const std::size_t token_at = left.find_last_of(' ') + 1;  // npos + 1 == 0
  std::string_view token = left.substr(token_at);
  left = left.substr(0, token_at);
  if (!has_total) {
    // "25it", "100batch", "1.23kit": the count, then the unit's letters.
    std::size_t unit_at = token.find_first_not_of("0123456789.");
    if (unit_at != npos && unit_at > 0 && std::string_view("kMGT").find(token[unit_at]) != npos) {
      ++unit_at;
    }
    const auto count = ParseCount(token.substr(0, unit_at));
    if (!count) {
      return std::nullopt;
    }
    for (std::size_t i = unit_at; i < token.size(); ++i) {
      if (!IsAlpha(token[i])) {
        return std::nullopt;
      }
    }
    return TqdmUpdate(left, *count, std::nullopt);
  }
  const std::size_t slash = token.find('/');
  if (slash == npos) {
    return std::nullopt;
  }
  const auto count = ParseCount(token.substr(0, slash));
  const std::string_view total_text = token.substr(slash + 1);
  const auto total = total_text == "?" ? std::nullopt : ParseCount(total_text);
  if (!count || (!total && total_text != "?")) {
    return std::nullopt;
  }
  // Drop the bar "|███▌      | " and the percentage " 45%" in front of it (Lightning leaves
  // the percentage out while the total is unknown).
  left = TrimRight(left, kBlanks);
  const std::size_t bar_at = left.ends_with('|') ? left.rfind('|', left.size() - 2) : npos;
  if (left.size() >= 2 && bar_at != npos) {
    left = TrimRight(left.substr(0, bar_at), kBlanks);
    if (left.ends_with('%')) {
      left = TrimRight(TrimRight(left.substr(0, left.size() - 1), "0123456789"), kBlanks);
    }
  }
  return TqdmUpdate(left, *count, total);
}

std::optional<ProgressUpdate> ParseTqdm(std::string_view text) {
  for (std::size_t at = text.find('['); at != npos; at = text.find('[', at + 1)) {
    if (at > 0 && text[at - 1] == ' ' && at + 1 < text.size() && IsDigit(text[at + 1])) {
      if (auto update = ParseTqdmAt(text, at)) {
        return update;
      }
    }
  }
  return std::nullopt;
}

// ---- Keras -----------------------------------------------------------------------------------

// "29312/60000 [=====>....] - ETA: 2s - loss: ..." (Keras 2), " 561/625 ━━━━━━  0s 810us/step"
// (Keras 3), "5000/5000 - 12s - 2ms/step - loss: ..." (verbose=2), "12/Unknown 5s 417ms/step".
// Anchored at the start: unlike tqdm, nothing prefixes these in the logs seen so far.
std::optional<ProgressUpdate> ParseKeras(std::string_view text) {
  SkipSpaces(text);
  const auto count = ParseCount(TakeWhile(text, IsDigit));
  if (!count || !Consume(text, "/")) {
    return std::nullopt;
  }
  std::optional<std::int64_t> total;
  if (!Consume(text, "Unknown")) {
    total = ParseCount(TakeWhile(text, IsDigit));
    if (!total) {
      return std::nullopt;
    }
  }
  if (!Consume(text, " ")) {
    return std::nullopt;
  }
  constexpr std::string_view kKeras3Cell = "\u2501";  // ━
  bool bar = false;
  if (Consume(text, "[")) {
    bar = !TakeWhile(text, [](char c) { return c == '=' || c == '>' || c == '.'; }).empty() &&
          Consume(text, "] ");
  } else {
    while (Consume(text, kKeras3Cell)) {
      bar = true;
    }
    bar = bar && Consume(text, " ");
  }
  if (!bar) {
    // Without a bar, only the time per step tells Keras from "1/2 of the shards loaded".
    Consume(text, "- ");
    if (text.empty() || !IsDigit(text.front()) || text.find("/step") == npos) {
      return std::nullopt;
    }
  }
  return ProgressUpdate{.key = "keras:", .label = "keras", .count = *count, .total = total};
}

// ---- Step lines ------------------------------------------------------------------------------

// PyTorch's mnist example: "Train Epoch: 3 [1280/60000 (2%)]\tLoss: 0.2" counts samples.
std::optional<ProgressUpdate> ParseEpochSamples(std::string_view text) {
  const std::size_t epoch = text.find("Epoch");
  if (epoch == npos) {
    return std::nullopt;
  }
  for (std::size_t at = text.find(" [", epoch); at != npos; at = text.find(" [", at + 1)) {
    std::string_view rest = text.substr(at + 2);
    const auto count = ParseCount(TakeWhile(rest, IsDigit));
    if (!count || !Consume(rest, "/")) {
      continue;
    }
    const auto total = ParseCount(TakeWhile(rest, IsDigit));
    if (total && Consume(rest, " (") && !TakeWhile(rest, IsDigit).empty() &&
        (!Consume(rest, ".") || !TakeWhile(rest, IsDigit).empty()) && Consume(rest, "%)]")) {
      return ProgressUpdate{.key = "step:", .label = "step", .count = *count, .total = total};
    }
  }
  return std::nullopt;
}

// The step word at `at` ("step", "iter", "iteration", "global_step"), then "[:=#]?" and the
// number: "step 120 loss", "Iter: 50", "iteration 10/  500000 |", "global_step=120", "[step 12]".
std::optional<ProgressUpdate> ParseStepAt(std::string_view text, std::size_t at,
                                          std::size_t length) {
  // A word of its own, not a path, URL, attribute or identifier ("/step/1", "?step=",
  // "optimizer.step()", "gradient_accumulation_steps", "Stepping", "step_size").
  // Or right after a launcher's writer prefix, which torchrun glues to the line: "[rank0]:step 5";
  // or a key of a '/'-separated list of key=value pairs, DeepSpeed's throughput line
  // "epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=..." (a path's "/step/1" has
  // no '=').
  std::string_view rest = text.substr(at + length);
  if (at > 0 && std::string_view(" \t[(|,;{").find(text[at - 1]) == npos &&
      !(text[at - 1] == ':' && WriterPrefixOf(text).size() == at) &&
      !(text[at - 1] == '/' && rest.starts_with('='))) {
    return std::nullopt;
  }
  if (!rest.empty() && IsWordChar(rest.front())) {
    return std::nullopt;
  }
  SkipSpaces(rest);
  if (Consume(rest, ":") || Consume(rest, "=") || Consume(rest, "#")) {
    SkipSpaces(rest);
  }
  const auto count = ParseCount(TakeWhile(rest, IsDigit));
  if (!count) {
    return std::nullopt;
  }
  std::optional<std::int64_t> total;
  if (Consume(rest, "/")) {
    SkipSpaces(rest);  // Megatron pads the total: "10/  500000"
    total = ParseCount(TakeWhile(rest, IsDigit));
    if (!total) {
      return std::nullopt;
    }
  }
  // The number must end there: not "step 1.5e-3", "step 45%", "step 12:34:56", "step 3x".
  if (!rest.empty()) {
    const char next = rest.front();
    const bool digit_follows = rest.size() > 1 && IsDigit(rest[1]);
    if (std::string_view(" \t.:,;|)]}").find(next) == npos ||
        (std::string_view(".:,").find(next) != npos && digit_follows)) {
      return std::nullopt;
    }
  }
  return ProgressUpdate{.key = "step:", .label = "step", .count = *count, .total = total};
}

// Whether `word` (lower case) stands at `at` in `text`, in any case.
bool WordAt(std::string_view text, std::size_t at, std::string_view word) {
  if (text.size() - at < word.size()) {
    return false;
  }
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (Lower(text[at + i]) != word[i]) {
      return false;
    }
  }
  return true;
}

// Whether `before` (a line up to its step word) names an exception: "ValueError: bad batch at
// step 30" tells of a failure at step 30, and is no progress.
bool NamesAnException(std::string_view before) {
  for (const std::string_view suffix :
       {std::string_view("Error:"), std::string_view("Exception:")}) {
    for (std::size_t at = before.find(suffix); at != npos; at = before.find(suffix, at + 1)) {
      if (at > 0 && IsWordChar(before[at - 1])) {
        return true;  // a class name ends there: "ValueError:", "torch.cuda.OutOfMemoryError:"
      }
      if (at == 0 && suffix == "Error:") {
        continue;  // "Error: ..." alone, a log's word: still a message, not a class
      }
    }
  }
  return false;
}

std::optional<ProgressUpdate> ParseStepLine(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (const char c = Lower(text[i]); c != 's' && c != 'i') {
      continue;  // most characters of most lines
    }
    std::size_t at = i;
    std::size_t length = 0;
    if (WordAt(text, i, "iteration")) {
      length = 9;
    } else if (WordAt(text, i, "iter") || WordAt(text, i, "step")) {
      length = 4;
    } else {
      continue;
    }
    if (i >= 7 && WordAt(text, i - 7, "global_step")) {
      at -= 7;
      length += 7;
    }
    if (auto update = ParseStepAt(text, at, length)) {
      if (NamesAnException(text.substr(0, at))) {
        return std::nullopt;
      }
      return update;
    }
  }
  return std::nullopt;
}

std::optional<ProgressUpdate> ParseClean(std::string_view text) {
  if (auto update = ParseTqdm(text)) {
    return update;
  }
  if (auto update = ParseKeras(text)) {
    return update;
  }
  if (auto update = ParseEpochSamples(text)) {
    return update;
  }
  return ParseStepLine(text);
}

}  // namespace

std::optional<ProgressUpdate> ParseProgress(std::string_view segment) {
  if (segment.find('\x1b') != npos || segment.find('\b') != npos) {
    return ParseClean(StripTerminalCodes(segment));
  }
  return ParseClean(segment);
}

bool IsPhaseMarker(std::string_view segment) {
  // Most lines hold none of these words: a plain search first, the regex only then.
  static constexpr std::string_view kHints[] = {"heckpoint", "HECKPOINT", "aving model",
                                                "valuat",    "alidat",    "VALUAT"};
  if (std::none_of(std::begin(kHints), std::end(kHints), [&](std::string_view hint) {
        return segment.find(hint) != std::string_view::npos;
      })) {
    return false;
  }
  static const RE2 kMarker(
      R"((?i)saving (?:model )?checkpoint|checkpoint \S+ is about to be saved|saving checkpoint|)"
      R"(saving model to|running (?:evaluation|validation)|\bevaluating\b|\bvalidating\b)");
  return RE2::PartialMatch(re2::StringPiece(segment.data(), segment.size()), kMarker);
}

}  // namespace trainwatch::detect
