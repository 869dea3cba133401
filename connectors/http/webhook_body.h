// The webhook body parser of HttpSource and the small JSON path both HTTP connectors use.
//
// A request body becomes events by its Content-Type:
//   application/json, text/json, anything ending in +json  one JSON document: an array is one
//                                                          event per element, anything else one
//                                                          event
//   application/x-ndjson, application/jsonl, ...jsonlines  one JSON document per non-empty line
//   application/cloudevents+json                           one CloudEvent (structured mode)
//   application/cloudevents-batch+json                     a JSON array of CloudEvents, one event
//                                                          per element
//   anything else (or none)                                the whole body is one raw event
// CloudEvents (core/cloudevents.h) are validated, a whole body failing on the first bad event
// ("a CloudEvents batch: event 2: required attribute 'id' is missing or empty"). An event's value
// is its data (none: `hasValue` false) and its attributes are record headers as the Kafka protocol
// binding's binary mode writes them: `ce_<attr>`, and `content-type` for datacontenttype; a key
// path applies to the event's JSON object (`$.subject`, `$.data.orderId`). Without a key path an
// event's `partitionkey` extension is its key, as the Kafka protocol binding maps it (unless
// BodyOptions::keyFromPartitionKey is false); the attribute stays among the headers too. A
// request in the HTTP binding's binary mode (ce-* headers) is parseBinaryCloudEvent's.
// A malformed JSON body fails as a whole (no events): InvalidArgument with a message for the
// sender that names the line (NDJSON) or the place, quoting at most a few escaped characters.
// Events of JSON bodies are JSON texts: a single document keeps its bytes (trimmed), elements of
// an array are written compactly, NDJSON lines keep their bytes (trimmed).
//
// Thread-safety: free functions and immutable values.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::connectors::httpc {

// A path into a JSON document: "$.data.items", "data.items", "items[0].id", "$" (the root).
// Segments are object members; "[n]" or a numeric segment indexes an array.
class JsonPath {
 public:
  // InvalidArgument for an empty segment, an unclosed '[' or a non-numeric index.
  static Result<JsonPath> parse(std::string_view text);
  // The value at the path, or null when a member or index is missing.
  const nlohmann::json* find(const nlohmann::json& doc) const;
  bool root() const noexcept { return segments_.empty(); }

 private:
  struct Segment {
    std::string name;
    std::optional<std::size_t> index;  // set: an array index
  };
  std::vector<Segment> segments_;
};

// A JSON value as record text: strings as they are, numbers and booleans as JSON writes them,
// null as nullopt, objects and arrays written compactly.
std::optional<std::string> jsonText(const nlohmann::json& v);

enum class BodyKind { kJson, kNdjson, kRaw, kCloudEvent, kCloudEventsBatch };
// The body kind a Content-Type value names (parameters such as charset are ignored).
BodyKind bodyKindOf(std::string_view contentType);

struct WebhookEvent {
  std::string value;
  std::optional<std::string> key;  // from BodyOptions::keyPath when the event has it
  bool hasValue = true;            // false: a CloudEvent without data (a null record value)
  Headers headers;                 // a CloudEvent's attributes (ce_*, content-type); else none
};

struct BodyOptions {
  const JsonPath* keyPath = nullptr;  // not owned; null: no key from the body (but see below)
  // A CloudEvent's `partitionkey` extension is its key when keyPath is null (Kafka protocol
  // binding). HttpSource turns this off when http.key.header names the key.
  bool keyFromPartitionKey = true;
  std::size_t maxEvents = 1000000;    // more events: InvalidArgument
  int maxDepth = 64;                  // deeper JSON: InvalidArgument
};

// The events of one request body (see above).
Result<std::vector<WebhookEvent>> parseWebhookBody(std::string_view contentType, std::string_view body,
                                                   const BodyOptions& options);

// True when a request with these (lower-case) header names is a CloudEvent in the HTTP binding's
// binary mode: it has a `ce-*` header and its Content-Type is not a CloudEvents format (those are
// structured, and their ce-* headers are ignored).
bool isBinaryCloudEvent(const std::map<std::string, std::string>& headers, std::string_view contentType);
// The CloudEvent of a binary-mode request: attributes from the `ce-<attr>` headers (values
// percent-decoded), datacontenttype from Content-Type, data the body as it is (an empty body: no
// data). Checked as the codec checks events: InvalidArgument naming the attribute
// ("required attribute 'id' is missing or empty") when specversion, id, source or type is missing
// or an attribute is invalid. The key path applies to a JSON body; without one, the
// `ce-partitionkey` header is the key (as for parseWebhookBody's CloudEvents).
Result<WebhookEvent> parseBinaryCloudEvent(const std::map<std::string, std::string>& headers,
                                           std::string_view contentType, std::string_view body,
                                           const BodyOptions& options);

}  // namespace ferry::connectors::httpc
