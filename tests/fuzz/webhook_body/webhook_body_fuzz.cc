// The webhook body parser on any bytes: an error or events, never a crash, a throw or unbounded
// recursion. The first byte picks the Content-Type (and whether a key path is used), the rest is
// the body. Invariants:
//   - raw bodies give exactly one event holding the body;
//   - every event of a JSON or NDJSON body is itself one valid JSON text, and parsing the body
//     again gives the same events (the parser is deterministic);
//   - no event list is longer than maxEvents;
//   - every event of a CloudEvents body (structured or batch) carries the required attributes as
//     ce_* headers, and its value is its data;
//   - a binary-mode request (ce-* headers from the body's first line) that is accepted has the
//     required attributes, and its value is the rest of the body.
#include <cstddef>
#include <cstdint>
#include <cctype>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "connectors/http/webhook_body.h"

namespace {

using namespace ferry::connectors::httpc;

constexpr std::string_view kTypes[] = {
    "application/json", "application/json; charset=utf-8", "application/x-ndjson", "application/jsonl",
    "text/plain",       "application/cloudevents+json",   "",                     "APPLICATION/X-NDJSON",
    "application/cloudevents-batch+json",
};

bool isCloudEvents(BodyKind k) { return k == BodyKind::kCloudEvent || k == BodyKind::kCloudEventsBatch; }

bool hasRequiredAttributes(const WebhookEvent& e) {
  for (const char* name : {"ce_specversion", "ce_id", "ce_source", "ce_type"}) {
    const ferry::Header* h = e.headers.last(name);
    if (h == nullptr || h->value.isNull() || h->value.empty()) return false;
  }
  return true;
}

// Binary mode: the first line holds "name=value" pairs separated by '&' (names lowered as the
// server does), the rest is the body.
void binaryMode(std::string_view in, std::string_view contentType) {
  const std::size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return;
  std::map<std::string, std::string> headers;
  std::string_view line = in.substr(0, nl);
  while (!line.empty() && headers.size() < 16) {
    const std::size_t amp = line.find('&');
    const std::string_view pair = line.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (eq != std::string_view::npos) {
      std::string name(pair.substr(0, eq));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      headers[name] = std::string(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    line.remove_prefix(amp + 1);
  }
  if (!isBinaryCloudEvent(headers, contentType)) return;
  const std::string_view body = in.substr(nl + 1);
  auto e = parseBinaryCloudEvent(headers, contentType, body, {});
  if (!e.isOk()) return;
  if (!hasRequiredAttributes(*e) || e->hasValue != !body.empty() || (e->hasValue && e->value != body)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t selector = data[0];
  const std::string_view contentType = kTypes[selector % (sizeof kTypes / sizeof kTypes[0])];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  static const JsonPath keyPath = [] {
    auto p = JsonPath::parse("$.id");
    if (!p.isOk()) std::abort();
    return *p;
  }();
  BodyOptions options;
  options.keyPath = (selector & 0x80) != 0 ? &keyPath : nullptr;
  options.maxEvents = 1000;
  options.maxDepth = 32;
  auto events = parseWebhookBody(contentType, body, options);
  binaryMode(body, contentType);
  // The JSON path parser on the same bytes, for good measure.
  if (auto path = JsonPath::parse(body); path.isOk()) {
    if (events.isOk() && bodyKindOf(contentType) == BodyKind::kJson) {
      auto doc = nlohmann::json::parse(body, nullptr, false);
      if (!doc.is_discarded()) (void)path->find(doc);
    }
  }
  if (!events.isOk()) {
    if (bodyKindOf(contentType) == BodyKind::kRaw) std::abort();  // raw bodies always pass
    return 0;
  }
  if (events->size() > options.maxEvents) std::abort();
  if (isCloudEvents(bodyKindOf(contentType))) {
    for (const auto& e : *events)
      if (!hasRequiredAttributes(e) || (!e.hasValue && !e.value.empty())) std::abort();
    auto again = parseWebhookBody(contentType, body, options);
    if (!again.isOk() || again->size() != events->size()) std::abort();
    for (std::size_t i = 0; i < events->size(); ++i)
      if ((*again)[i].value != (*events)[i].value || !((*again)[i].headers == (*events)[i].headers)) std::abort();
    return 0;
  }
  if (bodyKindOf(contentType) == BodyKind::kRaw) {
    if (events->size() != 1 || (*events)[0].value != body || (*events)[0].key) std::abort();
    return 0;
  }
  for (const auto& e : *events)
    if (!nlohmann::json::accept(e.value)) std::abort();
  auto again = parseWebhookBody(contentType, body, options);
  if (!again.isOk() || again->size() != events->size()) std::abort();
  for (std::size_t i = 0; i < events->size(); ++i)
    if ((*again)[i].value != (*events)[i].value || (*again)[i].key != (*events)[i].key) std::abort();
  return 0;
}
