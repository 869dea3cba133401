// CloudEvents 1.0 codec, CloudEventsConverter and CloudEvent (see cloudevents.h).
#include "transforms/cloudevents.h"

#include <simdjson.h>

#include <cctype>
#include <charconv>
#include <system_error>

#include "core/base64.h"
#include "core/json_text.h"
#include "transforms/json_util.h"
#include "transforms/record_transforms.h"
#include "transforms/time_transforms.h"

namespace ferry::transforms {
namespace cloudevents {
namespace {

constexpr std::string_view kCore[] = {"specversion", "id",   "source",          "type",
                                      "subject",     "time", "datacontenttype", "dataschema"};
// What the structured form of a converter's or transform's output carries in `content-type`
// (the Kafka protocol binding's structured mode).
constexpr std::string_view kStructuredHeaderValue = "application/cloudevents+json; charset=UTF-8";

bool isCore(std::string_view name) {
  for (auto c : kCore)
    if (c == name) return true;
  return false;
}

Status invalid(std::string m) { return Status::invalidArgument(std::move(m)); }

// A name from outside, for a message: at most 32 characters, escaped.
std::string excerptOf(std::string_view name) {
  return "'" + core::jsonExcerpt(name.substr(0, std::min<std::size_t>(name.size(), 32)), 0, 32) +
         (name.size() > 32 ? "...'" : "'");
}

// The media type of a content type: parameters dropped, blanks trimmed, lowercase.
std::string mediaType(std::string_view ct) {
  ct = ct.substr(0, ct.find(';'));
  while (!ct.empty() && (ct.front() == ' ' || ct.front() == '\t')) ct.remove_prefix(1);
  while (!ct.empty() && (ct.back() == ' ' || ct.back() == '\t')) ct.remove_suffix(1);
  std::string out(ct);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool validUtf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

// A JSON string; text that is not UTF-8 (from a header) has its bad bytes replaced by U+FFFD.
void appendString(std::string& out, std::string_view s) {
  if (validUtf8(s)) {
    core::appendJsonString(out, s);
  } else {
    out += dumpJson(Json(std::string(s)));
  }
}

// RFC 3339: a date, 'T', a time and a zone (Z or an offset); TimestampConverter's ISO-8601 reader
// checks the fields.
bool validTime(std::string_view t) {
  if (t.size() < 20 || (t[10] != 'T' && t[10] != 't')) return false;
  const char last = t.back();
  const bool zoned = last == 'Z' || last == 'z' ||
                     (t.size() >= 25 && (t[t.size() - 6] == '+' || t[t.size() - 6] == '-') && t[t.size() - 3] == ':');
  return zoned && TimestampConverter::parseIso8601(t).isOk();
}

Status nonEmpty(const std::optional<std::string>& v, const char* name) {
  if (v && v->empty()) return invalid(std::string("attribute '") + name + "' is empty; when present it must be a non-empty string");
  return Status::ok();
}

// The event in one JSON object (see parseStructured); the caller adds where it is.
Result<Event> fromJson(const Json& obj) {
  if (!obj.is_object()) return invalid(std::string("a CloudEvent must be a JSON object, not a JSON ") + obj.type_name());
  Event e;
  std::optional<std::string> specversion;
  const Json* data = nullptr;
  const Json* data64 = nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    if (name == "data") {
      data = &v;
      continue;
    }
    if (name == "data_base64") {
      data64 = &v;
      continue;
    }
    if (!validAttributeName(name))
      return invalid("member " + excerptOf(name) +
                     " is not a valid attribute name (1 to 20 lowercase letters a-z and digits)");
    if (v.is_null()) continue;  // a null attribute is absent
    if (isCore(name)) {
      if (!v.is_string())
        return invalid("attribute '" + name + "' must be a string, not a JSON " + v.type_name());
      const std::string& s = v.get_ref<const std::string&>();
      if (name == "specversion") specversion = s;
      else if (name == "id") e.id = s;
      else if (name == "source") e.source = s;
      else if (name == "type") e.type = s;
      else if (name == "subject") e.subject = s;
      else if (name == "time") e.time = s;
      else if (name == "datacontenttype") e.datacontenttype = s;
      else e.dataschema = s;
      continue;
    }
    Extension x;
    if (v.is_string()) {
      x.value = v.get<std::string>();
    } else if (v.is_number_integer()) {  // signed and unsigned
      x.value = dumpJson(v);
      x.kind = Extension::Kind::kInteger;
    } else if (v.is_boolean()) {
      x.value = v.get<bool>() ? "true" : "false";
      x.kind = Extension::Kind::kBoolean;
    } else {
      return invalid("extension attribute '" + name + "' must be a string, an integer or a boolean, not a JSON " +
                     (v.is_number() ? std::string("non-integral number") : std::string(v.type_name())));
    }
    e.extensions.emplace(name, std::move(x));
  }
  if (!specversion) return invalid("required attribute 'specversion' is missing");
  e.specversion = *specversion;
  const bool hasData = data != nullptr && !data->is_null();
  const bool hasData64 = data64 != nullptr && !data64->is_null();
  if (hasData && hasData64) return invalid("both 'data' and 'data_base64' are present; an event has at most one");
  if (hasData64) {
    if (!data64->is_string()) return invalid(std::string("'data_base64' must be a string, not a JSON ") + data64->type_name());
    auto raw = core::base64Decode(data64->get_ref<const std::string&>());
    if (!raw) return invalid("'data_base64' is not base64 (RFC 4648, standard alphabet with padding)");
    e.data = Bytes(std::move(*raw));
    e.dataEncoding = DataEncoding::kBase64;
  } else if (hasData) {
    if (!isJsonContentType(e.datacontenttype.value_or("")) && data->is_string()) {
      e.data = Bytes(data->get<std::string>());
      e.dataEncoding = DataEncoding::kString;
    } else {
      e.data = Bytes(dumpJson(*data));
      e.dataEncoding = DataEncoding::kJson;
    }
  }
  FERRY_RETURN_IF_ERROR(validate(e));
  return e;
}

void appendEvent(std::string& out, const Event& e, DataEncoding enc) {
  out += "{\"specversion\":";
  appendString(out, e.specversion);
  out += ",\"id\":";
  appendString(out, e.id);
  out += ",\"source\":";
  appendString(out, e.source);
  out += ",\"type\":";
  appendString(out, e.type);
  const std::pair<const char*, const std::optional<std::string>*> optional[] = {
      {"subject", &e.subject},
      {"time", &e.time},
      {"datacontenttype", &e.datacontenttype},
      {"dataschema", &e.dataschema}};
  for (const auto& [name, v] : optional) {
    if (!*v) continue;
    out += ",\"";
    out += name;
    out += "\":";
    appendString(out, **v);
  }
  for (const auto& [name, x] : e.extensions) {
    out += ",\"";
    out += name;  // validated: letters and digits
    out += "\":";
    if (x.kind == Extension::Kind::kString) appendString(out, x.value);
    else out += x.value;  // validated as a JSON integer / boolean
  }
  switch (enc) {
    case DataEncoding::kNone: break;
    case DataEncoding::kJson:
      out += ",\"data\":";
      out += e.data.view();
      break;
    case DataEncoding::kString:
      out += ",\"data\":";
      appendString(out, e.data.view());
      break;
    case DataEncoding::kBase64:
      out += ",\"data_base64\":\"";
      out += core::base64Encode(e.data.view());
      out += '"';
      break;
  }
  out += '}';
}

// The encoding renderStructured uses for `e`: its own, or one chosen for its bytes.
Result<DataEncoding> encodingOf(const Event& e) {
  if (e.data.isNull()) return DataEncoding::kNone;
  DataEncoding enc = e.dataEncoding;
  if (enc == DataEncoding::kNone) enc = dataEncodingFor(e.datacontenttype.value_or(""), e.data);
  if (enc == DataEncoding::kJson && !isJson(e.data.view()))
    return invalid("the data is to be written as JSON but is not JSON: " + jsonError(e.data.view()));
  return enc;
}

// The attributes the `ce_` headers and `content-type` of `headers` give (none required).
Status readHeaders(const Headers& headers, Event& e, std::optional<std::string>& specversion) {
  for (const Header& h : headers) {
    if (h.value.isNull()) continue;
    if (h.key == kContentTypeHeader) {
      e.datacontenttype = h.value.str();
      continue;
    }
    if (h.key.size() <= kHeaderPrefix.size() || h.key.compare(0, kHeaderPrefix.size(), kHeaderPrefix) != 0) continue;
    const std::string name = h.key.substr(kHeaderPrefix.size());
    if (!validAttributeName(name))
      return invalid("header " + excerptOf(h.key) + " does not name a valid attribute (ce_ and 1 to 20 lowercase letters a-z and digits)");
    std::string v = h.value.str();
    if (name == "specversion") specversion = std::move(v);
    else if (name == "id") e.id = std::move(v);
    else if (name == "source") e.source = std::move(v);
    else if (name == "type") e.type = std::move(v);
    else if (name == "subject") e.subject = std::move(v);
    else if (name == "time") e.time = std::move(v);
    else if (name == "datacontenttype") e.datacontenttype = std::move(v);
    else if (name == "dataschema") e.dataschema = std::move(v);
    else e.extensions[name] = Extension{std::move(v), Extension::Kind::kString};
  }
  return Status::ok();
}

bool isCeHeader(std::string_view key) { return key.size() > 3 && key.substr(0, 3) == kHeaderPrefix; }

// `headers` without `ce_*` and `content-type`, in their order.
Headers withoutEventHeaders(const Headers& headers) {
  Headers out;
  out.reserve(headers.size());
  for (const Header& h : headers)
    if (!isCeHeader(h.key) && h.key != kContentTypeHeader) out.add(h.key, h.value);
  return out;
}

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

bool isJsonContentType(std::string_view contentType) {
  const std::string t = mediaType(contentType);
  if (t.empty() || t == "application/json" || t == "text/json") return true;
  return t.size() > 5 && t.compare(t.size() - 5, 5, "+json") == 0;
}

bool isStructuredContentType(std::string_view contentType, bool orBatch) {
  const std::string t = mediaType(contentType);
  return t == kStructuredContentType || (orBatch && t == kBatchContentType);
}

bool isBatchContentType(std::string_view contentType) { return mediaType(contentType) == kBatchContentType; }

bool validAttributeName(std::string_view name) {
  if (name.empty() || name.size() > 20) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

DataEncoding dataEncodingFor(std::string_view contentType, const Bytes& data) {
  if (data.isNull()) return DataEncoding::kNone;
  if (isJsonContentType(contentType) && isJson(data.view())) return DataEncoding::kJson;
  if (!contentType.empty() && !isJsonContentType(contentType) && validUtf8(data.view())) {
    const std::string t = mediaType(contentType);
    if (t.rfind("text/", 0) == 0 || t == "application/xml" || (t.size() > 4 && t.compare(t.size() - 4, 4, "+xml") == 0))
      return DataEncoding::kString;
  }
  return DataEncoding::kBase64;
}

Status validate(const Event& e) {
  if (e.specversion != kSpecVersion)
    return invalid("attribute 'specversion' is " + excerptOf(e.specversion) + "; only CloudEvents 1.0 is supported");
  if (e.id.empty()) return invalid("required attribute 'id' is missing or empty");
  if (e.source.empty()) return invalid("required attribute 'source' is missing or empty");
  if (e.type.empty()) return invalid("required attribute 'type' is missing or empty");
  FERRY_RETURN_IF_ERROR(nonEmpty(e.subject, "subject"));
  FERRY_RETURN_IF_ERROR(nonEmpty(e.time, "time"));
  FERRY_RETURN_IF_ERROR(nonEmpty(e.datacontenttype, "datacontenttype"));
  FERRY_RETURN_IF_ERROR(nonEmpty(e.dataschema, "dataschema"));
  if (e.time && !validTime(*e.time))
    return invalid("attribute 'time' is " + excerptOf(*e.time) +
                   ", not an RFC 3339 timestamp (e.g. 2024-03-05T10:20:30Z or 2024-03-05T10:20:30.5+01:00)");
  for (const auto& [name, x] : e.extensions) {
    if (!validAttributeName(name) || isCore(name) || name == "data")
      return invalid("extension attribute " + excerptOf(name) +
                     " is not a valid extension name (1 to 20 lowercase letters a-z and digits, not a core "
                     "attribute or 'data')");
    if (x.kind == Extension::Kind::kInteger) {
      auto j = parseJson(x.value);
      if (!j || !j->is_number_integer()) return invalid("extension attribute '" + name + "' is not an integer");
    } else if (x.kind == Extension::Kind::kBoolean && x.value != "true" && x.value != "false") {
      return invalid("extension attribute '" + name + "' is not a boolean");
    }
  }
  return Status::ok();
}

Result<Event> parseStructured(std::string_view body, const ParseOptions& options) {
  auto doc = core::parseJsonBounded<Json>(body, options.limits);
  if (!doc.isOk()) return doc.status().withContext("a structured CloudEvent");
  auto e = fromJson(*doc);
  if (!e.isOk()) return e.status().withContext("a structured CloudEvent");
  return e;
}

Result<std::vector<Event>> parseBatch(std::string_view body, const ParseOptions& options) {
  auto doc = core::parseJsonBounded<Json>(body, options.limits);
  if (!doc.isOk()) return doc.status().withContext("a CloudEvents batch");
  if (!doc->is_array())
    return invalid(std::string("a CloudEvents batch must be a JSON array of events, not a JSON ") + doc->type_name());
  if (doc->size() > options.maxBatchEvents)
    return invalid("a CloudEvents batch holds " + std::to_string(doc->size()) + " events, more than the " +
                   std::to_string(options.maxBatchEvents) + " allowed");
  std::vector<Event> out;
  out.reserve(doc->size());
  for (std::size_t i = 0; i < doc->size(); ++i) {
    auto e = fromJson((*doc)[i]);
    if (!e.isOk()) return e.status().withContext("a CloudEvents batch: event " + std::to_string(i));
    out.push_back(std::move(*e));
  }
  return out;
}

Result<std::string> renderStructured(const Event& e) {
  FERRY_RETURN_IF_ERROR(validate(e));
  FERRY_ASSIGN_OR_RETURN(DataEncoding enc, encodingOf(e));
  std::string out;
  out.reserve(128 + e.data.size() + (enc == DataEncoding::kBase64 ? e.data.size() / 3 + 4 : 0));
  appendEvent(out, e, enc);
  return out;
}

Result<std::string> renderBatch(const std::vector<Event>& events) {
  std::string out = "[";
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    Status st = validate(e);
    auto enc = st.isOk() ? encodingOf(e) : Result<DataEncoding>(st);
    if (!enc.isOk()) return enc.status().withContext("event " + std::to_string(i));
    if (i > 0) out += ',';
    appendEvent(out, e, *enc);
  }
  out += ']';
  return out;
}

Status toHeaders(const Event& e, Headers& headers) {
  FERRY_RETURN_IF_ERROR(validate(e));
  Headers out = withoutEventHeaders(headers);
  auto add = [&](std::string_view name, std::string_view v) { out.add(std::string(kHeaderPrefix) + std::string(name), v); };
  add("specversion", e.specversion);
  add("id", e.id);
  add("source", e.source);
  add("type", e.type);
  if (e.subject) add("subject", *e.subject);
  if (e.time) add("time", *e.time);
  if (e.dataschema) add("dataschema", *e.dataschema);
  for (const auto& [name, x] : e.extensions) add(name, x.value);
  if (e.datacontenttype) out.add(std::string(kContentTypeHeader), std::string_view(*e.datacontenttype));
  headers = std::move(out);
  return Status::ok();
}

Result<Event> fromHeaders(const Headers& headers, const Bytes& data) {
  Event e;
  std::optional<std::string> specversion;
  FERRY_RETURN_IF_ERROR(readHeaders(headers, e, specversion).withContext("a binary-mode CloudEvent"));
  if (!specversion) return invalid("a binary-mode CloudEvent: required header 'ce_specversion' is missing");
  e.specversion = *specversion;
  if (Status st = validate(e); !st.isOk()) return st.withContext("a binary-mode CloudEvent (ce_ headers)");
  e.data = data;
  e.dataEncoding = dataEncodingFor(e.datacontenttype.value_or(""), data);
  return e;
}

std::string derivedId(const std::vector<std::string_view>& parts) {
  // Two FNV-1a streams with different offset bases make 128 bits.
  std::uint64_t a = 0xcbf29ce484222325ULL, b = 0x6c62272e07bb0142ULL;
  for (std::string_view p : parts) {
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((p.size() >> (8 * i)) & 0xff);
    a = fnv1a(fnv1a(a, std::string_view(len, 8)), p);
    b = fnv1a(fnv1a(b, std::string_view(len, 8)), p);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(i)] = kHex[(a >> (60 - 4 * i)) & 0xf];
    out[static_cast<std::size_t>(16 + i)] = kHex[(b >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

std::string rfc3339(std::int64_t epochMs) {
  static const std::vector<TimestampRouter::Token> kTokens =
      TimestampRouter::compile("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").valueOr({});
  return TimestampRouter::format(kTokens, epochMs);
}

}  // namespace cloudevents

namespace ce = cloudevents;

namespace {

std::string withTopic(std::string text, const std::string& topic) {
  static constexpr std::string_view kTopic = "${topic}";
  for (std::size_t at = text.find(kTopic); at != std::string::npos; at = text.find(kTopic, at + topic.size()))
    text.replace(at, kTopic.size(), topic);
  return text;
}

// In the Kafka binding `content-type` says which mode a message is in, so an event whose data
// claims to be an event format cannot travel in binary mode (a reader would take it for a
// structured message).
Status notAnEventFormat(const ce::Event& e) {
  if (e.datacontenttype && ce::isStructuredContentType(*e.datacontenttype, /*orBatch=*/true))
    return Status::invalidArgument("datacontenttype '" + *e.datacontenttype +
                                   "' names a CloudEvents format, which the data of an event cannot have here");
  return Status::ok();
}

// `headers` in structured form: no `ce_*`, `content-type` the event format's.
Headers structuredHeaders(const Headers& headers) {
  Headers out;
  out.reserve(headers.size() + 1);
  for (const Header& h : headers)
    if (!(h.key.size() > 3 && h.key.compare(0, 3, ce::kHeaderPrefix) == 0) && h.key != ce::kContentTypeHeader)
      out.add(h.key, h.value);
  out.add(std::string(ce::kContentTypeHeader), ce::kStructuredHeaderValue);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CloudEventsConverter

const ConfigDef& CloudEventsConverter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("cloudevents.mode", ConfigType::kString, "structured", Importance::kHigh,
             "structured: the value on the backbone is the event's JSON (application/cloudevents+json); "
             "binary: the value is the data and the attributes are ce_* headers (Kafka protocol binding).",
             validators::oneOf({"structured", "binary"}));
    d.define("cloudevents.source", ConfigType::kString, "/ferry/${topic}", Importance::kMedium,
             "The source of a record without a ce_source header; ${topic} is the record's topic.",
             validators::nonEmptyString());
    d.define("cloudevents.type", ConfigType::kString, "io.ferry.record", Importance::kMedium,
             "The type of a record without a ce_type header; ${topic} is the record's topic.",
             validators::nonEmptyString());
    d.define("cloudevents.datacontenttype", ConfigType::kString, "", Importance::kLow,
             "The datacontenttype of a record without a content-type or ce_datacontenttype header; "
             "empty: none (JSON data is then written as JSON, other data as data_base64).");
    return d;
  }();
  return def;
}

Status CloudEventsConverter::configure(const StringMap& config, bool isKey) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "CloudEventsConverter"));
  role_ = isKey ? "key" : "value";
  if (auto it = config.find("converter.type"); it != config.end()) {
    if (it->second == "header")
      return Status::invalidArgument("CloudEventsConverter converts record values (or keys), not header values");
    if (it->second != "key" && it->second != "value")
      return Status::invalidArgument("CloudEventsConverter: converter.type must be key or value, not '" + it->second + "'");
    role_ = it->second;
  }
  binary_ = p.getString("cloudevents.mode") == "binary";
  source_ = p.getString("cloudevents.source");
  type_ = p.getString("cloudevents.type");
  contentType_ = p.getString("cloudevents.datacontenttype");
  if (!contentType_.empty() && ce::isStructuredContentType(contentType_, true))
    return Status::invalidArgument("CloudEventsConverter: cloudevents.datacontenttype names an event format ('" +
                                   contentType_ + "'), not the data's type");
  return Status::ok();
}

Status CloudEventsConverter::bad(const std::string& topic, const char* direction, const Status& why) const {
  return Status::invalidArgument("CloudEventsConverter: the " + role_ + " " + direction + " topic '" + topic +
                                 "': " + why.message());
}

Result<Bytes> CloudEventsConverter::fromRecord(const std::string& topic, const Bytes& data) {
  Headers none;
  return fromRecordWithHeaders(topic, none, nullptr, data);
}

Result<Bytes> CloudEventsConverter::toRecord(const std::string& topic, const Bytes& data) {
  Headers none;
  FERRY_ASSIGN_OR_RETURN(auto r, toRecordWithHeaders(topic, none, data));
  return std::move(r.data);
}

Result<Bytes> CloudEventsConverter::fromRecordWithHeaders(const std::string& topic, Headers& headers,
                                                          const SchemaPtr& schema, const Bytes& data) {
  (void)schema;  // the data's JSON form is the event's data; the schema is not carried
  if (data.isNull()) return data;
  const Header* ct = headers.last(ce::kContentTypeHeader);
  if (ct != nullptr && !ct->value.isNull() && ce::isStructuredContentType(ct->value.view(), true)) {
    // Already an event in structured form (a webhook body kept as it came).
    if (ce::isBatchContentType(ct->value.view()))
      return bad(topic, "for", Status::invalidArgument("a CloudEvents batch is not one record; split it first"));
    auto e = ce::parseStructured(data.view());
    if (!e.isOk()) return bad(topic, "for", e.status());
    if (!binary_) return data;
    Headers out = headers;
    if (Status st = notAnEventFormat(*e); !st.isOk()) return bad(topic, "for", st);
    if (Status st = ce::toHeaders(*e, out); !st.isOk()) return bad(topic, "for", st);
    headers = std::move(out);
    return e->data.isNull() ? Bytes(std::string()) : e->data;
  }
  ce::Event e;
  std::optional<std::string> specversion;
  if (Status st = ce::readHeaders(headers, e, specversion); !st.isOk()) return bad(topic, "for", st);
  if (specversion) e.specversion = *specversion;
  if (e.source.empty()) e.source = withTopic(source_, topic);
  if (e.type.empty()) e.type = withTopic(type_, topic);
  if (!e.datacontenttype && !contentType_.empty()) e.datacontenttype = contentType_;
  if (e.id.empty()) e.id = ce::derivedId({topic, e.source, e.type, e.subject.value_or(""), data.view()});
  if (Status st = notAnEventFormat(e); !st.isOk()) return bad(topic, "for", st);
  e.data = data;
  e.dataEncoding = ce::dataEncodingFor(e.datacontenttype.value_or(""), data);
  if (binary_) {
    if (Status st = ce::toHeaders(e, headers); !st.isOk()) return bad(topic, "for", st);
    return data;
  }
  auto json = ce::renderStructured(e);
  if (!json.isOk()) return bad(topic, "for", json.status());
  headers = structuredHeaders(headers);
  return Bytes(std::move(*json));
}

Result<SchemaAndBytes> CloudEventsConverter::toRecordWithHeaders(const std::string& topic, Headers& headers,
                                                                 const Bytes& data) {
  if (data.isNull()) return SchemaAndBytes{nullptr, data};
  const Header* ct = headers.last(ce::kContentTypeHeader);
  const bool ctStructured = ct != nullptr && !ct->value.isNull() && ce::isStructuredContentType(ct->value.view(), true);
  if (ctStructured && ce::isBatchContentType(ct->value.view()))
    return bad(topic, "from", Status::invalidArgument("a CloudEvents batch is not one record"));
  const Header* spec = headers.last("ce_specversion");
  const bool structured = ctStructured || (!binary_ && (spec == nullptr || spec->value.isNull()));
  if (structured) {
    auto e = ce::parseStructured(data.view());
    if (!e.isOk()) return bad(topic, "from", e.status());
    Headers out = headers;
    if (Status st = ce::toHeaders(*e, out); !st.isOk()) return bad(topic, "from", st);
    headers = std::move(out);
    return SchemaAndBytes{nullptr, std::move(e->data)};
  }
  auto e = ce::fromHeaders(headers, data);
  if (!e.isOk()) return bad(topic, "from", e.status());
  return SchemaAndBytes{nullptr, data};
}

// ---------------------------------------------------------------------------------------------
// CloudEvent

namespace {

Validator templateValidator() {
  return [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    const auto* s = std::get_if<std::string>(&v);
    if (!s) return name + ": must be a string";
    auto t = core::RecordTemplate::parse(*s);
    if (!t.isOk()) return "Invalid value " + *s + " for configuration " + name + ": " + t.status().message();
    return std::nullopt;
  };
}

// `text` when it is an epoch-millisecond count: digits alone, with an optional '-'.
std::optional<std::int64_t> epochMillis(std::string_view text) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

const ConfigDef& CloudEvent::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("mode", ConfigType::kString, "structured", Importance::kHigh,
             "structured: the value becomes the event's JSON (content-type application/cloudevents+json); "
             "binary: the value stays the data and the attributes become ce_* headers.",
             validators::oneOf({"structured", "binary"}));
    d.define("id", ConfigType::kString, "", Importance::kMedium,
             "Template of the event id (${topic}, ${key}, ${value:<path>}, ${header:<name>}, ${queue}, "
             "${offset}, ${timestamp}); empty: a hash of the record's topic, queue, offset, key, value and "
             "timestamp (the same record gives the same id).",
             templateValidator());
    d.define("source", ConfigType::kString, "/ferry/${topic}", Importance::kHigh, "Template of the event source.",
             templateValidator());
    d.define("type", ConfigType::kString, "io.ferry.record", Importance::kHigh, "Template of the event type.",
             templateValidator());
    d.define("subject", ConfigType::kString, "", Importance::kLow, "Template of the subject; empty: none.",
             templateValidator());
    d.define("time", ConfigType::kString, "${timestamp}", Importance::kLow,
             "Template of the time: RFC 3339, or digits alone as epoch milliseconds (written as RFC 3339; "
             "0 = none); empty: none.",
             templateValidator());
    d.define("datacontenttype", ConfigType::kString, "", Importance::kLow,
             "The data's media type (e.g. application/json, text/plain); empty: none.");
    d.define("dataschema", ConfigType::kString, "", Importance::kLow, "The dataschema URI; empty: none.");
    d.define("extensions", ConfigType::kList, "", Importance::kLow,
             "Extension attributes as name:template pairs, e.g. tenant:${header:tenant},partitionkey:${key}.");
    return d;
  }();
  return def;
}

Status CloudEvent::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "CloudEvent"));
  binary_ = p.getString("mode") == "binary";
  auto one = [&](const char* key, std::optional<core::RecordTemplate>& out) -> Status {
    const std::string text = p.getString(key);
    out.reset();
    if (text.empty()) return Status::ok();
    auto t = core::RecordTemplate::parse(text);
    if (!t.isOk()) return t.status().withContext(std::string("CloudEvent: ") + key);
    out = std::move(*t);
    return Status::ok();
  };
  FERRY_RETURN_IF_ERROR(one("id", id_));
  FERRY_RETURN_IF_ERROR(one("source", source_));
  FERRY_RETURN_IF_ERROR(one("type", type_));
  FERRY_RETURN_IF_ERROR(one("subject", subject_));
  FERRY_RETURN_IF_ERROR(one("time", time_));
  if (!source_ || !type_)
    return Status::invalidArgument("CloudEvent: source and type must not be empty (every event has both)");
  contentType_ = p.getString("datacontenttype");
  if (ce::isStructuredContentType(contentType_, /*orBatch=*/true))
    return Status::invalidArgument("CloudEvent: datacontenttype names an event format ('" + contentType_ +
                                   "'), not the data's type");
  dataschema_ = p.getString("dataschema");
  extensions_.clear();
  for (const auto& item : p.getList("extensions")) {
    const auto colon = item.find(':');
    const std::string name = item.substr(0, colon);
    if (colon == std::string::npos || !ce::validAttributeName(name) || ce::isCore(name) || name == "data")
      return Status::invalidArgument("CloudEvent: extensions: '" + item +
                                     "' is not name:template with a valid extension name (1 to 20 lowercase "
                                     "letters a-z and digits, not a core attribute)");
    auto t = core::RecordTemplate::parse(item.substr(colon + 1));
    if (!t.isOk()) return t.status().withContext("CloudEvent: extensions: " + name);
    extensions_.emplace_back(name, std::move(*t));
  }
  return Status::ok();
}

