// Fingerprints of incidents: the same failure — on eight ranks, on another node, after a
// restart — gets the same fingerprint, a different failure another. Made of the failure class
// (the incident's kind and the rule its verdict came from) and its error text normalised:
// launcher prefixes, times, addresses, hex ids and every number are taken out, whitespace
// collapsed. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

#include "detect/incident.h"

namespace trainwatch::detect {

// "[rank3]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; ...)" ->
// "RuntimeError: CUDA out of memory. Tried to allocate # GiB (GPU #; ...)".
std::string NormalizeErrorText(std::string_view text);

// 16 hex digits (FNV-1a 64 of the class and the normalised text): stable across builds and
// machines, as incidents.jsonl and peers on other nodes compare them.
std::string Fingerprint(const Incident& incident);

}  // namespace trainwatch::detect
