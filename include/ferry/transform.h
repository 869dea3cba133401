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
#include "ferry/schema.h"
#include "ferry/status.h"

namespace ferry {

// What the steps of one chain share about the record passing through it, so that consecutive
// transforms which read the value as a structure (JSON) parse it once and write it once. The
// runtime creates one per record and chain; its contents are the business of the transforms that
// understand it (the built-in ones use transforms::JsonCache). While a step holds a changed
// parsed form, the record's bytes are stale until flush().
class TransformCache {
 public:
  virtual ~TransformCache() = default;
  // Writes every parsed form changed since the last flush back into `record`'s bytes.
  virtual Status flush(Record& record) = 0;
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual const ConfigDef& configDef() const = 0;
  virtual Status configure(const StringMap& config) = 0;
  // Transforms `record` in place. Returns false to drop it, true to keep it. An error follows
  // errors.tolerance (the record may go to the dead-letter topic).
  virtual Result<bool> apply(Record& record) = 0;
  // What a chain calls. A transform that shares parsed forms through `cache` overrides it; the
  // default makes the record's bytes current and calls apply(record).
  virtual Result<bool> apply(Record& record, TransformCache& cache) {
    if (Status s = cache.flush(record); !s.isOk()) return s;
    return apply(record);
  }
  virtual void close() {}
};

class Predicate {
 public:
  virtual ~Predicate() = default;
  virtual const ConfigDef& configDef() const = 0;
  virtual Status configure(const StringMap& config) = 0;
  virtual Result<bool> test(const Record& record) = 0;
  // False when test() reads neither the key's nor the value's bytes (only the topic, headers,
  // whether the value is null, ...): a chain then tests it without writing a pending parsed
  // value first. True by default: a predicate that reads the bytes must see them current.
  virtual bool readsKeyOrValueBytes() const { return true; }
};

// What a converter read from the backbone: the data and, when the bytes carried one, its schema.
struct SchemaAndBytes {
  SchemaPtr schema;
  Bytes data;
};

// Turns record keys/values into backbone bytes and back (json, string, bytes, ...). ferry keeps
// values as bytes end to end; a converter checks and reshapes them at the backbone boundary.
class Converter {
 public:
  virtual ~Converter() = default;
  virtual const ConfigDef& configDef() const = 0;
  // `isKey` says whether this instance converts keys or values. As in Kafka Connect, the runtime
  // also passes `converter.type` = key, value or header in `config`: a converter that refuses
  // unknown keys must accept that one.
  virtual Status configure(const StringMap& config, bool isKey) = 0;
  // Record data -> bytes written to the backbone.
  virtual Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) = 0;
  // Backbone bytes -> record data handed to sink tasks.
  virtual Result<Bytes> toRecord(const std::string& topic, const Bytes& data) = 0;
  // What the runtime calls: the same with the record's schema (null = schemaless). A converter
  // that can carry schemas (JsonConverter with schemas.enable=true) overrides both; the others
  // drop the schema on the way in and read none, as Kafka Connect's StringConverter and
  // ByteArrayConverter do.
  virtual Result<Bytes> fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema,
                                             const Bytes& data) {
    (void)schema;
    return fromRecord(topic, data);
  }
  virtual Result<SchemaAndBytes> toRecordWithSchema(const std::string& topic, const Bytes& data) {
    FERRY_ASSIGN_OR_RETURN(Bytes out, toRecord(topic, data));
    return SchemaAndBytes{nullptr, std::move(out)};
  }
  // What the runtime calls for record values (Kafka's fromConnectData / toConnectData with
  // headers): the same with the record's headers, which the converter may read and change. On
  // the way in, `headers` are those written to the backbone with the result (before the header
  // converter); on the way out, those the record handed to the sink gets (before the header
  // converter reads them). A converter that fails leaves `headers` as they were: the runtime
  // reports the record with them (errors.tolerance, dead-letter topic). The defaults ignore the
  // headers. Keys are converted without headers.
  virtual Result<Bytes> fromRecordWithHeaders(const std::string& topic, Headers& headers,
                                              const SchemaPtr& schema, const Bytes& data) {
    (void)headers;
    return fromRecordWithSchema(topic, schema, data);
  }
  virtual Result<SchemaAndBytes> toRecordWithHeaders(const std::string& topic, Headers& headers,
                                                     const Bytes& data) {
    (void)headers;
    return toRecordWithSchema(topic, data);
  }
};

}  // namespace ferry
