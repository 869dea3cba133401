// Typed data to PostgreSQL text and types (values.h).
#include "connectors/jdbc/values.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/base64.h"

namespace ferry::connectors::jdbc {
namespace {

Status bad(const std::string& field, const std::string& what) {
  return Status::invalidArgument("field '" + field + "': " + what);
}

std::string hexBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

}  // namespace

std::string decimalText(std::string_view unscaled, std::int32_t scale) {
  // Magnitude of the two's complement number, base 256, most significant first.
  std::vector<unsigned> mag(unscaled.begin(), unscaled.end());
  for (auto& b : mag) b &= 0xff;
  const bool negative = !mag.empty() && (mag[0] & 0x80) != 0;
  if (negative) {  // negate: invert and add one
    for (auto& b : mag) b = (~b) & 0xff;
    for (std::size_t i = mag.size(); i-- > 0;) {
      if (++mag[i] <= 0xff) break;
      mag[i] = 0;
    }
  }
  std::string digits;
  while (std::any_of(mag.begin(), mag.end(), [](unsigned b) { return b != 0; })) {
    unsigned rem = 0;
    for (auto& b : mag) {
      const unsigned cur = (rem << 8) | b;
      b = cur / 10;
      rem = cur % 10;
    }
    digits.push_back(static_cast<char>('0' + rem));
  }
  if (digits.empty()) digits = "0";
  std::reverse(digits.begin(), digits.end());
  if (scale > 0) {
    if (digits.size() <= static_cast<std::size_t>(scale)) digits.insert(0, static_cast<std::size_t>(scale) - digits.size() + 1, '0');
    digits.insert(digits.size() - static_cast<std::size_t>(scale), 1, '.');
  } else if (scale < 0) {
    if (digits != "0") digits.append(static_cast<std::size_t>(-scale), '0');
  }
  return negative && digits.find_first_not_of("0.") != std::string::npos ? "-" + digits : digits;
}

std::string dateText(std::int64_t days) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()));
  return buf;
}

std::string timeText(std::int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%03lld", static_cast<long long>(ms / 3600000),
                static_cast<long long>(ms / 60000 % 60), static_cast<long long>(ms / 1000 % 60),
                static_cast<long long>(ms % 1000));
  return buf;
}

std::string timestampText(std::int64_t ms) {
  std::int64_t days = ms / 86400000;
  std::int64_t rest = ms % 86400000;
  if (rest < 0) {
    rest += 86400000;
    --days;
  }
  return dateText(days) + " " + timeText(rest);
}

Result<std::string> postgresType(const Schema& s, const std::string& field) {
  const auto l = s.logicalName();
  if (l == logical::kDecimal) return std::string("NUMERIC");
  if (l == logical::kDate) return std::string("DATE");
  if (l == logical::kTime) return std::string("TIME");
  if (l == logical::kTimestamp) return std::string("TIMESTAMP");
  if (l == logical::kUuid) return std::string("UUID");
  if (l == logical::kJson) return std::string("JSONB");
  switch (s.type()) {
    case SchemaType::kInt8:
    case SchemaType::kInt16: return std::string("SMALLINT");
    case SchemaType::kInt32: return std::string("INTEGER");
    case SchemaType::kInt64: return std::string("BIGINT");
    case SchemaType::kFloat32: return std::string("REAL");
    case SchemaType::kFloat64: return std::string("DOUBLE PRECISION");
    case SchemaType::kBoolean: return std::string("BOOLEAN");
    case SchemaType::kString: return std::string("TEXT");
    case SchemaType::kBytes: return std::string("BYTEA");
    default: return bad(field, "a " + s.describe() + " has no column type (flatten or extract it first)");
  }
}

