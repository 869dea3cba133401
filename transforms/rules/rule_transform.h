#pragma once
// The rule language as a transform (`transforms.<alias>.type=Rule`, `transforms.<alias>.sql=...`):
// a record whose topic matches FROM and that passes WHERE gets the selected row as its value (a
// JSON object; FOREACH: a JSON array of the rows, dropped when none is left); a record that fails
// WHERE is dropped (the rule is a filter); a record whose topic does not match FROM passes
// unchanged, or is dropped with `unmatched=drop`. Run-time errors fail the record (then
// errors.tolerance and the dead-letter topic decide).
#include <optional>

#include "ferry/transform.h"
#include "transforms/rules/rule_eval.h"

namespace ferry::transforms {

class RuleTransform final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  std::optional<rules::CompiledRule> rule_;
  bool dropUnmatched_ = false;
};

}  // namespace ferry::transforms
