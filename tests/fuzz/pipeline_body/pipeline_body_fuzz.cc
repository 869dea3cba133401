// A pipeline body (parsePipeline, the parser behind POST and PUT /pipelines) must be parsed or
// refused, never crash, throw or recurse without bound. Invariant: what parses renders
// (pipelineJson, the GET answer) to a body that parses to the same pipeline, and materialises into
// connectors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "control/pipeline.h"
#include "rest/json_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::control;
  using ferry::rest::dumpJson;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)parsePipeline(body, std::string("p"));
  auto spec = parsePipeline(body, std::nullopt);
  if (!spec.isOk()) return 0;
  const std::string once = dumpJson(pipelineJson(*spec));
  auto again = parsePipeline(once, std::nullopt);
  if (!again.isOk()) std::abort();  // our own answer must be a valid body
  if (dumpJson(pipelineJson(*again)) != once) std::abort();
  (void)materialisePipeline(*spec);
  return 0;
}
