// Flatten and Cast on JSON keys or values (Kafka Connect's schemaless semantics, over bytes).
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "transforms/field_transforms.h"

namespace ferry::transforms {

// delimiter ("."): nested objects become top-level fields named by their path ("a.b.c"); arrays
// and their contents are kept as they are.
class Flatten : public SidedTransform {
 public:
  explicit Flatten(bool onKey) : SidedTransform("Flatten", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::string delimiter_ = ".";
};

// spec: "<type>" casts the whole key/value, "f1:<type>,f2:<type>" fields of a JSON object.
// Types: int8 int16 int32 int64 float32 float64 boolean string. Numbers narrow the way Java does
// (truncated toward zero, then wrapped to the width); a string must parse as the type (an
// integer out of range fails the record); boolean from a number is "not zero", from a string
// "true" (any case); string from a number or boolean is its JSON text.
class Cast : public SidedTransform {
 public:
  explicit Cast(bool onKey) : SidedTransform("Cast", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::string whole_;                                      // whole-value type, or empty
  std::vector<std::pair<std::string, std::string>> fields_;  // field -> type
};

}  // namespace ferry::transforms
