// CloudEvents (the codec, core/cloudevents.h, and transforms/cloudevents.h) on arbitrary bytes: the structured and batch parsers, the
// binary-mode header mapping and CloudEventsConverter in both modes. Each returns a value or an
// error, never a crash, a throw or a recursion without bound. Invariants:
//   - what parses renders, and what renders parses again to the same attributes;
//   - a batch renders and parses again to as many events;
//   - headers that make an event give headers that make the same event;
//   - what the converter writes it reads back; binary data and non-JSON data come back exact.
// Input: the whole input is a structured or batch body; for headers and the converter it is split
// at the first 0x01 byte into header lines ("key\0value\n") and the data.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "transforms/cloudevents.h"
#include "transforms/json_util.h"

namespace {

using namespace ferry;
using namespace ferry::transforms;
namespace ce = ferry::core::cloudevents;

bool sameAttributes(const ce::Event& a, const ce::Event& b) {
  return a.specversion == b.specversion && a.id == b.id && a.source == b.source && a.type == b.type &&
         a.subject == b.subject && a.time == b.time && a.datacontenttype == b.datacontenttype &&
         a.dataschema == b.dataschema && a.extensions == b.extensions;
}

std::unique_ptr<CloudEventsConverter> make(bool binary) {
  auto c = std::make_unique<CloudEventsConverter>();
  if (!c->configure({{"cloudevents.mode", binary ? "binary" : "structured"}}, false).isOk()) std::abort();
  return c;
}

Headers headersOf(std::string_view text) {
  Headers h;
  while (!text.empty() && h.size() < 32) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    const std::size_t nul = line.find('\0');
    if (nul != std::string_view::npos) h.add(std::string(line.substr(0, nul)), line.substr(nul + 1));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return h;
}

void converter(CloudEventsConverter& c, bool binary, const Headers& in, const Bytes& data) {
  Headers h = in;
  auto wire = c.fromRecordWithHeaders("t", h, nullptr, data);
  if (!wire.isOk()) {
    if (!(h == in)) std::abort();  // an error leaves the headers alone
    return;
  }
  auto back = c.toRecordWithHeaders("t", h, *wire);
  if (!back.isOk()) std::abort();
  const Header* ct = in.last("content-type");
  const bool wasEvent = ct != nullptr && ce::isStructuredContentType(ct->value.view(), true);
  // JSON data in a structured event comes back as the same document, compactly written.
  if (!wasEvent && (binary || !isJson(data.view())) && !(back->data == data)) std::abort();
  Headers h2 = in;
  (void)c.toRecordWithHeaders("t", h2, data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(bytes), size);

  if (auto e = ce::parseStructured(in); e.isOk()) {
    auto text = ce::renderStructured(*e);
    if (!text.isOk()) std::abort();
    auto again = ce::parseStructured(*text);
    if (!again.isOk() || !sameAttributes(*e, *again)) std::abort();
  }
  if (auto b = ce::parseBatch(in); b.isOk()) {
    auto text = ce::renderBatch(*b);
    if (!text.isOk()) std::abort();
    auto again = ce::parseBatch(*text);
    if (!again.isOk() || again->size() != b->size()) std::abort();
  }

  const std::size_t split = in.find('\x01');
  const Headers headers = headersOf(in.substr(0, split));
  const Bytes data = split == std::string_view::npos ? Bytes() : Bytes::copyOf(in.substr(split + 1));
  if (auto e = ce::fromHeaders(headers, data); e.isOk()) {
    Headers out;
    if (!ce::toHeaders(*e, out).isOk()) std::abort();
    auto again = ce::fromHeaders(out, data);
    if (!again.isOk() || !sameAttributes(*e, *again)) std::abort();
  }

  static auto structured = make(false);
  static auto binary = make(true);
  converter(*structured, false, headers, data);
  converter(*binary, true, headers, data);
  return 0;
}
