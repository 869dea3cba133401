// Kafka Connect's JSON form of schemas and typed data: what JsonConverter (schemas.enable=true)
// puts in the envelope {"schema": ..., "payload": ...}.
//
// Writing is byte-compatible with Kafka Connect 4.x's JsonConverter (compact, members in its
// order: "type", then "items" / "keys","values" / "fields", "optional", "name", "version", "doc",
// "parameters", "default"; a struct field is its schema's object with "field" last; strings
// escaped as Jackson does: \" \\ \b \f \n \r \t, other control characters \u00XX, nothing else).
// Reading follows Kafka's rules: "type" is required, "optional" is true only when it is the JSON
// true, "version" only when integral, parameters must be strings, a struct field needs "field".
//
// Thread-safety: free functions without shared state.
#pragma once

#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/schema.h"
#include "core/json_text.h"
#include "transforms/json_util.h"

namespace ferry::transforms {

// Appends `s`'s JSON form to `out`.
void appendConnectSchema(std::string& out, const Schema& s);
std::string connectSchemaJson(const Schema& s);
// Appends `text` as a JSON string, escaped as Jackson escapes (core/json_text.h).
using core::appendJsonString;
// Appends `j` compactly as Jackson writes it: strings as appendJsonString, numbers as nlohmann
// writes them (the same for integers and for the shortest form of most doubles; Jackson writes
// 1e20 as 1.0E20 where this writes 1e+20).
void appendJackson(std::string& out, const Json& j);
// `json` with characters outside the BMP as surrogate escapes (core/json_text.h).
using core::escapeNonBmp;

// Reads a schema from its JSON form. InvalidArgument naming where ("schema.fields[2]: ...").
// Deeper than 64 levels of nested schemas is refused.
Result<SchemaPtr> readConnectSchema(const Json& j);

// Checks that `payload` is data of schema `s` in the payload form of ferry/schema.h; a null where
// `s` is required and has no default, a number out of an integer type's range, a string that is
// not base64 for bytes, a struct that is not an object, ... fail with InvalidArgument naming the
// path ("payload.address.zip: ...").
Status checkPayload(const Schema& s, const Json& payload);

// The same over JSON text, parsed with simdjson (the per-record path): `isJson` false when `json`
// is not JSON; `defaultsApply` true when a null stands where the schema has a default (the
// caller then fills them in with applyDefaults on a parsed document).
Status checkPayloadText(const Schema& s, std::string_view json, bool& defaultsApply, bool& isJson);

// checkPayloadText's fast path: payloads written as sources write them - one compact object with
// every field of a flat struct schema in the schema's order, each a scalar (integers in range,
// numbers without exponent, booleans, strings without \u escapes, null where the field is optional
// and has no default) - are matched by one scan of the text, without a document. It only says yes
// where the full check says OK with no defaults to apply; anything else (whitespace, a missing,
// extra or reordered field, nested values, bytes, ...) answers false and is checked in full.
// Exposed for its test and fuzz target (tests/fuzz/payload_check), as is the full check.
bool flatStructMatches(const Schema& s, std::string_view json);
Status checkPayloadTextInFull(const Schema& s, std::string_view json, bool& defaultsApply, bool& isJson);

// The raw texts of an envelope's two members, without parsing them: `text` must be one object
// with exactly the members "schema" and "payload" (in either order, JSON whitespace allowed).
// The slices are not validated: the caller parses them. InvalidArgument otherwise.
struct EnvelopeSlices {
  std::string_view schema;
  std::string_view payload;
};
Result<EnvelopeSlices> splitEnvelope(std::string_view text);

// Replaces every null in `payload` where the schema has a default by that default (in place).
Status applyDefaults(const Schema& s, Json& payload);

}  // namespace ferry::transforms
