// Percent-decoding (see percent.h).
#include "core/percent.h"

namespace ferry::core {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string percentDecode(std::string_view text, bool plusIsSpace) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int hi = text[i] == '%' && i + 2 < text.size() ? hexValue(text[i + 1]) : -1;
    const int lo = hi >= 0 ? hexValue(text[i + 2]) : -1;
    if (lo >= 0) {
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(plusIsSpace && text[i] == '+' ? ' ' : text[i]);
    }
  }
  return out;
}

}  // namespace ferry::core
