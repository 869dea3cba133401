// The transform chain of one task: transforms applied in the configured order, each optionally
// guarded by a predicate (transforms.<alias>.predicate, .negate), Kafka Connect style.
//
// Threading: one chain per task, used by that task's thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "runtime/plugins.h"

namespace ferry::runtime {

class TransformChain {
 public:
  // Builds the chain from a connector config (transforms=..., predicates=...).
  static Result<std::unique_ptr<TransformChain>> build(const PluginRegistry& registry, const StringMap& config);
  ~TransformChain();

  bool empty() const noexcept { return steps_.empty(); }
  // Applies every step. Returns false when a step dropped the record. An error names the
  // transform alias.
  Result<bool> apply(Record& record);

 private:
  struct Step {
    std::string alias;
    PluginPtr<Transform> transform;
    Predicate* predicate = nullptr;  // owned by predicates_
    bool negate = false;
  };
  std::vector<PluginPtr<Predicate>> predicates_;
  std::vector<Step> steps_;
};

}  // namespace ferry::runtime
