// Typed record data (the JSON payload form of ferry/schema.h) to database text and SQL types, for
// the JDBC-style sink: PostgreSQL (text parameters) and MySQL/MariaDB (SQL literals). Pure
// functions: unit-tested without a server.
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

namespace simdjson::dom {
class element;
}

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

// ---- MySQL/MariaDB ----

// The column type MySQL/MariaDB gets for a field of schema `s` (auto.create): int8 TINYINT, int16
// SMALLINT, int32 INT, int64 BIGINT, float32 FLOAT, float64 DOUBLE, boolean BOOLEAN, string TEXT,
// bytes LONGBLOB, Decimal DECIMAL(65,s) (a scale above 30 is InvalidArgument: MySQL's limit; a
// negative scale gives DECIMAL(65,0)), Date DATE, Time TIME(3), Timestamp DATETIME(3), Uuid CHAR(36)
// (not MariaDB's UUID type: it refuses UUIDs PostgreSQL keeps, e.g. of version nibble e), Json JSON. In a primary key (`primaryKey`), where
// MySQL cannot key a TEXT or BLOB: string and Json VARCHAR(255), bytes VARBINARY(255).
Result<std::string> mysqlType(const Schema& s, const std::string& field, bool primaryKey);

// The SQL literal for value `v` of schema `s` (nullopt = NULL), for a session whose sql_mode has
// no NO_BACKSLASH_ESCAPES and whose character set is utf8mb4 (mariadb_client.h sets both):
// integers and floats as their JSON text, booleans TRUE/FALSE, strings (Uuid and Json included)
// quoted by mysqlQuoted (text that is not UTF-8 is InvalidArgument), bytes X'hex', Decimal,
// Date, Time and Timestamp as postgresText writes them, quoted. InvalidArgument naming the field
// when `v` is not that type.
Result<std::optional<std::string>> mysqlLiteral(const Schema& s, const Json& v, const std::string& field);

// postgresText (or, with `mysql`, mysqlLiteral) for a value as simdjson read it, without a Json
// document, where that is quick: an integer of an integer schema or of a Timestamp, a boolean, a
// string of a string schema without a logical type. nullopt where it is not (null, floats,
// bytes, the other logical types, a value of another type, a string PostgreSQL cannot hold):
// the caller then takes the Json path, which gives the same text or the error.
std::optional<std::string> quickText(const Schema& s, const simdjson::dom::element& v, bool mysql);

// 'text' with NUL, ', ", \, newline, carriage return and Ctrl-Z backslash-escaped: what
// mysql_real_escape_string gives for utf8mb4, without a connection. Any byte string is one
// literal and never SQL.
std::string mysqlQuoted(std::string_view text);

// `name` with '`' doubled (quote.sql.identifiers=always) or name as it is (never: then only
// letters, digits and '_' are accepted). Empty, a NUL, not UTF-8 or more than 64 characters is
// InvalidArgument.
Result<std::string> mysqlIdentifier(std::string_view name, bool quote);
// table.name.format with ${topic} replaced; a dot splits database and table, each quoted apart.
Result<std::string> mysqlTableIdentifier(const std::string& format, const std::string& topic, bool quote);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points above
// U+10FFFF); `chars` gets the number of code points.
bool validUtf8(std::string_view text, std::size_t* chars = nullptr);

}  // namespace ferry::connectors::jdbc
