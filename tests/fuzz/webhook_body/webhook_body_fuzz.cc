// The webhook body parser on any bytes: an error or events, never a crash, a throw or unbounded
// recursion. The first byte picks the Content-Type (and whether a key path is used), the rest is
// the body. Invariants:
//   - raw bodies give exactly one event holding the body;
//   - every event of a JSON or NDJSON body is itself one valid JSON text, and parsing the body
//     again gives the same events (the parser is deterministic);
//   - no event list is longer than maxEvents.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "connectors/http/webhook_body.h"

namespace {

using namespace ferry::connectors::httpc;

constexpr std::string_view kTypes[] = {
    "application/json", "application/json; charset=utf-8", "application/x-ndjson", "application/jsonl",
    "text/plain",       "application/cloudevents+json",   "",                     "APPLICATION/X-NDJSON",
};

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
