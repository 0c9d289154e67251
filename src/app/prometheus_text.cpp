#include "app/prometheus_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/unique_fd.h"

namespace trainwatch::app {
namespace {

// Label values escape backslash, double quote and newline; HELP text backslash and newline.
std::string Escape(const std::string& text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

}  // namespace

std::string PrometheusText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& family : families) {
    if (family.samples.empty()) {
      continue;
    }
    out += "# HELP " + family.name + " " + Escape(family.help, false) + "\n";
    out += "# TYPE " + family.name + " " + family.type + "\n";
    for (const MetricSample& sample : family.samples) {
      out += family.name;
      if (!sample.labels.empty()) {
        out += "{";
        for (std::size_t i = 0; i < sample.labels.size(); ++i) {
          out += (i ? "," : "") + sample.labels[i].first + "=\"" +
                 Escape(sample.labels[i].second, true) + "\"";
        }
        out += "}";
      }
      out += " " + Number(sample.value) + "\n";
    }
  }
  return out;
}

Status WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode) {
  const std::string temporary = path + ".tmp";
  {
    UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (fd.get() < 0) {
      return Error{temporary + ": " + std::strerror(errno)};
    }
    // The umask (0077 under the systemd unit) must not hide the file from its reader.
    if (::fchmod(fd.get(), mode) != 0) {
      return Error{temporary + ": " + std::strerror(errno)};
    }
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        const std::string why = std::strerror(errno);
        ::unlink(temporary.c_str());
        return Error{temporary + ": " + why};
      }
      done += static_cast<std::size_t>(n);
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    return Error{path + ": " + why};
  }
  return Status::Ok();
}

}  // namespace trainwatch::app
