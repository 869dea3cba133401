// The rule parser on arbitrary bytes: a rule or an error, never a crash; a filter it accepted is
// also matched against a topic made of the same bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "transforms/rules/rule_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = ferry::transforms::rules::parseRule(text);
  if (r.isOk())
    for (const auto& f : r->from) (void)ferry::transforms::rules::topicMatches(f, text);
  else
    (void)r.status().message();
  return 0;
}