Result<std::optional<std::string>> postgresText(const Schema& s, const Json& v, const std::string& field) {
  using Out = std::optional<std::string>;
  if (v.is_null()) {
    if (s.defaultJson()) {
      auto d = Json::parse(*s.defaultJson(), nullptr, false);
      if (!d.is_discarded() && !d.is_null()) return postgresText(s, d, field);
    }
    if (!s.optional()) return bad(field, "null for a required " + s.describe());
    return Out();
  }
  const auto l = s.logicalName();
  auto integer = [&]() -> Result<std::int64_t> {
    if (v.is_number_integer()) return v.get<std::int64_t>();
    return bad(field, "expected an integer for " + s.describe());
  };
  if (l == logical::kDecimal) {
    if (!v.is_string()) return bad(field, "expected base64 text for " + s.describe());
    auto bytes = core::base64Decode(v.get_ref<const std::string&>());
    if (!bytes) return bad(field, "not base64 text");
    return Out(decimalText(*bytes, s.decimalScale().value_or(0)));
  }
  if (l == logical::kDate) {
    FERRY_ASSIGN_OR_RETURN(auto d, integer());
    return Out(dateText(d));
  }
  if (l == logical::kTime) {
    FERRY_ASSIGN_OR_RETURN(auto t, integer());
    if (t < 0 || t >= 86400000) return bad(field, "a Time is 0 <= ms < 86400000");
    return Out(timeText(t));
  }
  if (l == logical::kTimestamp) {
    FERRY_ASSIGN_OR_RETURN(auto t, integer());
    return Out(timestampText(t));
  }
  switch (s.type()) {
    case SchemaType::kInt8:
    case SchemaType::kInt16:
    case SchemaType::kInt32:
    case SchemaType::kInt64:
      if (!v.is_number_integer()) return bad(field, "expected an integer for " + s.describe());
      return Out(v.dump());
    case SchemaType::kFloat32:
    case SchemaType::kFloat64:
      if (!v.is_number()) return bad(field, "expected a number for " + s.describe());
      return Out(v.dump());
    case SchemaType::kBoolean:
      if (!v.is_boolean()) return bad(field, "expected a boolean");
      return Out(v.get<bool>() ? "true" : "false");
    case SchemaType::kString:
      if (!v.is_string()) return bad(field, "expected a string");
      if (v.get_ref<const std::string&>().find('\0') != std::string::npos)
        return bad(field, "PostgreSQL text cannot hold a NUL character");
      return Out(v.get<std::string>());
    case SchemaType::kBytes: {
      if (!v.is_string()) return bad(field, "expected base64 text (bytes)");
      auto bytes = core::base64Decode(v.get_ref<const std::string&>());
      if (!bytes) return bad(field, "not base64 text (bytes)");
      return Out(hexBytes(*bytes));
    }
    default:
      return bad(field, "a " + s.describe() + " has no column (flatten or extract it first)");
  }
}

Result<std::string> identifier(std::string_view name, bool quote) {
  if (name.empty()) return Status::invalidArgument("an empty SQL identifier");
  if (name.find('\0') != std::string_view::npos) return Status::invalidArgument("a SQL identifier with a NUL character");
  if (name.size() > 63) return Status::invalidArgument("SQL identifier '" + std::string(name.substr(0, 63)) + "...' is longer than 63 bytes");
  if (!quote) {
    for (char c : name)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
        return Status::invalidArgument("SQL identifier '" + std::string(name) +
                                       "' needs quoting (quote.sql.identifiers=never allows letters, digits and _ only)");
    return std::string(name);
  }
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += "\"\"";
    else out.push_back(c);
  }
  out.push_back('"');
  return out;
}

Result<std::string> tableIdentifier(const std::string& format, const std::string& topic, bool quote) {
  std::string name = format;
  for (std::size_t at = name.find("${topic}"); at != std::string::npos; at = name.find("${topic}", at + topic.size()))
    name.replace(at, 8, topic);
  const auto dot = name.find('.');
  if (dot == std::string::npos) return identifier(name, quote);
  FERRY_ASSIGN_OR_RETURN(auto schema, identifier(std::string_view(name).substr(0, dot), quote));
  FERRY_ASSIGN_OR_RETURN(auto table, identifier(std::string_view(name).substr(dot + 1), quote));
  return schema + "." + table;
}

}  // namespace ferry::connectors::jdbc
