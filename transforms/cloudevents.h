// CloudEvents 1.0 over records: the CloudEventsConverter and the CloudEvent transform. The event
// codec they build on (structured, batch and binary-mode headers; validation) is
// core/cloudevents.h, below the connectors too (HttpSource and HttpSink use it);
// `transforms::cloudevents` names it here.
//
// Thread-safety: the converter and the transform are one instance per task, called from that
// task's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cloudevents.h"
#include "core/record_template.h"
#include "ferry/transform.h"

namespace ferry::transforms {

// The codec (core/cloudevents.h), by the name this layer's code and tests use.
namespace cloudevents = core::cloudevents;

// Converts record values to CloudEvents on the backbone and back (value converter; the runtime
// passes it the record's headers). Keys:
//   cloudevents.mode             structured (default) | binary: what it writes;
//   cloudevents.source, .type    the attributes of a record without `ce_source` / `ce_type`
//                                headers (`${topic}` in them is the record's topic);
//   cloudevents.datacontenttype  the datacontenttype of a record without a `content-type` or
//                                `ce_datacontenttype` header (empty: none).
// fromRecordWithHeaders (record -> backbone): the event's attributes are the record's `ce_*`
//   headers (`content-type` = datacontenttype), else the defaults above; an absent id is
//   derivedId(topic, source, type, subject, data) - the same record gives the same id, so a
//   record written twice is one event to a deduplicating reader. structured: the value becomes
//   the event's JSON, the `ce_*` headers are removed and `content-type` is
//   application/cloudevents+json; binary: the value is unchanged, the `ce_*` headers are set.
// toRecordWithHeaders (backbone -> record): a message whose content-type is
//   application/cloudevents+json, or any message without a `ce_specversion` header when the mode
//   is structured, is parsed as a structured event: the value becomes its data (null when it has
//   none), its attributes `ce_*` headers, its datacontenttype `content-type`. Otherwise (binary)
//   the `ce_*` headers must describe a valid event; value and headers are kept.
// A null value (a tombstone) passes unchanged both ways. Without headers (fromRecord / toRecord,
// e.g. as a key converter) it works on an empty header list. Every error is InvalidArgument
// naming the converter, the topic and the attribute.
class CloudEventsConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> fromRecordWithHeaders(const std::string& topic, Headers& headers, const SchemaPtr& schema,
                                      const Bytes& data) override;
  Result<SchemaAndBytes> toRecordWithHeaders(const std::string& topic, Headers& headers,
                                             const Bytes& data) override;

 private:
  Status bad(const std::string& topic, const char* direction, const Status& why) const;
  bool binary_ = false;
  std::string source_, type_, contentType_;
  std::string role_ = "value";
};

// CloudEvent: wraps a record as a CloudEvent. Keys (templates are core::RecordTemplate:
// ${topic}, ${key}, ${value}, ${value:<path>}, ${queue}, ${offset}, ${timestamp} (epoch ms),
// ${header:<name>}, $${ for a literal "${"):
//   mode             structured (default: the value becomes the event's JSON, `content-type`
//                    application/cloudevents+json, `ce_*` headers removed, the value schema
//                    dropped) | binary (the value is the data, unchanged; `ce_*` and
//                    `content-type` headers are set);
//   id               template; empty (default): derivedId(topic, queue, offset, key, value,
//                    timestamp), the same for the same record;
//   source, event.type  templates (defaults `/ferry/${topic}`, `io.ferry.record`; not `type`,
//                    which names the transform's class in a connector config);
//   subject          template (default empty: none);
//   time             template (default `${timestamp}`); a result of digits alone is epoch
//                    milliseconds and written as RFC 3339 (0, an unknown timestamp: no time);
//   datacontenttype, dataschema  text (default empty: none);
//   extensions       list of name:template (`tenant:${header:tenant}`).
// A template whose part is missing (no such header, a null key, a path that selects nothing or
// null, a value that is not JSON for ${value:...}) fails the record for id, source and type
// (InvalidArgument naming the template; errors.tolerance decides) and leaves any other attribute
// out. A null value (a tombstone) passes unchanged.
class CloudEvent final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  bool binary_ = false;
  std::optional<core::RecordTemplate> id_;  // nullopt: derived
  std::optional<core::RecordTemplate> source_, type_, subject_, time_;
  std::string contentType_, dataschema_;
  std::vector<std::pair<std::string, core::RecordTemplate>> extensions_;
};

}  // namespace ferry::transforms
