// Reading JSON fast (json_read.h, json_fast.h): simdjson first, nlohmann where it may differ.
#include "core/json_read.h"

#include "core/json_bounds.h"
#include "core/json_fast.h"

namespace ferry::core {
namespace {

// simdjson parses and validates several times faster than nlohmann's lexer; the document is then
// built as nlohmann's ordered_json (what the transforms edit), node by node with the same
// types nlohmann's own parser gives: non-negative integers unsigned, duplicate keys the last wins
// in the place of the first. Text simdjson refuses for a reason nlohmann may not (an integer
// beyond 64 bits) goes to nlohmann's parser, so what is JSON does not change — with two
// exceptions on purpose: nlohmann takes a NUL byte outside a string for the end of the input (it
// accepts "1\0garbage"); simdjson refuses that, and so do we. And a value nested deeper than
// kRecordJsonLimits.maxDepth is refused by both parsers (writing or copying a document
// recurses once per level: a deep value must not take the worker's stack).
simdjson::dom::parser& fastParser() {
  thread_local simdjson::dom::parser parser = boundedFastParser();
  return parser;
}

// Errors after which nlohmann's parser may still accept the text.
bool nlohmannMayAccept(simdjson::error_code e, std::string_view text) {
  // A raw NUL byte is never part of JSON (not even inside a string), but nlohmann would stop there.
  if (text.find('\0') != std::string_view::npos) return false;
  return e == simdjson::NUMBER_ERROR || e == simdjson::NUMBER_OUT_OF_RANGE ||
         e == simdjson::CAPACITY || e == simdjson::MEMALLOC;
}

}  // namespace

simdjson::dom::parser boundedFastParser() {
  simdjson::dom::parser p;
  // The depth is kept when the parser later grows its capacity for a longer text.
  // Should that allocation fail, a later one would use simdjson's default depth: instead the
  // parser takes nothing (every parse answers CAPACITY and callers use the bounded nlohmann path).
  if (p.allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY,
                 static_cast<std::size_t>(kRecordJsonLimits.maxDepth)) !=
      simdjson::SUCCESS)
    p.set_max_capacity(0);
  return p;
}

void toJson(simdjson::dom::element e, nlohmann::ordered_json& out) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      out = nlohmann::ordered_json::array();
      auto& arr = out.get_ref<nlohmann::ordered_json::array_t&>();
      const simdjson::dom::array items = e.get_array().value_unsafe();
      arr.reserve(items.size());
      for (simdjson::dom::element c : items) {
        arr.emplace_back();
        toJson(c, arr.back());
      }
      return;
    }
    case T::OBJECT: {
      out = nlohmann::ordered_json::object();
      const simdjson::dom::object fields = e.get_object().value_unsafe();
      out.get_ref<nlohmann::ordered_json::object_t&>().reserve(fields.size());
      for (simdjson::dom::key_value_pair kv : fields) toJson(kv.value, out[std::string(kv.key)]);
      return;
    }
    case T::INT64: {
      const std::int64_t v = e.get_int64().value_unsafe();
      if (v >= 0) out = static_cast<std::uint64_t>(v);
      else out = v;
      return;
    }
    case T::UINT64: out = e.get_uint64().value_unsafe(); return;
    case T::DOUBLE: out = e.get_double().value_unsafe(); return;
    case T::STRING: out = std::string(e.get_string().value_unsafe()); return;
    case T::BOOL: out = e.get_bool().value_unsafe(); return;
    case T::NULL_VALUE: out = nullptr; return;
  }
}

std::optional<nlohmann::ordered_json> parseJson(std::string_view text) {
  auto doc = fastParser().parse(text.data(), text.size());
  if (!doc.error()) {
    nlohmann::ordered_json j;
    toJson(doc.value_unsafe(), j);
    return j;
  }
  if (!nlohmannMayAccept(doc.error(), text)) return std::nullopt;
  auto j = parseJsonBounded<nlohmann::ordered_json>(text, kRecordJsonLimits);
  if (!j.isOk()) return std::nullopt;
  return std::move(*j);
}

bool isJson(std::string_view text) {
  auto doc = fastParser().parse(text.data(), text.size());
  if (!doc.error()) return true;
  return nlohmannMayAccept(doc.error(), text) &&
         parseJsonBounded<nlohmann::ordered_json>(text, kRecordJsonLimits).isOk();
}

}  // namespace ferry::core