Result<bool> CloudEvent::apply(Record& record) {
  if (record.value.isNull()) return true;
  const std::string where = "CloudEvent: a record in topic '" + record.topic + "'";
  // A required attribute's template must render; an optional one that does not is left out.
  auto optional = [&](const std::optional<core::RecordTemplate>& t) -> std::optional<std::string> {
    if (!t) return std::nullopt;
    auto v = t->render(record);
    if (!v.isOk() || v->empty()) return std::nullopt;
    return std::move(*v);
  };
  auto required = [&](const core::RecordTemplate& t, const char* name, std::string& out) -> Status {
    auto v = t.render(record);
    if (!v.isOk()) return v.status().withContext(where + ": " + name);
    if (v->empty())
      return Status::invalidArgument(where + ": " + name + ": template '" + t.text() + "' gives an empty text");
    out = std::move(*v);
    return Status::ok();
  };
  ce::Event e;
  if (!id_) {
    const std::string queue = record.queue ? std::to_string(*record.queue) : "";
    const std::string offset = std::to_string(record.offset);
    const std::string ts = std::to_string(record.timestampMs);
    e.id = ce::derivedId({record.topic, queue, offset, record.key.isNull() ? std::string_view("\0", 1) : record.key.view(),
                          record.value.view(), ts});
  } else {
    FERRY_RETURN_IF_ERROR(required(*id_, "id", e.id));
  }
  FERRY_RETURN_IF_ERROR(required(*source_, "source", e.source));
  FERRY_RETURN_IF_ERROR(required(*type_, "type", e.type));
  e.subject = optional(subject_);
  e.time = optional(time_);
  if (e.time) {
    if (auto ms = epochMillis(*e.time)) {
      if (*ms == 0) e.time.reset();
      else e.time = ce::rfc3339(*ms);
    }
  }
  if (!contentType_.empty()) e.datacontenttype = contentType_;
  if (!dataschema_.empty()) e.dataschema = dataschema_;
  for (const auto& [name, t] : extensions_) {
    auto v = t.render(record);
    if (v.isOk() && !v->empty()) e.extensions[name] = ce::Extension{std::move(*v), ce::Extension::Kind::kString};
  }
  e.data = record.value;
  e.dataEncoding = ce::dataEncodingFor(contentType_, record.value);
  if (binary_) {
    if (Status st = ce::toHeaders(e, record.headers); !st.isOk()) return st.withContext(where);
    return true;
  }
  auto json = ce::renderStructured(e);
  if (!json.isOk()) return json.status().withContext(where);
  record.value = Bytes(std::move(*json));
  record.valueSchema = nullptr;
  record.headers = structuredHeaders(record.headers);
  return true;
}

}  // namespace ferry::transforms
