// The rule language on arbitrary bytes: parse, compile (which evaluates the rule's constant parts)
// and, when it compiles, evaluate it on a record whose value and MQTT topic are the same bytes,
// both reading the bytes and reading a parsed document. A rule or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "transforms/json_util.h"
#include "transforms/rules/rule_eval.h"
#include "transforms/rules/rule_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = ferry::transforms::rules::parseRule(text);
  if (!r.isOk()) {
    (void)r.status().message();
    return 0;
  }
  for (const auto& f : r->from) (void)ferry::transforms::rules::topicMatches(f, text);
  auto c = ferry::transforms::rules::CompiledRule::compile(text);
  if (!c.isOk()) return 0;
  ferry::Record record;
  record.topic = "t";
  record.headers.add("mqtt.topic", text);
  record.value = ferry::Bytes::copyOf(text);
  (void)c->evaluate(record);
  if (auto doc = ferry::transforms::parseJson(text)) (void)c->evaluate(record, &*doc);
  return 0;
}
