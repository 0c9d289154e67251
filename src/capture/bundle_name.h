// A bundle's file name: "<UTC time>_<host>_<rule id>_<incident id>.tar.zst", safe as a file
// name, sorting by time. Pure function; any thread.
#pragma once

#include <string>

#include "detect/incident.h"

namespace trainwatch::capture {

std::string BundleFileName(const detect::Incident& incident, const std::string& host);

}  // namespace trainwatch::capture
