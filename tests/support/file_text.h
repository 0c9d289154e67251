// Whole-file reads and appends for tests that play a training job writing its log.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace trainwatch::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Appends and flushes at once, as a job's unbuffered print does.
inline void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text << std::flush;
}

}  // namespace trainwatch::testing
