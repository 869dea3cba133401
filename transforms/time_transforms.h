// Kafka Connect's TimestampConverter ($Key/$Value), schemaless, over JSON bytes.
//
// The timestamp is the whole key/value (`field` empty) or one top-level field of a JSON object.
// Input, told apart by its JSON type:
//   - a number: unix time in `unix.precision` (an integer as Kafka does; a non-integral number,
//     e.g. seconds with a fraction, is accepted too and rounded to the nearest millisecond);
//   - a string: parsed with `format` (SimpleDateFormat letters y M d H m s S and 'quoted' text, the
//     letters TimestampRouter formats) or, when `format` is empty, as ISO-8601
//     (`2024-03-05`, `2024-03-05T10:20:30[.fff...][Z|+hh:mm|+hhmm|+hh]`, space instead of T
//     allowed, no zone = UTC); a whole key/value that is not JSON is taken as such a string;
//   - null stays null; a missing field stays missing; anything else fails the record.
// Output per `target.type`: string (formatted with `format`, else ISO-8601 with milliseconds and
// `Z`), unix (in `unix.precision`), and — ferry has no logical types — Timestamp, Date and Time as
// epoch-millisecond numbers: Timestamp the instant, Date the instant truncated to its UTC day,
// Time the milliseconds within its UTC day (as Kafka's Date/Time logical types hold them).
// UTC throughout. A value that cannot be read or converted fails the record with InvalidArgument
// naming the transform, the field (or key/value) and the topic; a null key/value passes.
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/transform.h"
#include "transforms/schema_update.h"
#include "transforms/json_cache.h"
#include "transforms/record_transforms.h"

namespace ferry::transforms {

class TimestampConverter : public JsonTransform {
 public:
  explicit TimestampConverter(bool onKey)
      : onKey_(onKey), name_(std::string("TimestampConverter") + (onKey ? "$Key" : "$Value")) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

  // Parses `text` as ISO-8601 (see above) into epoch milliseconds; the error says what is wrong.
  static Result<std::int64_t> parseIso8601(std::string_view text);
  // Parses `text` with a compiled SimpleDateFormat pattern (strict: every field in range, the
  // whole text consumed) into epoch milliseconds, UTC.
  static Result<std::int64_t> parsePattern(const std::vector<TimestampRouter::Token>& tokens,
                                           std::string_view text);

 private:
  enum class Target { kString, kUnix, kDate, kTime, kTimestamp };
  enum class Precision { kSeconds, kMillis, kMicros, kNanos };

  // `in` (a JSON number or string) converted to the target; the error says why not. With
  // `typed`, the payload of a record with a schema: `in` read as `inSchema` says (a Date's days,
  // a Time's or Timestamp's milliseconds), and a Date or Time written as Kafka Connect's payload
  // (days; milliseconds of the day) rather than epoch milliseconds.
  Result<Json> convert(const Json& in, const Schema* inSchema = nullptr, bool typed = false) const;
  Result<std::int64_t> toMillis(const Json& in) const;
  // The schema of a converted value whose input had schema `in` (its optional kept).
  Result<SchemaPtr> outputSchema(const Schema& in) const;

  bool onKey_;
  std::string name_;
  std::string field_;
  Target target_ = Target::kTimestamp;
  Precision precision_ = Precision::kMillis;
  std::string pattern_;                           // empty: ISO-8601
  std::vector<TimestampRouter::Token> tokens_;    // compiled pattern_ (or the ISO output form)
  SchemaMemo memo_;                               // the output schema per input schema
};

}  // namespace ferry::transforms
