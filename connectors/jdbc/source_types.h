// What the JDBC source reads: a database column's type as a schema (ferry/schema.h), and a
// value's text as the JSON payload form of that schema. Pure functions over PostgreSQL's and
// MySQL/MariaDB's text output, unit-tested without a server.
//
// Thread-safety: free functions; a built ColumnReader is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "connectors/jdbc/mariadb_client.h"
#include "core/timezone.h"
#include "ferry/result.h"
#include "ferry/schema.h"

namespace ferry::connectors::jdbc {

// numeric.mapping (Kafka Connect JDBC's names): none = NUMERIC/DECIMAL as Decimal; precision_only
// = NUMERIC(p,0) with p <= 18 as the smallest integer type holding p digits; best_fit = that, and
// NUMERIC(p,s) with p <= 18 and s > 0 as float64.
enum class NumericMapping { kNone, kPrecisionOnly, kBestFit };
Result<NumericMapping> numericMappingOf(std::string_view name);

// How the text of one column is turned into payload JSON.
enum class ValueKind {
  kInteger,    // int2/int4/int8, and NUMERIC(p,0) mapped to an integer type: the text as is
  kFloat,      // float4/float8; NaN and infinities as the strings "NaN", "Infinity", "-Infinity"
  kNumericAsDouble,  // NUMERIC mapped to float64 (best_fit): the decimal text as a JSON number
  kBoolean,    // 't' / 'f'
  kText,       // text, varchar, char, enums, interval, and every type without a mapping: a string
  kBytes,      // bytea (\x hex) as base64
  kDecimal,    // NUMERIC(p,s) as Kafka's Decimal: base64 of the unscaled big-endian integer
  kDate,       // days since 1970-01-01
  kTime,       // ms since midnight (microseconds cut)
  kTimeTz,     // time with time zone, moved to UTC
  kTimestamp,  // ms since the epoch (timestamp with and without time zone; the session is in UTC)
  kArray,      // a one-dimensional PostgreSQL array of one of the kinds above
  // MySQL/MariaDB's texts:
  kRawBytes,   // BINARY, VARBINARY, BLOB, BIT(n > 1), GEOMETRY: the bytes themselves, as base64
  kBitFlag,    // BIT(1): one byte, 0 or 1
  kIntFlag,    // TINYINT(1): an integer, 0 = false and anything else true (as Connector/J reads it)
};

struct ColumnReader {
  std::string name;
  ValueKind kind = ValueKind::kText;
  std::int32_t scale = 0;                        // kDecimal
  std::shared_ptr<const ColumnReader> element;   // kArray
  SchemaPtr schema;                              // the field's schema (optional when nullable)
  // kTimestamp of a column without a zone (PostgreSQL timestamp, MySQL DATETIME) read in a zone
  // other than UTC (db.timezone): its wall-clock texts are turned into instants in this zone.
  std::shared_ptr<const core::TimeZone> zone;
};

// What is known of a PostgreSQL type besides its oid (from pg_type), for types without a fixed oid:
// enums (typtype 'e') and arrays of other types (typcategory 'A', typelem).
struct PgTypeInfo {
  char typtype = 'b';
  char category = 'U';
  unsigned element = 0;  // the element type of an array type, 0 otherwise
};

// The reader of a column of PostgreSQL type `oid` with modifier `typmod` (-1 = none). `lookup`
// answers for oids this function does not know (nullopt: unknown, read as text).
using PgTypeLookup = std::optional<PgTypeInfo> (*)(unsigned oid, const void* state);
// `zone` (null: UTC) is the zone of timestamps without a zone (db.timezone).
Result<ColumnReader> pgColumnReader(std::string name, unsigned oid, int typmod, bool optional,
                                    NumericMapping mapping, PgTypeLookup lookup = nullptr,
                                    const void* lookupState = nullptr,
                                    std::shared_ptr<const core::TimeZone> zone = nullptr);

// The reader of a MySQL/MariaDB result column as the server describes it (its protocol type,
// flags, length, decimals, character set and MariaDB's extended type name and format).
Result<ColumnReader> mysqlColumnReader(const MariaDbConnection::Column& column, bool optional, NumericMapping mapping,
                                       std::shared_ptr<const core::TimeZone> zone = nullptr);

// Appends the payload JSON of `text` (the server's text output of a non-NULL value: PostgreSQL's,
// or MySQL/MariaDB's for the readers mysqlColumnReader builds) read as `col`. InvalidArgument
// naming the column when the text is not what the type promises.
Status appendValue(std::string& out, const ColumnReader& col, std::string_view text);

// Pieces, exposed for tests. Each returns nullopt when the text is not of that form.
// "YYYY-MM-DD[ BC]" -> days since 1970-01-01.
std::optional<std::int64_t> parsePgDate(std::string_view text);
// "HH:MM:SS[.ffffff]" -> microseconds since midnight.
std::optional<std::int64_t> parsePgTime(std::string_view text);
// "YYYY-MM-DD HH:MM:SS[.ffffff][+hh[:mm[:ss]]][ BC]" -> microseconds since the epoch, UTC.
std::optional<std::int64_t> parsePgTimestamp(std::string_view text);
// A timestamp position as Kafka Connect JDBC keeps it: `timestamp` = milliseconds since the epoch,
// `timestamp_nanos` = the nanoseconds within that second. Microseconds are kept exactly; without
// timestamp_nanos (an older position) the milliseconds alone count.
std::pair<std::int64_t, std::int64_t> timestampOffsetOfMicros(std::int64_t micros);
std::int64_t microsOfTimestampOffset(std::int64_t ms, std::optional<std::int64_t> nanos);
// A wall-clock time in `zone` (microseconds as if UTC) -> the instant, and back (db.timezone).
std::int64_t utcMicrosOfLocal(const core::TimeZone& zone, std::int64_t localMicros);
std::int64_t localMicrosOfUtc(const core::TimeZone& zone, std::int64_t utcMicros);
// Microseconds since the epoch -> "YYYY-MM-DD HH:MM:SS.ffffff" (UTC), for query parameters.
std::string timestampMicrosText(std::int64_t micros);
// "-12.3400" with `scale` -> the unscaled value's big-endian two's complement bytes (Kafka's
// Decimal). nullopt for NaN, infinities, or more fraction digits than `scale`.
std::optional<std::string> decimalUnscaledBytes(std::string_view text, std::int32_t scale);
// "\x0aff" -> the bytes.
std::optional<std::string> parsePgBytea(std::string_view text);

}  // namespace ferry::connectors::jdbc
