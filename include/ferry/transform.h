// ferry connector SDK — transforms, predicates and converters.
//
// A transform changes one record (or drops it) in a chain configured the Kafka Connect way:
//   transforms=route,mask
//   transforms.route.type=RegexRouter        transforms.route.regex=...
//   transforms.mask.predicate=isBig          transforms.mask.negate=true
//   predicates=isBig  predicates.isBig.type=TopicNameMatches  predicates.isBig.pattern=...
// The runtime strips the `transforms.<alias>.` prefix before configure().
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <memory>
#include <string>

#include "ferry/config.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual const ConfigDef& configDef() const = 0;
  virtual Status configure(const StringMap& config) = 0;
  // Transforms `record` in place. Returns false to drop it, true to keep it. An error follows
  // errors.tolerance (the record may go to the dead-letter topic).
  virtual Result<bool> apply(Record& record) = 0;
  virtual void close() {}
};

class Predicate {
 public:
  virtual ~Predicate() = default;
  virtual const ConfigDef& configDef() const = 0;
  virtual Status configure(const StringMap& config) = 0;
  virtual Result<bool> test(const Record& record) = 0;
};

// Turns record keys/values into backbone bytes and back (json, string, bytes, ...). ferry keeps
// values as bytes end to end; a converter checks and reshapes them at the backbone boundary.
class Converter {
 public:
  virtual ~Converter() = default;
  virtual const ConfigDef& configDef() const = 0;
  // `isKey` says whether this instance converts keys or values.
  virtual Status configure(const StringMap& config, bool isKey) = 0;
  // Record data -> bytes written to the backbone.
  virtual Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) = 0;
  // Backbone bytes -> record data handed to sink tasks.
  virtual Result<Bytes> toRecord(const std::string& topic, const Bytes& data) = 0;
};

}  // namespace ferry
