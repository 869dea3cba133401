#pragma once
// Compiles a parsed rule (rule_parser.h) and evaluates it on records.
//
// Names a rule can use: payload (the value, parsed as JSON once and only when used; a value that
// is not JSON is a string), topic (the MQTT topic when the record carries one in the mqtt.topic
// header, else the record's topic), levels (topic split at '/'), key (string or null), headers
// (object of header name -> string), timestamp (epoch ms), qos (from mqtt.qos, else null),
// clientid (from mqtt.client.id or clientid headers, else null); in FOREACH, the element alias.
// Errors found at compile time (unknown function, wrong argument count, unknown name) name their
// line and column; errors at run time (a bad cast, a non-number in arithmetic) too.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ferry/record.h"
#include "ferry/result.h"
#include "transforms/rules/rule_ast.h"

namespace ferry::transforms::rules {

using Value = nlohmann::ordered_json;

struct RuleOutput {
  bool fromMatched = false;   // the topic matched a FROM filter
  bool matched = false;       // ... and WHERE held
  std::vector<Value> rows;    // SELECT: one object; FOREACH: one per element kept by INCASE
};

class CompiledRule {
 public:
  static Result<CompiledRule> compile(std::string_view text);
  // The topic filters of FROM, as written.
  const std::vector<std::string>& from() const { return rule_->from; }
  bool isForeach() const { return rule_->foreach; }
  // True when the rule reads the payload (a caller holding it parsed passes it to evaluate).
  bool usesPayload() const { return usesPayload_; }
  // `payload`: the record's value already parsed as JSON (a chain's cache), or nullptr to let the
  // evaluation parse it when the rule reads it. Reading paths, comparing, arithmetic and boolean
  // logic allocate nothing; function calls and the selected rows do.
  Result<RuleOutput> evaluate(const Record& record, const Value* payload = nullptr) const;

 private:
  std::shared_ptr<const Rule> rule_;
  bool usesPayload_ = false;
};

}  // namespace ferry::transforms::rules
