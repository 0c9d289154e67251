#include "source/glob.h"

#include <fnmatch.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

namespace trainwatch::source {
namespace {

constexpr int kMaxGlobstarDepth = 16;

struct Component {
  enum Kind { kLiteral, kWildcard, kGlobstar };
  Kind kind;
  std::string text;  // unescaped for a literal; as written (for fnmatch) for a wildcard
};

bool HasWildcard(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '*' || text[i] == '?' || text[i] == '[') {
      return true;
    }
  }
  return false;
}

std::string Unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      ++i;
    }
    out += text[i];
  }
  return out;
}

// nullopt for a relative pattern. Consecutive `**` collapse (they match the same paths, and
// each would multiply the walk); a trailing `**` becomes `**/*`.
std::optional<std::vector<Component>> Split(const std::string& pattern) {
  if (pattern.empty() || pattern.front() != '/') {
    return std::nullopt;
  }
  std::vector<Component> parts;
  std::size_t start = 0;
  while (start < pattern.size()) {
    std::size_t end = pattern.find('/', start);
    if (end == std::string::npos) {
      end = pattern.size();
    }
    const std::string_view text(pattern.data() + start, end - start);
    start = end + 1;
    if (text.empty()) {
      continue;
    }
    if (text == "**") {
      if (parts.empty() || parts.back().kind != Component::kGlobstar) {
        parts.push_back({Component::kGlobstar, "**"});
      }
    } else if (HasWildcard(text)) {
      parts.push_back({Component::kWildcard, std::string(text)});
    } else {
      parts.push_back({Component::kLiteral, Unescape(text)});
    }
  }
  if (!parts.empty() && parts.back().kind == Component::kGlobstar) {
    parts.push_back({Component::kWildcard, "*"});
  }
  return parts;
}

std::string Join(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (out.empty() || out.back() != '/') {
    out += '/';
  }
  out += name;
  return out;
}

bool StatIs(const FileSystem& fs, const std::string& path, FileType type) {
  const Result<FileStatus> status = fs.Stat(path);
  return status && status->type == type;
}

// Walks the file system one pattern component at a time. With `dirs`, also records every
// existing directory it looks into (for GlobWatchDirs).
class Walker {
 public:
  Walker(const FileSystem& fs, const std::vector<Component>& parts, std::set<std::string>* dirs)
      : fs_(fs), parts_(parts), dirs_(dirs) {}

  void Walk(const std::string& dir, std::size_t i, int depth) {
    const Component& part = parts_[i];
    if (part.kind == Component::kLiteral) {
      // No listing needed: the name is known. Only the watch list pays for checking `dir`.
      if (dirs_ != nullptr) {
        if (!StatIs(fs_, dir, FileType::kDirectory)) {
          return;
        }
        dirs_->insert(dir);
      }
      const std::string path = Join(dir, part.text);
      if (i + 1 == parts_.size()) {
        if (StatIs(fs_, path, FileType::kRegular)) {
          matches_.push_back(path);
        }
      } else {
        Walk(path, i + 1, depth);
      }
      return;
    }
    // Missing, not a directory or not readable: nothing matches below it.
    const Result<std::vector<DirEntry>> listed = fs_.List(dir);
    if (!listed) {
      return;
    }
    const std::vector<DirEntry>& entries = *listed;
    if (dirs_ != nullptr) {
      dirs_->insert(dir);
    }
    if (part.kind == Component::kWildcard) {
      MatchEntries(dir, entries, i, depth);
      return;
    }
    // `**` matching no directory: the next component (never `**`, never missing; see Split)
    // applies here, using the listing already made.
    if (parts_[i + 1].kind == Component::kLiteral) {
      Walk(dir, i + 1, depth);
    } else {
      MatchEntries(dir, entries, i + 1, depth);
    }
    if (depth >= kMaxGlobstarDepth) {
      return;
    }
    for (const DirEntry& entry : entries) {
      if (entry.name.front() == '.') {
        continue;
      }
      const std::string path = Join(dir, entry.name);
      // A real directory only: following a symlink here could loop (a link to `..`).
      if (entry.type == FileType::kDirectory ||
          (entry.type == FileType::kUnknown && IsRealDirectory(path))) {
        Walk(path, i, depth + 1);
      }
    }
  }

  std::vector<std::string> TakeMatches() {
    std::sort(matches_.begin(), matches_.end());
    matches_.erase(std::unique(matches_.begin(), matches_.end()), matches_.end());
    return std::move(matches_);
  }

