#include "report/json_fields.h"

namespace trainwatch::report {

using json = nlohmann::ordered_json;

const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) {
    return kNull;
  }
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

const json& ArrayField(const json& object, const char* key) {
  static const json kEmpty = json::array();
  const json& field = Field(object, key);
  return field.is_array() ? field : kEmpty;
}

const json& ObjectField(const json& object, const char* key) {
  static const json kEmpty = json::object();
  const json& field = Field(object, key);
  return field.is_object() ? field : kEmpty;
}

bool BoolField(const json& object, const char* key, bool fallback) {
  const json& field = Field(object, key);
  return field.is_boolean() ? field.get<bool>() : fallback;
}

}  // namespace trainwatch::report
