#pragma once
// The rule language as a transform (`transforms.<alias>.type=Rule`, `transforms.<alias>.sql=...`):
// a record whose topic matches FROM and that passes WHERE gets the selected row as its value (a
// JSON object; FOREACH: a JSON array of the rows, dropped when none is left); a record that fails
// WHERE is dropped (the rule is a filter); a record whose topic does not match FROM passes
// unchanged, or is dropped with `unmatched=drop`. With `output=unchanged` the rule only decides
// (a filter) and a kept record keeps its value. Run-time errors fail the record (then
// errors.tolerance and the dead-letter topic decide).
#include <optional>

#include "ferry/transform.h"
#include "transforms/json_cache.h"
#include "transforms/rules/rule_eval.h"

namespace ferry::transforms {

// In a chain the rule reads the payload the steps before it parsed, and its row is written once at
// the chain's end (json_cache.h).
class RuleTransform final : public JsonTransform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  // The compiled rule (for tools that evaluate it themselves); null before configure().
  const rules::CompiledRule* rule() const { return rule_ ? &*rule_ : nullptr; }

 protected:
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::optional<rules::CompiledRule> rule_;
  bool dropUnmatched_ = false;
  bool keepValue_ = false;  // output=unchanged
};

}  // namespace ferry::transforms
