// How the shape-changing transforms update a record's schema (ferry/schema.h), as Kafka Connect's
// SMTs do in their schema'd mode: the data is edited as JSON by the transform itself, and the
// schema beside it is derived once per distinct input schema (records of one table share one
// schema object, so the derivation runs once, not per record).
//
// Threading: a SchemaMemo belongs to one transform instance (one task thread).
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "ferry/result.h"
#include "ferry/schema.h"

namespace ferry::transforms {

// The output schema for the last input schema seen.
class SchemaMemo {
 public:
  template <class Derive>
  Result<SchemaPtr> get(const SchemaPtr& in, Derive&& derive) {
    if (in == lastIn_ && lastOut_) return lastOut_;
    FERRY_ASSIGN_OR_RETURN(SchemaPtr out, derive(*in));
    lastIn_ = in;
    lastOut_ = out;
    return out;
  }
  // True when get(in, ...) would answer without deriving.
  bool knows(const SchemaPtr& in) const { return in && in == lastIn_ && lastOut_; }

 private:
  SchemaPtr lastIn_;
  SchemaPtr lastOut_;
};

// A builder of `type` with `s`'s optional, name, version, doc and parameters (Kafka's
// SchemaUtil.copySchemaBasics, plus optional).
SchemaBuilder copyBasics(const Schema& s, SchemaType type);
void copyBasicsInto(const Schema& s, SchemaBuilder& b);
// A copy of `s` (basics, fields, element/key/value schemas, default) changed by `edit`.
Result<SchemaPtr> copySchema(const Schema& s, const std::function<void(SchemaBuilder&)>& edit);
// `s` itself, optional.
Result<SchemaPtr> asOptional(const Schema& s);

// InvalidArgument "<transform>: the <side>'s schema is <describe>, not a struct" unless `s` is one.
Status needStruct(const Schema& s, const std::string& transform, const char* side);

// Rebuilds the struct `s` with `edit(builder)` adding the fields (basics copied).
template <class Edit>
Result<SchemaPtr> rebuildStruct(const Schema& s, Edit&& edit) {
  SchemaBuilder b = copyBasics(s, SchemaType::kStruct);
  FERRY_RETURN_IF_ERROR(edit(b));
  return b.build();
}

}  // namespace ferry::transforms
