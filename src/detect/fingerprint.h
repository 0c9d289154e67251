// Fingerprints of incidents: the same failure — on eight ranks, on another node, after a
// restart — gets the same fingerprint, a different failure another. Made of the failure class
// (the incident's kind and the rule its verdict came from), its error text normalised
// (launcher prefixes, times, addresses, hex ids and every number are taken out, whitespace
// collapsed) and, for a Python traceback, where it was raised: the innermost frame's file
// name and function, without the directory (a venv or checkout elsewhere) or the line number
// (an edit above it). The same KeyError raised in two places is two failures. Pure; any
// thread.
#pragma once

#include <string>
#include <string_view>

#include "detect/incident.h"

namespace trainwatch::detect {

// "[rank3]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; ...)" ->
// "RuntimeError: CUDA out of memory. Tried to allocate # GiB (GPU #; ...)".
std::string NormalizeErrorText(std::string_view text);

// `File "/opt/job/train.py", line 88, in step` -> "train.py in step"; what is not a frame line
// comes back as NormalizeErrorText makes it.
std::string NormalizeFrame(std::string_view frame);

// 16 hex digits (FNV-1a 64 of the class and the normalised text): stable across builds and
// machines, as incidents.jsonl and peers on other nodes compare them.
std::string Fingerprint(const Incident& incident);

}  // namespace trainwatch::detect
