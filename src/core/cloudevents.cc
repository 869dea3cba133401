// CloudEvents 1.0 codec (see cloudevents.h).
#include "core/cloudevents.h"

#include <simdjson.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

#include "core/base64.h"
#include "core/json_read.h"
#include "core/json_text.h"
#include "core/percent.h"

namespace ferry::core::cloudevents {

using Json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kCore[] = {"specversion", "id",   "source",          "type",
                                      "subject",     "time", "datacontenttype", "dataschema"};

Status invalid(std::string m) { return Status::invalidArgument(std::move(m)); }

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Compact JSON text; invalid UTF-8 in strings is replaced by U+FFFD rather than failing.
std::string compact(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The parser's message for text that is not JSON.
std::string jsonError(std::string_view text) {
  auto j = parseJsonBounded<Json>(text, kRecordJsonLimits);
  return j.isOk() ? std::string() : j.status().message();
}

// A name from outside, for a message: at most 32 characters, escaped.
std::string excerptOf(std::string_view name) {
  return "'" + jsonExcerpt(name.substr(0, std::min<std::size_t>(name.size(), 32)), 0, 32) +
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
    appendJsonString(out, s);
  } else {
    out += compact(Json(std::string(s)));
  }
}

// Two decimal digits at t[at], or -1.
int twoDigits(std::string_view t, std::size_t at) {
  if (at + 2 > t.size() || !isDigit(t[at]) || !isDigit(t[at + 1])) return -1;
  return (t[at] - '0') * 10 + (t[at + 1] - '0');
}

// RFC 3339 date-time (section 5.6): YYYY-MM-DDTHH:MM:SS, an optional fraction, then Z or +hh:mm /
// -hh:mm; 'T' and 'Z' in either case; the day exists in its month; a leap second (60) allowed.
bool validTime(std::string_view t) {
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':' ||
      t[16] != ':')
    return false;
  for (std::size_t i : {0u, 1u, 2u, 3u})
    if (!isDigit(t[i])) return false;
  const int year = (t[0] - '0') * 1000 + (t[1] - '0') * 100 + (t[2] - '0') * 10 + (t[3] - '0');
  const int month = twoDigits(t, 5), day = twoDigits(t, 8);
  const int hour = twoDigits(t, 11), minute = twoDigits(t, 14), second = twoDigits(t, 17);
  if (month < 1 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60)
    return false;
  const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return false;
  std::size_t at = 19;
  if (at < t.size() && t[at] == '.') {
    const std::size_t digits = ++at;
    while (at < t.size() && isDigit(t[at])) ++at;
    if (at == digits) return false;
  }
  const std::string_view zone = t.substr(at);
  if (zone == "Z" || zone == "z") return true;
  if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':') return false;
  const int zh = twoDigits(zone, 1), zm = twoDigits(zone, 4);
  return zh >= 0 && zh <= 23 && zm >= 0 && zm <= 59;
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
    if (isCoreAttribute(name)) {
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
      x.value = compact(v);
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
    auto raw = base64Decode(data64->get_ref<const std::string&>());
    if (!raw) return invalid("'data_base64' is not base64 (RFC 4648, standard alphabet with padding)");
    e.data = Bytes(std::move(*raw));
    e.dataEncoding = DataEncoding::kBase64;
  } else if (hasData) {
    if (!isJsonContentType(e.datacontenttype.value_or("")) && data->is_string()) {
      e.data = Bytes(data->get<std::string>());
      e.dataEncoding = DataEncoding::kString;
    } else {
      e.data = Bytes(compact(*data));
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
      out += base64Encode(e.data.view());
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

bool isCeHeader(std::string_view key) { return key.size() > 3 && key.substr(0, 3) == kHeaderPrefix; }

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

bool isCoreAttribute(std::string_view name) {
  for (auto c : kCore)
    if (c == name) return true;
  return false;
}

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

Headers withoutEventHeaders(const Headers& headers) {
  Headers out;
  out.reserve(headers.size());
  for (const Header& h : headers)
    if (!isCeHeader(h.key) && h.key != kContentTypeHeader) out.add(h.key, h.value);
  return out;
}

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
    if (!validAttributeName(name) || isCoreAttribute(name) || name == "data")
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
  auto doc = parseJsonBounded<Json>(body, options.limits);
  if (!doc.isOk()) return doc.status().withContext("a structured CloudEvent");
  auto e = fromJson(*doc);
  if (!e.isOk()) return e.status().withContext("a structured CloudEvent");
  return e;
}

Result<std::vector<Event>> parseBatch(std::string_view body, const ParseOptions& options) {
  auto doc = parseJsonBounded<Json>(body, options.limits);
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
  using namespace std::chrono;
  const sys_time<milliseconds> t{milliseconds(epochMs)};
  const auto day = floor<days>(t);
  const year_month_day date{day};
  const hh_mm_ss<milliseconds> clock{t - day};
  char out[40];
  std::snprintf(out, sizeof out, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
                static_cast<int>(clock.seconds().count()), static_cast<int>(clock.subseconds().count()));
  return out;
}

std::string encodeHttpHeaderValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || ch == '"' || ch == '%') {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string decodeHttpHeaderValue(std::string_view value) { return percentDecode(value); }

}  // namespace ferry::core::cloudevents
