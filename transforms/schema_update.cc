// Schema derivation helpers of the transforms (schema_update.h).
#include "transforms/schema_update.h"

namespace ferry::transforms {

SchemaBuilder copyBasics(const Schema& s, SchemaType type) {
  SchemaBuilder b(type);
  copyBasicsInto(s, b);
  return b;
}

void copyBasicsInto(const Schema& s, SchemaBuilder& b) {
  b.optional(s.optional());
  if (s.name()) b.name(*s.name());
  if (s.version()) b.version(*s.version());
  if (s.doc()) b.doc(*s.doc());
  if (s.parameters()) {
    b.emptyParameters();
    for (const auto& [k, v] : *s.parameters()) b.parameter(k, v);
  }
}

Result<SchemaPtr> copySchema(const Schema& s, const std::function<void(SchemaBuilder&)>& edit) {
  SchemaBuilder b = s.type() == SchemaType::kArray ? SchemaBuilder::array(s.valueSchema())
                    : s.type() == SchemaType::kMap ? SchemaBuilder::map(s.keySchema(), s.valueSchema())
                                                   : SchemaBuilder(s.type());
  copyBasicsInto(s, b);
  for (const auto& f : s.fields()) b.field(f.name, f.schema);
  if (s.defaultJson()) b.defaultJson(*s.defaultJson());
  edit(b);
  return b.build();
}

Result<SchemaPtr> asOptional(const Schema& s) {
  return copySchema(s, [](SchemaBuilder& b) { b.optional(); });
}

Status needStruct(const Schema& s, const std::string& transform, const char* side) {
  if (s.type() == SchemaType::kStruct) return Status::ok();
  return Status::invalidArgument(transform + ": the " + side + "'s schema is " + s.describe() + ", not a struct");
}

}  // namespace ferry::transforms
