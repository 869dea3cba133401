// CloudEvents 1.0 codec: the JSON event format (structured and batch), the Kafka protocol
// binding's binary mode (record headers), and the pieces of the HTTP binding's binary mode that are
// not HTTP (header value encoding). Here, below the connectors and the transforms, because both
// use it: HttpSource validates webhook bodies with it and HttpSink writes events with it
// (connectors may not include transforms/), and transforms/cloudevents.h builds
// CloudEventsConverter and the CloudEvent transform on it.
//
// An Event is the context attributes and the data of one event.
//   - structured mode: one event as a JSON object (`application/cloudevents+json`), or a JSON
//     array of them (`application/cloudevents-batch+json`), as an HTTP body or a record value
//     carries them. parseStructured/parseBatch take raw bytes (no record needed);
//     renderStructured/renderBatch write them compactly.
//   - binary mode (Kafka protocol binding): the data is the message value; every attribute is a
//     header `ce_<name>` (its value as text), except datacontenttype, which is `content-type`.
//     toHeaders/fromHeaders map an Event to and from record headers.
// Parsing validates: specversion "1.0"; id, source, type present and non-empty strings; the
// optional attributes (subject, time, datacontenttype, dataschema) non-empty strings when present,
// time an RFC 3339 timestamp; attribute names lowercase letters and digits; extension values
// strings, integers or booleans; at most one of data and data_base64. A null attribute is absent
// (as the JSON format says). Errors are InvalidArgument naming the attribute (and, in a batch, the
// event's index: "event 3: required attribute 'id' is missing or empty"); they never quote the
// body beyond a short escaped excerpt.
// Bounds: the JSON limits of record values (kRecordJsonLimits: 128 levels, 64 MiB) unless the
// caller passes others, and at most `maxBatchEvents` events in a batch.
//
// Data: `data` holds the event's data as bytes and `dataEncoding` how a structured event carries
// it. A JSON datacontenttype (absent, application/json, text/json, anything ending in +json) with
// a `data` member: the data is that JSON value's compact text. Another datacontenttype with a
// string `data`: the string's text. `data_base64`: the decoded bytes. renderStructured chooses by
// dataEncoding, and dataEncodingFor() picks one for bytes from elsewhere (JSON data as JSON, text
// of a text/* type as a string, anything else base64, so any bytes round-trip exactly).
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_bounds.h"
#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::core::cloudevents {

inline constexpr std::string_view kSpecVersion = "1.0";
inline constexpr std::string_view kStructuredContentType = "application/cloudevents+json";
inline constexpr std::string_view kBatchContentType = "application/cloudevents-batch+json";
// What a structured event's message carries in `content-type` (Kafka binding, structured mode).
inline constexpr std::string_view kStructuredHeaderValue = "application/cloudevents+json; charset=UTF-8";
// Kafka protocol binding, binary mode.
inline constexpr std::string_view kHeaderPrefix = "ce_";
inline constexpr std::string_view kContentTypeHeader = "content-type";
// HTTP protocol binding, binary mode: attributes are `ce-<name>` HTTP headers.
inline constexpr std::string_view kHttpHeaderPrefix = "ce-";

// How a structured event carries its data.
enum class DataEncoding : std::uint8_t {
  kNone,    // no data
  kJson,    // `data`: a JSON value (the data is its text)
  kString,  // `data`: a JSON string holding non-JSON text (the data is the string's content)
  kBase64,  // `data_base64`
};

// An extension attribute's value. The JSON format writes Integer and Boolean as JSON numbers and
// booleans, every other type (String, URI, Timestamp, Binary) as a string; headers hold the text.
struct Extension {
  enum class Kind : std::uint8_t { kString, kInteger, kBoolean };
  std::string value;  // the text: "abc", "42", "true"
  Kind kind = Kind::kString;
  friend bool operator==(const Extension&, const Extension&) = default;
};

