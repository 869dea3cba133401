// JSON text written by hand where building a document would cost too much (hot paths: the
// JsonConverter's envelope, the JDBC source's rows).
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>

namespace ferry::core {

// Appends `text` (UTF-8) as a JSON string, escaped as Jackson escapes: '"', '\\' and the control
// characters (\b \f \n \r \t by name, the rest as \u00XX), characters outside the BMP as their
// UTF-16 surrogate escapes (\uD83D\uDE00), which is how Kafka Connect's JsonConverter writes
// them. Other bytes are copied as they are.
void appendJsonString(std::string& out, std::string_view text);

// How many bytes at the start of `text` a JSON string holds as they are: the length of the run
// before the first '"', '\\' or control character (text.size() when there is none).
std::size_t plainJsonStringBytes(std::string_view text);

// Whether `text` holds a byte that starts a 4-byte UTF-8 sequence (a character outside the BMP).
bool hasNonBmp(std::string_view text);

// `json` (valid JSON text) with every character outside the BMP written as surrogate escapes:
// such characters only occur inside strings, so no parse is needed.
std::string escapeNonBmp(std::string_view json);

}  // namespace ferry::core
