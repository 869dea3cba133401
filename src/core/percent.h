// Percent-decoding (RFC 3986 %XX), the one copy: URL paths and query components (the REST server),
// database URLs (the JDBC connectors), CloudEvents `ce-*` HTTP header values (HttpSource).
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace ferry::core {

// `text` with every %XX (two hex digits, any case) replaced by its byte and, with
// `plusIsSpace` (form-encoded query components), every '+' by a space. A '%' not followed by two
// hex digits is kept as it is.
std::string percentDecode(std::string_view text, bool plusIsSpace = false);

}  // namespace ferry::core
