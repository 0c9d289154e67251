// Reading a manifest that may be another version's, or damaged, without a throw: nlohmann's
// value() throws on a field of another type, and operator[] on a missing key of a const object
// is undefined. Every field the report reads goes through these. Pure; any thread.
#pragma once

#include <nlohmann/json.hpp>

namespace trainwatch::report {

// object[key] when object is an object holding it, else null.
const nlohmann::ordered_json& Field(const nlohmann::ordered_json& object, const char* key);
// The field when it is an array, else an empty one.
const nlohmann::ordered_json& ArrayField(const nlohmann::ordered_json& object, const char* key);
// The field when it is an object, else an empty one.
const nlohmann::ordered_json& ObjectField(const nlohmann::ordered_json& object, const char* key);
// The field when it is a boolean, else `fallback`.
bool BoolField(const nlohmann::ordered_json& object, const char* key, bool fallback);

}  // namespace trainwatch::report
