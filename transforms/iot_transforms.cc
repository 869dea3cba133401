// HeaderFrom, DecodePayload, TopicLevelRouter, Sample (see iot_transforms.h).
#include "transforms/iot_transforms.h"

#include <algorithm>
#include <cstdlib>

#include "core/base64.h"
#include "core/clock.h"
#include "core/json_read.h"
#include "transforms/mqtt_topic.h"
#include "transforms/schema_update.h"

namespace ferry::transforms {
namespace {

Result<std::string> decodeBase64(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    if (in[i] == '\n' || in[i] == '\r') continue;
    const int v = val(in[i]);
    if (v < 0) return Status::invalidArgument("not base64 (character " + std::to_string(i + 1) + ")");
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=' && in[i] != '\n' && in[i] != '\r') return Status::invalidArgument("not base64 (data after '=')");
  if (bits >= 6) return Status::invalidArgument("not base64 (truncated)");
  return out;
}

Result<std::string> decodeHex(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (in.size() % 2) return Status::invalidArgument("not hex (odd length)");
  std::string out;
  out.reserve(in.size() / 2);
  for (std::size_t i = 0; i < in.size(); i += 2) {
    const int a = val(in[i]), b = val(in[i + 1]);
    if (a < 0 || b < 0) return Status::invalidArgument("not hex (character " + std::to_string(i + (a < 0 ? 1 : 2)) + ")");
    out.push_back(static_cast<char>(a * 16 + b));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HeaderFrom

const ConfigDef& HeaderFrom::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("fields", ConfigType::kList, std::nullopt, Importance::kHigh, "Fields to copy or move into headers.",
             validators::nonEmptyList());
    d.define("headers", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Header names, one per field, in the same order.", validators::nonEmptyList());
    d.define("operation", ConfigType::kString, std::nullopt, Importance::kHigh,
             "copy (the field stays) or move (the field is removed).", validators::oneOf({"copy", "move"}));
    return d;
  }();
  return def;
}

Status HeaderFrom::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  fields_ = p.getList("fields");
  headers_ = p.getList("headers");
  if (fields_.size() != headers_.size())
    return Status::invalidArgument(name_ + ": 'fields' and 'headers' must have the same number of entries (" +
                                   std::to_string(fields_.size()) + " and " + std::to_string(headers_.size()) + ")");
  move_ = p.getString("operation") == "move";
  return Status::ok();
}

Result<bool> HeaderFrom::applyJson(Record& record, JsonCache& cache) {
  // With a schema, moved fields leave the schema too (Kafka's HeaderFrom in its schema'd mode).
  if (move_) {
    FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
      FERRY_RETURN_IF_ERROR(needStruct(old, name_, side()));
      return rebuildStruct(old, [&](SchemaBuilder& b) -> Status {
        for (const auto& f : old.fields())
          if (std::find(fields_.begin(), fields_.end(), f.name) == fields_.end()) b.field(f.name, f.schema);
        return Status::ok();
      });
    }));
  }
  Bytes& b = target(record);
  if (b.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    auto it = doc->find(fields_[i]);
    if (it == doc->end()) continue;
    record.headers.add(headers_[i], std::string_view(it->is_string() ? it->get<std::string>() : dumpJson(*it)));
    if (move_) doc->erase(it);
  }
  if (move_) cache.changed(targetSide());
  return true;
}

// ---------------------------------------------------------------------------------------------
// DecodePayload

const ConfigDef& DecodePayload::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("encoding", ConfigType::kString, "base64", Importance::kHigh,
             "base64 (standard or URL-safe alphabet, padding optional) or hex.", validators::oneOf({"base64", "hex"}));
    return d;
  }();
  return def;
}

Status DecodePayload::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  hex_ = p.getString("encoding") == "hex";
  return Status::ok();
}

Result<bool> DecodePayload::applyJson(Record& record, JsonCache& cache) {
  FERRY_RETURN_IF_ERROR(cache.flush(record));  // decodes the current bytes
  Bytes& b = target(record);
  if (b.isNull()) return true;
  // With a schema the data is a payload: a string's text is inside a JSON string, and bytes are
  // base64 in one (of the encoded text). The decoded bytes take the schema bytes (optional kept)
  // and are written as bytes' payload, base64 in a JSON string.
  SchemaPtr& schema = targetSchema(record);
  std::string encoded;
  std::string_view in = b.view();
  if (schema) {
    if (schema->type() != SchemaType::kString && schema->type() != SchemaType::kBytes)
      return Status::invalidArgument(name_ + ": the " + side() + "'s schema is " + schema->describe() +
                                     ", not a string or bytes");
    auto text = core::parseJson(in);
    if (!text || !text->is_string())
      return Status::invalidArgument(name_ + ": the " + side() + " of a record in topic '" + record.topic +
                                     "' is not the JSON string its schema says");
    encoded = text->get<std::string>();
    if (schema->type() == SchemaType::kBytes) {
      auto raw = decodeBase64(encoded);
      if (!raw.isOk())
        return Status::invalidArgument(name_ + ": the " + side() + " of a record in topic '" + record.topic +
                                       "' is not base64 as its bytes schema says");
      encoded = std::move(*raw);
    }
    in = encoded;
  }
  auto d = hex_ ? decodeHex(in) : decodeBase64(in);
  if (!d.isOk())
    return Status::invalidArgument(name_ + ": the " + side() + " of a record in topic '" + record.topic +
                                   "' is " + d.status().message());
  if (!schema) {
    b = Bytes(std::move(*d));
    return true;
  }
  FERRY_ASSIGN_OR_RETURN(schema, memo_.get(schema, [](const Schema& old) -> Result<SchemaPtr> {
    return SchemaBuilder::bytes().optional(old.optional()).build();
  }));
  b = Bytes("\"" + core::base64Encode(*d) + "\"");
  return true;
}