struct Event {
  std::string specversion{kSpecVersion};
  std::string id;
  std::string source;
  std::string type;
  std::optional<std::string> subject;
  std::optional<std::string> time;  // RFC 3339
  std::optional<std::string> datacontenttype;
  std::optional<std::string> dataschema;
  std::map<std::string, Extension> extensions;  // by attribute name
  Bytes data;                                   // null: no data
  DataEncoding dataEncoding = DataEncoding::kNone;
  friend bool operator==(const Event&, const Event&) = default;
};

struct ParseOptions {
  JsonLimits limits = kRecordJsonLimits;
  std::size_t maxBatchEvents = 100'000;
};

// True when `contentType` (parameters such as `; charset=utf-8` ignored, any case) is a JSON
// media type; an absent (empty) one counts as JSON, as the JSON event format says.
bool isJsonContentType(std::string_view contentType);
// True for application/cloudevents+json (a structured event) and, with `orBatch`,
// application/cloudevents-batch+json.
bool isStructuredContentType(std::string_view contentType, bool orBatch = false);
bool isBatchContentType(std::string_view contentType);
// A valid attribute name: 1..20 lowercase ASCII letters or digits (the spec's SHOULD on length is
// a MUST here, so headers and columns derived from names stay short).
bool validAttributeName(std::string_view name);
// One of the eight attributes the spec defines (specversion ... dataschema); an extension may not
// take such a name (nor "data").
bool isCoreAttribute(std::string_view name);
// The encoding renderStructured uses for `data` under `contentType` (see the file comment).
DataEncoding dataEncodingFor(std::string_view contentType, const Bytes& data);

// Checks the required and optional attributes of `e` (not its data encoding).
Status validate(const Event& e);

// One event from a structured JSON body (a JSON object).
Result<Event> parseStructured(std::string_view body, const ParseOptions& options = {});
// Events from a batch body (a JSON array of event objects; [] is an empty batch).
Result<std::vector<Event>> parseBatch(std::string_view body, const ParseOptions& options = {});
// The structured JSON of `e`: attributes in spec order, extensions by name, then the data. Fails
// when `e` is invalid or its dataEncoding is kJson and its data is not JSON.
Result<std::string> renderStructured(const Event& e);
// A JSON array of the events; a failure names the event's index.
Result<std::string> renderBatch(const std::vector<Event>& events);

// Binary mode: sets `ce_<attr>` headers (and `content-type` from datacontenttype) for `e`,
// replacing headers of those names, and removes other `ce_` headers (the event's attributes are
// exactly its headers). Fails, leaving `headers` unchanged, when `e` is invalid.
Status toHeaders(const Event& e, Headers& headers);
// Binary mode: the event the `ce_` headers and `content-type` of `headers` describe, with `data`
// as its data (dataEncoding as dataEncodingFor says). The last header of a name counts.
Result<Event> fromHeaders(const Headers& headers, const Bytes& data);
// The attributes that the `ce_` headers and `content-type` of `headers` give, into `e`, none
// required and nothing validated but the names (for a writer that fills in defaults before
// validating); `specversion` is set when a `ce_specversion` header is there.
Status readHeaders(const Headers& headers, Event& e, std::optional<std::string>& specversion);
// `headers` without the `ce_*` and `content-type` ones, in their order.
Headers withoutEventHeaders(const Headers& headers);

// HTTP binding, binary mode: a `ce-*` header value as sent (printable ASCII; space, '"', '%' and
// every other byte percent-encoded, as the binding requires) and back (%XX sequences decoded,
// anything else kept as it is).
std::string encodeHttpHeaderValue(std::string_view value);
std::string decodeHttpHeaderValue(std::string_view value);

// A deterministic event id: 32 hex digits of a 128-bit FNV-1a hash over `parts` (each part
// length-prefixed, so ("ab","c") and ("a","bc") differ). The same parts give the same id in every
// process and version.
std::string derivedId(const std::vector<std::string_view>& parts);
// RFC 3339 UTC with milliseconds ("2024-03-05T10:20:30.123Z") of epoch milliseconds.
std::string rfc3339(std::int64_t epochMs);

}  // namespace ferry::core::cloudevents
