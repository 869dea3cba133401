// Predicates for conditional transforms (transforms.<alias>.predicate / negate, Kafka style):
// TopicNameMatches (pattern matched against the whole topic), HasHeaderKey (name),
// RecordIsTombstone (null value).
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <regex>
#include <string>

#include "ferry/transform.h"

namespace ferry::transforms {

class TopicNameMatches final : public Predicate {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> test(const Record& record) override;
  bool readsKeyOrValueBytes() const override { return false; }

 private:
  std::regex pattern_;
};

class HasHeaderKey final : public Predicate {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> test(const Record& record) override;
  bool readsKeyOrValueBytes() const override { return false; }

 private:
  std::string name_;
};

class RecordIsTombstone final : public Predicate {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> test(const Record& record) override;
  bool readsKeyOrValueBytes() const override { return false; }
};

}  // namespace ferry::transforms
