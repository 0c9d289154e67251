#include "diagnose/stack_rules.h"

#include <algorithm>
#include <variant>

#include "core/regex_options.h"
#include "diagnose/suspects.h"

namespace trainwatch::diagnose {
namespace {

void ReplaceAll(std::string& text, std::string_view from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// An example's frames: gdb's py-bt lines of one thread, under the header gdb gives a thread.
std::vector<collect::StackFrame> ExampleFrames(const std::string& text) {
  const std::vector<collect::ThreadStack> threads =
      collect::ParseGdbPythonStacks("Thread 1 (Thread 0x1 (LWP 1) \"python3\"):\n" + text);
  return threads.empty() ? std::vector<collect::StackFrame>{} : threads.front().frames;
}

}  // namespace

std::shared_ptr<const StackRules> CompileStackRules(const std::vector<rules::Rule>& rules) {
  auto compiled = std::make_shared<StackRules>();
  for (const rules::Rule& rule : rules) {
    const auto* stack = std::get_if<rules::StackDetector>(&rule.detector);
    if (stack == nullptr) {
      continue;
    }
    StackRule out{rule.id, rule.verdict,
                  std::make_shared<const RE2>(stack->function.regex, RegexOptions()), nullptr,
                  stack->says};
    if (stack->file) {
      out.file = std::make_shared<const RE2>(stack->file->regex, RegexOptions());
    }
    if (out.function->ok() && (!out.file || out.file->ok())) {
      compiled->push_back(std::move(out));
    }
  }
  return compiled;
}

const collect::StackFrame* MatchStackRule(const StackRule& rule,
                                          const std::vector<collect::StackFrame>& python) {
  for (const collect::StackFrame& frame : python) {
    if (RE2::PartialMatch(frame.function, *rule.function) &&
        (!rule.file || RE2::PartialMatch(frame.file, *rule.file))) {
      return &frame;
    }
  }
  return nullptr;
}

std::string StackRuleSays(const StackRule& rule, const std::string& rank,
                          const collect::StackFrame& frame) {
  std::string says = rule.says;
  ReplaceAll(says, "{rank}", rank);
  ReplaceAll(says, "{function}", frame.function);
  ReplaceAll(says, "{file}", Basename(frame.file));
  ReplaceAll(says, "{line}", std::to_string(frame.line));
  return says;
}

void CheckStackExamples(const std::vector<rules::Rule>& rules, std::vector<Diagnostic>& problems) {
  const std::shared_ptr<const StackRules> compiled = CompileStackRules(rules);
  for (const rules::Rule& rule : rules) {
    const auto found = std::find_if(compiled->begin(), compiled->end(),
                                    [&](const StackRule& stack) { return stack.id == rule.id; });
    if (found == compiled->end()) {
      continue;
    }
    for (const auto& [examples, should_fire] :
         {std::pair{&rule.fires, true}, std::pair{&rule.quiet, false}}) {
      for (const rules::Example& example : *examples) {
        const std::vector<collect::StackFrame> frames = ExampleFrames(example.text);
        if (frames.empty()) {
          problems.push_back({example.where, "rule '" + rule.id +
                                                 "': example holds no py-bt frame (lines like "
                                                 "'  File \"/job/data.py\", line 41, in fetch')"});
        } else if ((MatchStackRule(*found, frames) != nullptr) != should_fire) {
          problems.push_back({example.where, "rule '" + rule.id + "': example stack " +
                                                 (should_fire ? "should fire but does not"
                                                              : "should stay quiet but fires")});
        }
      }
    }
  }
}

}  // namespace trainwatch::diagnose