// ---------------------------------------------------------------------------------------------
// TopicLevelRouter

const ConfigDef& TopicLevelRouter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("topic.format", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The new topic: text with ${level1}, ${level2}, ... (levels of the MQTT topic) and ${topic}.",
             validators::nonEmptyString());
    return d;
  }();
  return def;
}

Status TopicLevelRouter::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "TopicLevelRouter"));
  const std::string f = p.getString("topic.format");
  parts_.clear();
  std::size_t i = 0;
  while (i < f.size()) {
    const std::size_t open = f.find("${", i);
    if (open == std::string::npos) {
      parts_.push_back({f.substr(i), 0});
      break;
    }
    if (open > i) parts_.push_back({f.substr(i, open - i), 0});
    const std::size_t close = f.find('}', open);
    if (close == std::string::npos)
      return Status::invalidArgument("TopicLevelRouter: topic.format: unterminated ${ at " + std::to_string(open + 1));
    const std::string name = f.substr(open + 2, close - open - 2);
    if (name == "topic") {
      parts_.push_back({"", -1});
    } else if (name.rfind("level", 0) == 0 && name.size() > 5 &&
               name.find_first_not_of("0123456789", 5) == std::string::npos && std::atoi(name.c_str() + 5) >= 1) {
      parts_.push_back({"", std::atoi(name.c_str() + 5)});
    } else {
      return Status::invalidArgument("TopicLevelRouter: topic.format: unknown placeholder ${" + name +
                                     "} (${topic}, ${level1}, ${level2}, ...)");
    }
    i = close + 1;
  }
  return Status::ok();
}

Result<bool> TopicLevelRouter::apply(Record& record) {
  const std::string_view mqtt = mqttTopic(record);
  const std::vector<std::string_view> levels = topicLevels(mqtt);
  std::string out;
  for (const auto& p : parts_) {
    if (p.level == 0) {
      out += p.text;
    } else if (p.level < 0) {
      out += record.topic;
    } else {
      if (p.level > static_cast<int>(levels.size()))
        return Status::invalidArgument("TopicLevelRouter: topic '" + std::string(mqtt) + "' has " +
                                       std::to_string(levels.size()) + " level(s), the format needs level " +
                                       std::to_string(p.level));
      out += levels[static_cast<std::size_t>(p.level - 1)];
    }
  }
  for (auto& c : out)
    if (c == '/' || c == '+' || c == '#' || c == ' ') c = '_';
  if (out.empty()) return Status::invalidArgument("TopicLevelRouter: the new topic is empty");
  record.topic = std::move(out);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Sample

Sample::Sample() : clock_([] { return core::monotonicMs(); }) {}

const ConfigDef& Sample::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("every", ConfigType::kLong, "0", Importance::kHigh,
             "Keep one record in this many (the first, then every N-th after it); 1 keeps all. 0: not "
             "set. Set exactly one of every and rate.",
             validators::atLeast(0));
    d.define("rate", ConfigType::kDouble, "0", Importance::kHigh,
             "Keep at most this many records per second per task (token bucket: bursts of up to "
             "max(rate, 1), refilled continuously; fractions allowed). 0: not set. Set exactly one of "
             "every and rate.",
             validators::atLeast(0));
    return d;
  }();
  return def;
}

Status Sample::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "Sample"));
  every_ = p.getLong("every");
  rate_ = p.getDouble("rate");
  if ((every_ > 0) == (rate_ > 0))
    return Status::invalidArgument(std::string("Sample: set exactly one of 'every' (keep one in N) and 'rate' ") +
                                   "(at most N records per second), with a value above 0" +
                                   (every_ > 0 ? "; both are set" : ""));
  seen_ = 0;
  tokens_ = rate_ > 1 ? rate_ : 1;  // the bucket starts full
  lastMs_.reset();
  return Status::ok();
}

Result<bool> Sample::apply(Record&) {
  if (every_ > 0) return seen_++ % every_ == 0;
  const std::int64_t now = clock_();
  const double capacity = rate_ > 1 ? rate_ : 1;
  if (lastMs_ && now > *lastMs_) {
    // Capped elapsed time: a long pause refills the bucket, no more (and cannot overflow).
    const double elapsed = static_cast<double>(std::min<std::int64_t>(now - *lastMs_, 86'400'000));
    tokens_ = std::min(capacity, tokens_ + elapsed * rate_ / 1000.0);
  }
  if (!lastMs_ || now > *lastMs_) lastMs_ = now;  // a clock that goes back refills nothing
  if (tokens_ >= 1.0 - 1e-9) {
    tokens_ -= 1.0;
    return true;
  }
  return false;
}

}  // namespace ferry::transforms
