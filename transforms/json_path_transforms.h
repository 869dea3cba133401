// JsonPathExtract ($Key/$Value): the key/value replaced by what a JSON path selects in it, for
// IoT bridging (a reading buried in a device envelope becomes the record's value).
//
// `path`: an optional `$`, then field names and array indexes: `a.b[0].c`, `$.a.b`, `$[2]`,
// `$['a.b'].c` (a quoted name may hold '.', '[' and ']'; `\'` / `\"` escape the quote), `$`
// alone = the whole document. Indexes are 0-based. Checked when configured; an error names the
// character where the path goes wrong.
// Result: without `field`, a string as its raw text, null as a null key/value, anything else as
// JSON (as ExtractField);
// with `field`, the JSON object {"<field>": <result>}. A JSON null at the path is a result, not
// missing. When the path selects nothing (a field absent, an index past the end, a step into a
// number, ...), `missing` decides: null (the key/value becomes null, or {"<field>": null}), drop
// (the record is dropped), fail (the record fails). A null key/value passes unchanged; one that is
// not JSON fails the record. Errors name the transform, the path and the topic.
// With a schema on that side (Record::valueSchema / keySchema): the result takes the schema the
// path selects (struct fields by name, array elements by index; optional where the path can
// select nothing and `missing` is null), wrapped as struct{<field>: ...} with `field`, and a string
// result stays a JSON string (a payload, as ExtractField's). A path the schema cannot follow
// (a name a struct lacks, a name into a map, an index into a non-array) fails the record naming
// where; the schema is derived once per input schema.
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ferry/transform.h"
#include "transforms/json_cache.h"
#include "transforms/schema_update.h"

namespace ferry::transforms {

class JsonPathExtract : public JsonTransform {
 public:
  explicit JsonPathExtract(bool onKey)
      : onKey_(onKey), name_(std::string("JsonPathExtract") + (onKey ? "$Key" : "$Value")) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

  // One step of a compiled path: a field name, or an array index when `index` is set.
  struct Step {
    std::string name;
    std::optional<std::size_t> index;
  };
  // Compiles `path`; the error names the 1-based character where it goes wrong.
  static Result<std::vector<Step>> compile(std::string_view path);

 private:
  enum class Missing { kNull, kDrop, kFail };
  // The result's schema for a side whose schema is `in` (see above).
  Result<SchemaPtr> resultSchema(const SchemaPtr& in) const;

  bool onKey_;
  std::string name_;
  std::string path_;
  std::vector<Step> steps_;
  std::string field_;
  Missing missing_ = Missing::kNull;
  SchemaMemo memo_;
};

}  // namespace ferry::transforms
