// Differential: the transforms' JSON (simdjson parse into nlohmann documents, ferry's writer)
// against nlohmann alone. Any disagreement — accepted by one and not the other (but for nlohmann's
// NUL quirk, below), a different document, different text written — aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/json_bounds.h"
#include "transforms/json_util.h"

using ferry::transforms::Json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Json reference = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  auto fast = ferry::transforms::parseJson(text);
  // nlohmann's lexer takes a NUL byte outside a string for the end of the input and accepts
  // "1\0garbage"; ferry refuses it (it is not JSON). Every other verdict must be the same.
  const bool nulQuirk = !reference.is_discarded() && !fast && text.find('\0') != std::string_view::npos;
  // ferry refuses documents nested deeper than its record bound (core/json_bounds.h) by design;
  // nlohmann has no bound.
  const bool tooDeep = !reference.is_discarded() && !fast &&
                       ferry::core::documentDepth(reference) > ferry::core::kRecordJsonLimits.maxDepth;
  if (fast.has_value() == reference.is_discarded() && !nulQuirk && !tooDeep) std::abort();
  if (ferry::transforms::isJson(text) != fast.has_value()) std::abort();
  if (!fast) return 0;
  if (*fast != reference && !(reference != reference)) std::abort();  // NaN never equals itself
  const std::string ours = ferry::transforms::dumpJson(*fast);
  const std::string theirs = reference.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (ours != theirs) std::abort();
  return 0;
}
