// Typed record data (the JSON payload form of ferry/schema.h) to database text and SQL types, for
// the JDBC-style sink. Pure functions: unit-tested without a server.
//
// Thread-safety: free functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/schema.h"

namespace ferry::connectors::jdbc {

using Json = nlohmann::ordered_json;

// The column type PostgreSQL gets for a field of schema `s` (auto.create): int8/int16 SMALLINT,
// int32 INTEGER, int64 BIGINT, float32 REAL, float64 DOUBLE PRECISION, boolean BOOLEAN, string
// TEXT, bytes BYTEA, Decimal NUMERIC, Date DATE, Time TIME, Timestamp TIMESTAMP, Uuid UUID, Json
// JSONB. A struct, array or map has no column: InvalidArgument naming the field.
Result<std::string> postgresType(const Schema& s, const std::string& field);

// The text PostgreSQL reads for value `v` of schema `s` (nullopt = NULL): integers and floats as
// their JSON text, booleans true/false, strings as they are, bytes as \x hex, Decimal as its
// decimal text with the schema's scale, Date YYYY-MM-DD, Time HH:MM:SS.mmm, Timestamp
// YYYY-MM-DD HH:MM:SS.mmm (UTC). InvalidArgument naming the field when `v` is not that type.
Result<std::optional<std::string>> postgresText(const Schema& s, const Json& v, const std::string& field);

// Pieces, exposed for tests.
// Big-endian two's complement `unscaled` with `scale` digits after the point: "-12.34".
std::string decimalText(std::string_view unscaled, std::int32_t scale);
std::string dateText(std::int64_t daysSinceEpoch);
std::string timeText(std::int64_t msOfDay);
std::string timestampText(std::int64_t msSinceEpoch);

// "name" with '"' doubled (quote.sql.identifiers=always) or name as it is (never: then only
// letters, digits and '_' are accepted). A NUL or an empty name is InvalidArgument.
Result<std::string> identifier(std::string_view name, bool quote);
// table.name.format with ${topic} replaced; a dot splits schema and table, each quoted apart.
Result<std::string> tableIdentifier(const std::string& format, const std::string& topic, bool quote);

}  // namespace ferry::connectors::jdbc