 private:
  bool IsRealDirectory(const std::string& path) const {
    const Result<FileStatus> status = fs_.Stat(path, /*follow=*/false);
    return status && status->type == FileType::kDirectory;
  }

  // Applies wildcard component `i` to the entries of `dir`. The entry type decides without a
  // stat except for symlinks (followed here) and DT_UNKNOWN.
  void MatchEntries(const std::string& dir, const std::vector<DirEntry>& entries, std::size_t i,
                    int depth) {
    const bool last = i + 1 == parts_.size();
    for (const DirEntry& entry : entries) {
      if (::fnmatch(parts_[i].text.c_str(), entry.name.c_str(), FNM_PERIOD) != 0) {
        continue;
      }
      const std::string path = Join(dir, entry.name);
      const bool check = entry.type == FileType::kSymlink || entry.type == FileType::kUnknown;
      if (last) {
        if (entry.type == FileType::kRegular || (check && StatIs(fs_, path, FileType::kRegular))) {
          matches_.push_back(path);
        }
      } else if (entry.type == FileType::kDirectory ||
                 (check && StatIs(fs_, path, FileType::kDirectory))) {
        Walk(path, i + 1, depth);
      }
    }
  }

  const FileSystem& fs_;
  const std::vector<Component>& parts_;
  std::set<std::string>* dirs_;
  std::vector<std::string> matches_;
};

// The directory made of the leading literal components (never the last component, which names
// files), and the index of the first component after it.
std::pair<std::string, std::size_t> LiteralPrefix(const std::vector<Component>& parts) {
  std::string dir = "/";
  std::size_t i = 0;
  for (; i + 1 < parts.size() && parts[i].kind == Component::kLiteral; ++i) {
    dir = Join(dir, parts[i].text);
  }
  return {dir, i};
}

bool MatchFrom(const std::vector<Component>& parts, std::size_t i,
               const std::vector<std::string_view>& names, std::size_t j, int depth) {
  if (i == parts.size()) {
    return j == names.size();
  }
  const Component& part = parts[i];
  if (part.kind == Component::kGlobstar) {
    if (MatchFrom(parts, i + 1, names, j, depth)) {
      return true;
    }
    // Mirrors the walk: `**` enters no hidden directory and at most 16 levels.
    return j < names.size() && names[j].front() != '.' && depth < kMaxGlobstarDepth &&
           MatchFrom(parts, i, names, j + 1, depth + 1);
  }
  if (j == names.size()) {
    return false;
  }
  const bool ok =
      part.kind == Component::kLiteral
          ? names[j] == part.text
          : ::fnmatch(part.text.c_str(), std::string(names[j]).c_str(), FNM_PERIOD) == 0;
  return ok && MatchFrom(parts, i + 1, names, j + 1, depth);
}

}  // namespace

std::vector<std::string> ExpandGlob(const std::string& pattern, const FileSystem& fs) {
  const auto parts = Split(pattern);
  if (!parts || parts->empty()) {
    return {};
  }
  const auto [dir, first] = LiteralPrefix(*parts);
  Walker walker(fs, *parts, nullptr);
  walker.Walk(dir, first, 0);
  return walker.TakeMatches();
}

std::vector<std::string> GlobWatchDirs(const std::string& pattern, const FileSystem& fs) {
  const auto parts = Split(pattern);
  if (!parts || parts->empty()) {
    return {};
  }
  const auto [dir, first] = LiteralPrefix(*parts);
  std::set<std::string> dirs;
  // A missing prefix (/data/runs before the first job) is watched from its deepest existing
  // ancestor, so its creation is noticed.
  std::string existing = dir;
  while (!StatIs(fs, existing, FileType::kDirectory) && existing != "/") {
    existing = existing.substr(0, std::max<std::size_t>(existing.rfind('/'), 1));
  }
  dirs.insert(existing);
  Walker walker(fs, *parts, &dirs);
  walker.Walk(dir, first, 0);
  return {dirs.begin(), dirs.end()};
}

bool GlobMatches(const std::string& pattern, const std::string& path) {
  const auto parts = Split(pattern);
  if (!parts || parts->empty() || path.empty() || path.front() != '/') {
    return false;
  }
  std::vector<std::string_view> names;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    if (end > start) {
      names.emplace_back(path.data() + start, end - start);
    }
    start = end + 1;
  }
  return MatchFrom(*parts, 0, names, 0, 0);
}

std::string LiteralDirOf(const std::string& pattern) {
  const std::size_t wildcard = pattern.find_first_of("*?[");
  const std::string literal = pattern.substr(0, wildcard);
  const std::size_t slash = literal.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : literal.substr(0, slash);
}

}  // namespace trainwatch::source
