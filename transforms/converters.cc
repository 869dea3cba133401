// Converters (see converters.h). Valid data passes by reference (no copy) wherever the bytes do
// not change; JsonConverter only validates (SAX, no document) unless it must wrap or unwrap.
#include "transforms/converters.h"

#include "transforms/json_util.h"

namespace ferry::transforms {

const ConfigDef& ByteArrayConverter::definition() {
  static const ConfigDef def;
  return def;
}

Status ByteArrayConverter::configure(const StringMap& config, bool isKey) {
  (void)config;
  (void)isKey;
  return Status::ok();
}

Result<Bytes> ByteArrayConverter::fromRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

Result<Bytes> ByteArrayConverter::toRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

const ConfigDef& StringConverter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("encoding", ConfigType::kString, "UTF-8", Importance::kLow,
             "Character encoding of the text; ferry keeps bytes as they are, so only UTF-8 is "
             "accepted.",
             validators::oneOf({"UTF-8", "UTF8"}));
    return d;
  }();
  return def;
}

Status StringConverter::configure(const StringMap& config, bool isKey) {
  (void)isKey;
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "StringConverter"));
  (void)p;
  return Status::ok();
}

Result<Bytes> StringConverter::fromRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

Result<Bytes> StringConverter::toRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

const ConfigDef& JsonConverter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("schemas.enable", ConfigType::kBool, "true", Importance::kHigh,
             "Wrap data as {\"schema\":null,\"payload\":<data>} in the backbone (Kafka "
             "Connect's envelope) and require that envelope when reading.");
    d.define("schemas.cache.size", ConfigType::kInt, "1000", Importance::kLow,
             "Accepted for Kafka Connect compatibility; ferry keeps no schema cache.",
             validators::atLeast(0));
    return d;
  }();
  return def;
}

Status JsonConverter::configure(const StringMap& config, bool isKey) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "JsonConverter"));
  schemasEnable_ = p.getBool("schemas.enable");
  isKey_ = isKey;
  return Status::ok();
}

Status JsonConverter::notJson(const std::string& topic, const Bytes& data,
                              const char* direction) const {
  return Status::invalidArgument(std::string("JsonConverter: the ") + (isKey_ ? "key" : "value") +
                                 " " + direction + " topic '" + topic +
                                 "' is not valid JSON: " + jsonError(data.view()));
}

Result<Bytes> JsonConverter::fromRecord(const std::string& topic, const Bytes& data) {
  if (data.isNull()) return data;
  if (!isJson(data.view())) return notJson(topic, data, "for");
  if (!schemasEnable_) return data;
  static constexpr std::string_view kHead = "{\"schema\":null,\"payload\":";
  std::string out;
  out.reserve(kHead.size() + data.size() + 1);
  out.append(kHead).append(data.view()).push_back('}');
  return Bytes(std::move(out));
}

Result<Bytes> JsonConverter::toRecord(const std::string& topic, const Bytes& data) {
  if (data.isNull()) return data;
  if (!schemasEnable_) {
    if (!isJson(data.view())) return notJson(topic, data, "from");
    return data;
  }
  auto j = parseJson(data.view());
  if (!j) return notJson(topic, data, "from");
  if (!j->is_object() || !j->contains("payload") || !j->contains("schema"))
    return Status::invalidArgument(
        std::string("JsonConverter: the ") + (isKey_ ? "key" : "value") + " from topic '" +
        topic + "' has no {\"schema\": ..., \"payload\": ...} envelope; with schemas.enable=true "
        "it must have one (set schemas.enable=false to read plain JSON)");
  const Json& payload = j->at("payload");
  if (payload.is_null()) return Bytes::null();
  return toBytes(payload);
}

}  // namespace ferry::transforms
