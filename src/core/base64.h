// Base64 (RFC 4648, standard alphabet, with padding): REST credentials, stored password hashes,
// and the bytes and Decimal values of typed records (JDBC connectors).
//
// Thread-safety: free functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ferry::core {

std::string base64Encode(std::string_view bytes);
// Standard alphabet with padding; nullopt on anything malformed.
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace ferry::core
