// CloudEventsConverter and CloudEvent (see cloudevents.h); the codec is core/cloudevents.cc.
#include "transforms/cloudevents.h"

#include <charconv>
#include <system_error>

#include "transforms/json_util.h"

namespace ferry::transforms {

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
  Headers out = ce::withoutEventHeaders(headers);
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
    // Not `type`: in a connector config `transforms.<name>.type` is the transform's class, and the
    // runtime keeps it from the transform's own keys.
    d.define("event.type", ConfigType::kString, "io.ferry.record", Importance::kHigh, "Template of the event type.",
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
  FERRY_RETURN_IF_ERROR(one("event.type", type_));
  FERRY_RETURN_IF_ERROR(one("subject", subject_));
  FERRY_RETURN_IF_ERROR(one("time", time_));
  if (!source_ || !type_)
    return Status::invalidArgument("CloudEvent: source and event.type must not be empty (every event has both)");
  contentType_ = p.getString("datacontenttype");
  if (ce::isStructuredContentType(contentType_, /*orBatch=*/true))
    return Status::invalidArgument("CloudEvent: datacontenttype names an event format ('" + contentType_ +
                                   "'), not the data's type");
  dataschema_ = p.getString("dataschema");
  extensions_.clear();
  for (const auto& item : p.getList("extensions")) {
    const auto colon = item.find(':');
    const std::string name = item.substr(0, colon);
    if (colon == std::string::npos || !ce::validAttributeName(name) || ce::isCoreAttribute(name) || name == "data")
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
