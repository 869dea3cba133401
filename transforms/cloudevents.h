// CloudEvents 1.0: the event codec (JSON event format, Kafka protocol binding), the
// CloudEventsConverter and the CloudEvent transform.
//
// Codec (namespace cloudevents): an Event is the context attributes and the data of one event.
//   - structured mode: one event as a JSON object (`application/cloudevents+json`), or a JSON
//     array of them (`application/cloudevents-batch+json`), as an HTTP webhook body or a record
//     value carries them. parseStructured/parseBatch take raw bytes (no record needed);
//     renderStructured/renderBatch write them compactly.
//   - binary mode (Kafka protocol binding): the data is the message value; every attribute is a
//     header `ce_<name>` (its value as text), except datacontenttype, which is `content-type`.
//     toHeaders/fromHeaders map an Event to and from record headers.
// Parsing validates: specversion "1.0"; id, source, type present and non-empty strings; the
// optional attributes (subject, time, datacontenttype, dataschema) non-empty strings when present,
// time an RFC 3339 timestamp; attribute names lowercase letters and digits; extension values
// strings, integers or booleans; at most one of data and data_base64. A null attribute is absent
// (as the JSON format says). Errors are InvalidArgument naming the attribute (and, in a batch, the
// event's index); they never quote the body beyond a short escaped excerpt.
// Bounds: the JSON limits of record values (core::kRecordJsonLimits: 128 levels, 64 MiB) unless
// the caller passes others, and at most `maxBatchEvents` events in a batch.
//
// Data: `data` holds the event's data as bytes and `dataEncoding` how a structured event carries
// it. A JSON datacontenttype (absent, application/json, text/json, anything ending in +json) with
// a `data` member: the data is that JSON value's compact text. Another datacontenttype with a
// string `data`: the string's text. `data_base64`: the decoded bytes. renderStructured chooses by
// dataEncoding, and dataEncodingFor() picks one for bytes from elsewhere (JSON data as JSON, text
// of a text/* type as a string, anything else base64, so any bytes round-trip exactly).
//
// Thread-safety: the codec is free functions; the converter and the transform are one instance
// per task, called from that task's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_bounds.h"
#include "core/record_template.h"
#include "ferry/transform.h"

namespace ferry::transforms {
namespace cloudevents {

inline constexpr std::string_view kSpecVersion = "1.0";
inline constexpr std::string_view kStructuredContentType = "application/cloudevents+json";
inline constexpr std::string_view kBatchContentType = "application/cloudevents-batch+json";
// Kafka protocol binding, binary mode.
inline constexpr std::string_view kHeaderPrefix = "ce_";
inline constexpr std::string_view kContentTypeHeader = "content-type";

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
  core::JsonLimits limits = core::kRecordJsonLimits;
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
Result<std::string> renderBatch(const std::vector<Event>& events);

// Binary mode: sets `ce_<attr>` headers (and `content-type` from datacontenttype) for `e`,
// replacing headers of those names, and removes other `ce_` headers (the event's attributes are
// exactly its headers). Fails, leaving `headers` unchanged, when `e` is invalid.
Status toHeaders(const Event& e, Headers& headers);
// Binary mode: the event the `ce_` headers and `content-type` of `headers` describe, with `data`
// as its data (dataEncoding as dataEncodingFor says). The last header of a name counts.
Result<Event> fromHeaders(const Headers& headers, const Bytes& data);

// A deterministic event id: 32 hex digits of a 128-bit FNV-1a hash over `parts` (each part
// length-prefixed, so ("ab","c") and ("a","bc") differ). The same parts give the same id in every
// process and version.
std::string derivedId(const std::vector<std::string_view>& parts);
// RFC 3339 UTC with milliseconds ("2024-03-05T10:20:30.123Z") of epoch milliseconds.
std::string rfc3339(std::int64_t epochMs);

}  // namespace cloudevents

// Converts record values to CloudEvents on the backbone and back (value converter; the runtime
// passes it the record's headers). Keys:
//   cloudevents.mode             structured (default) | binary: what it writes;
//   cloudevents.source, .type    the attributes of a record without `ce_source` / `ce_type`
//                                headers (`${topic}` in them is the record's topic);
//   cloudevents.datacontenttype  the datacontenttype of a record without a `content-type` or
//                                `ce_datacontenttype` header (empty: none).
// fromRecordWithHeaders (record -> backbone): the event's attributes are the record's `ce_*`
//   headers (`content-type` = datacontenttype), else the defaults above; an absent id is
//   derivedId(topic, source, type, subject, data) - the same record gives the same id, so a
//   record written twice is one event to a deduplicating reader. structured: the value becomes
//   the event's JSON, the `ce_*` headers are removed and `content-type` is
//   application/cloudevents+json; binary: the value is unchanged, the `ce_*` headers are set.
// toRecordWithHeaders (backbone -> record): a message whose content-type is
//   application/cloudevents+json, or any message without a `ce_specversion` header when the mode
//   is structured, is parsed as a structured event: the value becomes its data (null when it has
//   none), its attributes `ce_*` headers, its datacontenttype `content-type`. Otherwise (binary)
//   the `ce_*` headers must describe a valid event; value and headers are kept.
// A null value (a tombstone) passes unchanged both ways. Without headers (fromRecord / toRecord,
// e.g. as a key converter) it works on an empty header list. Every error is InvalidArgument
// naming the converter, the topic and the attribute.
class CloudEventsConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> fromRecordWithHeaders(const std::string& topic, Headers& headers, const SchemaPtr& schema,
                                      const Bytes& data) override;
  Result<SchemaAndBytes> toRecordWithHeaders(const std::string& topic, Headers& headers,
                                             const Bytes& data) override;

 private:
  Status bad(const std::string& topic, const char* direction, const Status& why) const;
  bool binary_ = false;
  std::string source_, type_, contentType_;
  std::string role_ = "value";
};

// CloudEvent: wraps a record as a CloudEvent. Keys (templates are core::RecordTemplate:
// ${topic}, ${key}, ${value}, ${value:<path>}, ${queue}, ${offset}, ${timestamp} (epoch ms),
// ${header:<name>}, $${ for a literal "${"):
//   mode             structured (default: the value becomes the event's JSON, `content-type`
//                    application/cloudevents+json, `ce_*` headers removed, the value schema
//                    dropped) | binary (the value is the data, unchanged; `ce_*` and
//                    `content-type` headers are set);
//   id               template; empty (default): derivedId(topic, queue, offset, key, value,
//                    timestamp), the same for the same record;
//   source, type     templates (defaults `/ferry/${topic}`, `io.ferry.record`);
//   subject          template (default empty: none);
//   time             template (default `${timestamp}`); a result of digits alone is epoch
//                    milliseconds and written as RFC 3339 (0, an unknown timestamp: no time);
//   datacontenttype, dataschema  text (default empty: none);
//   extensions       list of name:template (`tenant:${header:tenant}`).
// A template whose part is missing (no such header, a null key, a path that selects nothing or
// null, a value that is not JSON for ${value:...}) fails the record for id, source and type
// (InvalidArgument naming the template; errors.tolerance decides) and leaves any other attribute
// out. A null value (a tombstone) passes unchanged.
class CloudEvent final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  bool binary_ = false;
  std::optional<core::RecordTemplate> id_;  // nullopt: derived
  std::optional<core::RecordTemplate> source_, type_, subject_, time_;
  std::string contentType_, dataschema_;
  std::vector<std::pair<std::string, core::RecordTemplate>> extensions_;
};

}  // namespace ferry::transforms
