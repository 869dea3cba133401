// The transform chain of one task: transforms applied in the configured order, each optionally
// guarded by a predicate (transforms.<alias>.predicate, .negate), Kafka Connect style.
//
// Threading: one chain per task, used by that task's thread only.
#pragma once

#include <cstdint>
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
  // What one step did to a record (trace()).
  struct StepTrace {
    std::string alias;
    std::string type;       // the transform's configured type
    bool skipped = false;   // its predicate said no
    bool dropped = false;
    Status error;           // the step failed: the record stops here
    Record after;           // the record after the step (bytes current)
  };
  // Applies the chain like apply() and reports every step, the record's bytes written after each.
  // For tools (POST /rules/test); tasks use apply().
  std::vector<StepTrace> trace(Record& record);

  // JSON documents parsed and written by the chain's steps since it was built: a run of JSON steps
  // parses a record's value at most once and writes it once (transforms/json_cache.h).
  std::uint64_t jsonParses() const noexcept { return jsonParses_; }
  std::uint64_t jsonWrites() const noexcept { return jsonWrites_; }

 private:
  Result<bool> run(Record& record, TransformCache& cache, std::vector<StepTrace>* trace);
  struct Step {
    std::string alias;
    std::string type;
    PluginPtr<Transform> transform;
    Predicate* predicate = nullptr;  // owned by predicates_
    bool negate = false;
  };
  std::vector<PluginPtr<Predicate>> predicates_;
  std::vector<Step> steps_;
  std::uint64_t jsonParses_ = 0;
  std::uint64_t jsonWrites_ = 0;
};

}  // namespace ferry::runtime
