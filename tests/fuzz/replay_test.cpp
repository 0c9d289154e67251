// The libFuzzer targets (tests/fuzz) under the ordinary test build, no libFuzzer: each target's
// seed corpus is fed to it, with every seed's prefixes and a fixed, repeatable set of byte
// mutations of it. So the targets keep compiling with the tests, and a seed that crashes or
// trips a sanitizer fails ctest (CI's sanitizer stage runs this under ASan + UBSan). Fuzzing
// for real, coverage-guided and for minutes, is bench/fuzz's (clang, -DTRAINWATCH_FUZZ=ON).
//
// tests/CMakeLists.txt compiles each <name>_fuzz.cpp with LLVMFuzzerTestOneInput renamed to
// FuzzReplay_<name>, so the eleven entry points live in one executable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "support/file_text.h"

#define TRAINWATCH_FUZZ_TARGETS(X) \
  X(rule_loader)                   \
  X(config_loader)                 \
  X(line_framer)                   \
  X(progress_parser)               \
  X(traceback_grouper)             \
  X(redactor)                      \
  X(incident_log)                  \
  X(bundle_manifest)               \
  X(kmsg_record)                   \
  X(peer_record)                   \
  X(hook_dump)

#define TRAINWATCH_DECLARE_TARGET(name) \
  extern "C" int FuzzReplay_##name(const std::uint8_t* data, std::size_t size);
TRAINWATCH_FUZZ_TARGETS(TRAINWATCH_DECLARE_TARGET)
#undef TRAINWATCH_DECLARE_TARGET

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

struct FuzzTarget {
  const char* name;
  int (*run)(const std::uint8_t* data, std::size_t size);
};
// How gtest (and so ctest's list) shows a target: its name, not its bytes.
void PrintTo(const FuzzTarget& target, std::ostream* out) { *out << target.name; }

#define TRAINWATCH_TARGET_ENTRY(name) FuzzTarget{#name, &FuzzReplay_##name},
const std::vector<FuzzTarget> kTargets = {TRAINWATCH_FUZZ_TARGETS(TRAINWATCH_TARGET_ENTRY)};
#undef TRAINWATCH_TARGET_ENTRY

// Enough to reach past a seed's first few fields, few enough that the whole replay takes
// seconds under ASan.
constexpr int kPrefixes = 32;
constexpr int kMutationsPerSeed = 200;

void Feed(const FuzzTarget& target, const std::string& input) {
  // A copy of exactly the input's size, so ASan sees a read past its end.
  const std::vector<std::uint8_t> bytes(input.begin(), input.end());
  // Never null, as libFuzzer's own empty input is not (the targets may rely on it).
  static const std::uint8_t kNothing = 0;
  target.run(bytes.empty() ? &kNothing : bytes.data(), bytes.size());
}

// What libFuzzer's own first mutations look like: a byte changed, inserted, erased, or a
// piece repeated.
std::string Mutated(const std::string& seed, std::mt19937& random) {
  std::string input = seed;
  const int edits = 1 + static_cast<int>(random() % 4);
  for (int edit = 0; edit < edits; ++edit) {
    const std::size_t at = input.empty() ? 0 : random() % input.size();
    switch (random() % 4) {
      case 0:
        if (!input.empty()) {
          input[at] = static_cast<char>(random() % 256);
        }
        break;
      case 1:
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(at),
                     static_cast<char>(random() % 256));
        break;
      case 2:
        if (!input.empty()) {
          input.erase(at, 1 + random() % 8);
        }
        break;
      default:
        input.insert(at, input.substr(at, 1 + random() % 16));
        break;
    }
  }
  return input;
}

class FuzzReplay : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(FuzzReplay, EverySeedItsPrefixesAndMutations) {
  const FuzzTarget& target = GetParam();
  const fs::path corpus = fs::path(TRAINWATCH_TEST_SOURCE_DIR) / "fuzz" / "corpus" / target.name;
  std::vector<fs::path> seeds;
  for (const fs::directory_entry& entry : fs::directory_iterator(corpus)) {
    seeds.push_back(entry.path());
  }
  std::sort(seeds.begin(), seeds.end());
  ASSERT_FALSE(seeds.empty()) << corpus << " holds no seed";
  Feed(target, "");
  std::mt19937 random(20261128);
  for (const fs::path& path : seeds) {
    SCOPED_TRACE(path.string());
    const std::string seed = ReadFile(path);
    Feed(target, seed);
    for (int cut = 1; cut <= kPrefixes && seed.size() > 1; ++cut) {
      Feed(target, seed.substr(0, seed.size() * cut / (kPrefixes + 1)));
    }
    for (int mutation = 0; mutation < kMutationsPerSeed; ++mutation) {
      Feed(target, Mutated(seed, random));
    }
  }
}

std::string TargetName(const ::testing::TestParamInfo<FuzzTarget>& target) {
  return target.param.name;
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(kTargets), TargetName);

}  // namespace
}  // namespace trainwatch::testing
