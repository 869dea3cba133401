// Typed data to PostgreSQL text, MySQL/MariaDB literals and both servers' column types (values.h).
#include "connectors/jdbc/values.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <vector>

#include <simdjson.h>

#include "core/base64.h"

namespace ferry::connectors::jdbc {
namespace {

// An integer's decimal text (what nlohmann's dump() writes, without its serializer's cost).
std::string integerText(const Json& v) {
  char buf[24];
  const auto r = v.is_number_unsigned() ? std::to_chars(buf, buf + sizeof buf, v.get<std::uint64_t>())
                                        : std::to_chars(buf, buf + sizeof buf, v.get<std::int64_t>());
  return std::string(buf, r.ptr);
}

Status bad(const std::string& field, const std::string& what) {
  return Status::invalidArgument("field '" + field + "': " + what);
}

std::string hexDigits(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
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

namespace {
// `n` (0 <= n < 10^width) as exactly `width` digits at `out`.
void putDigits(char* out, unsigned n, int width) {
  for (int i = width - 1; i >= 0; --i, n /= 10) out[i] = static_cast<char>('0' + n % 10);
}
}  // namespace

// Formatted by hand: these run for every Date/Time/Timestamp value a sink writes (snprintf was a
// few percent of the sink's CPU).
std::string dateText(std::int64_t days) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  const int year = static_cast<int>(ymd.year());
  if (year < 0 || year > 9999) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", year, static_cast<unsigned>(ymd.month()),
                  static_cast<unsigned>(ymd.day()));
    return buf;
  }
  std::string out(10, '-');
  putDigits(out.data(), static_cast<unsigned>(year), 4);
  putDigits(out.data() + 5, static_cast<unsigned>(ymd.month()), 2);
  putDigits(out.data() + 8, static_cast<unsigned>(ymd.day()), 2);
  return out;
}

std::string timeText(std::int64_t ms) {
  if (ms < 0 || ms >= 100LL * 3600000) {  // not a time of day: as before, whatever it is
    char buf[48];
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%03lld", static_cast<long long>(ms / 3600000),
                  static_cast<long long>(ms / 60000 % 60), static_cast<long long>(ms / 1000 % 60),
                  static_cast<long long>(ms % 1000));
    return buf;
  }
  std::string out = "00:00:00.000";
  putDigits(out.data(), static_cast<unsigned>(ms / 3600000), 2);
  putDigits(out.data() + 3, static_cast<unsigned>(ms / 60000 % 60), 2);
  putDigits(out.data() + 6, static_cast<unsigned>(ms / 1000 % 60), 2);
  putDigits(out.data() + 9, static_cast<unsigned>(ms % 1000), 3);
  return out;
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

namespace {

enum class Target { kPostgres, kMysql };

// The value's text for `target`: PostgreSQL's text parameter, or a MySQL/MariaDB SQL literal.
Result<std::optional<std::string>> valueText(const Schema& s, const Json& v, const std::string& field, Target target) {
  using Out = std::optional<std::string>;
  const bool my = target == Target::kMysql;
  if (v.is_null()) {
    if (s.defaultJson()) {
      auto d = Json::parse(*s.defaultJson(), nullptr, false);
      if (!d.is_discarded() && !d.is_null()) return valueText(s, d, field, target);
    }
    if (!s.optional()) return bad(field, "null for a required " + s.describe());
    return Out();
  }
  const auto l = s.logicalName();
  auto integer = [&]() -> Result<std::int64_t> {
    if (v.is_number_integer()) return v.get<std::int64_t>();
    return bad(field, "expected an integer for " + s.describe());
  };
  // Texts MySQL reads from a quoted literal (PostgreSQL takes them as they are).
  auto text = [&](std::string t) { return Out(my ? mysqlQuoted(t) : std::move(t)); };
  if (l == logical::kDecimal) {
    if (!v.is_string()) return bad(field, "expected base64 text for " + s.describe());
    auto bytes = core::base64Decode(v.get_ref<const std::string&>());
    if (!bytes) return bad(field, "not base64 text");
    return text(decimalText(*bytes, s.decimalScale().value_or(0)));
  }
  if (l == logical::kDate) {
    FERRY_ASSIGN_OR_RETURN(auto d, integer());
    return text(dateText(d));
  }
  if (l == logical::kTime) {
    FERRY_ASSIGN_OR_RETURN(auto t, integer());
    if (t < 0 || t >= 86400000) return bad(field, "a Time is 0 <= ms < 86400000");
    return text(timeText(t));
  }
  if (l == logical::kTimestamp) {
    FERRY_ASSIGN_OR_RETURN(auto t, integer());
    return text(timestampText(t));
  }
  switch (s.type()) {
    case SchemaType::kInt8:
    case SchemaType::kInt16:
    case SchemaType::kInt32:
    case SchemaType::kInt64:
      if (!v.is_number_integer()) return bad(field, "expected an integer for " + s.describe());
      return Out(integerText(v));
    case SchemaType::kFloat32:
    case SchemaType::kFloat64:
      if (!v.is_number()) return bad(field, "expected a number for " + s.describe());
      return Out(v.dump());
    case SchemaType::kBoolean:
      if (!v.is_boolean()) return bad(field, "expected a boolean");
      if (my) return Out(v.get<bool>() ? "TRUE" : "FALSE");
      return Out(v.get<bool>() ? "true" : "false");
    case SchemaType::kString: {
      if (!v.is_string()) return bad(field, "expected a string");
      const auto& str = v.get_ref<const std::string&>();
      if (my) {
        if (!validUtf8(str)) return bad(field, "text that is not UTF-8");
        return Out(mysqlQuoted(str));
      }
      if (str.find('\0') != std::string::npos) return bad(field, "PostgreSQL text cannot hold a NUL character");
      return Out(str);
    }
    case SchemaType::kBytes: {
      if (!v.is_string()) return bad(field, "expected base64 text (bytes)");
      auto bytes = core::base64Decode(v.get_ref<const std::string&>());
      if (!bytes) return bad(field, "not base64 text (bytes)");
      return Out(my ? "X'" + hexDigits(*bytes) + "'" : "\\x" + hexDigits(*bytes));
    }
    default:
      return bad(field, "a " + s.describe() + " has no column (flatten or extract it first)");
  }
}

// `name` quoted with `q` (the quote doubled inside), or checked to need no quoting.
Result<std::string> quotedName(std::string_view name, bool quote, char q) {
  if (name.empty()) return Status::invalidArgument("an empty SQL identifier");
  if (name.find('\0') != std::string_view::npos) return Status::invalidArgument("a SQL identifier with a NUL character");
  if (!quote) {
    for (char c : name)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
        return Status::invalidArgument("SQL identifier '" + std::string(name) +
                                       "' needs quoting (quote.sql.identifiers=never allows letters, digits and _ only)");
    return std::string(name);
  }
  std::string out(1, q);
  for (char c : name) {
    if (c == q) out.push_back(q);
    out.push_back(c);
  }
  out.push_back(q);
  return out;
}

// table.name.format with ${topic} replaced, split at the first dot, each part given to `quoteOne`.
template <typename F>
Result<std::string> qualifiedName(const std::string& format, const std::string& topic, F quoteOne) {
  std::string name = format;
  for (std::size_t at = name.find("${topic}"); at != std::string::npos; at = name.find("${topic}", at + topic.size()))
    name.replace(at, 8, topic);
  const auto dot = name.find('.');
  if (dot == std::string::npos) return quoteOne(name);
  FERRY_ASSIGN_OR_RETURN(auto schema, quoteOne(std::string_view(name).substr(0, dot)));
  FERRY_ASSIGN_OR_RETURN(auto table, quoteOne(std::string_view(name).substr(dot + 1)));
  return schema + "." + table;
}

}  // namespace

std::optional<std::string> quickText(const Schema& s, const simdjson::dom::element& v, bool mysql) {
  const auto l = s.logicalName();
  const auto type = v.type();
  const bool integer = type == simdjson::dom::element_type::INT64 || type == simdjson::dom::element_type::UINT64;
  if (l == logical::kTimestamp) {
    if (type != simdjson::dom::element_type::INT64) return std::nullopt;  // (an unsigned above int64: the Json path)
    std::string t = timestampText(v.get_int64().value_unsafe());
    return mysql ? mysqlQuoted(t) : t;
  }
  if (!l.empty()) return std::nullopt;
  switch (s.type()) {
    case SchemaType::kInt8:
    case SchemaType::kInt16:
    case SchemaType::kInt32:
    case SchemaType::kInt64: {
      if (!integer) return std::nullopt;
      char buf[24];
      const auto r = type == simdjson::dom::element_type::UINT64
                         ? std::to_chars(buf, buf + sizeof buf, v.get_uint64().value_unsafe())
                         : std::to_chars(buf, buf + sizeof buf, v.get_int64().value_unsafe());
      return std::string(buf, r.ptr);
    }
    case SchemaType::kBoolean:
      if (type != simdjson::dom::element_type::BOOL) return std::nullopt;
      if (mysql) return std::string(v.get_bool().value_unsafe() ? "TRUE" : "FALSE");
      return std::string(v.get_bool().value_unsafe() ? "true" : "false");
    case SchemaType::kString: {
      if (type != simdjson::dom::element_type::STRING) return std::nullopt;
      const std::string_view str = v.get_string().value_unsafe();
      if (mysql) {
        if (!validUtf8(str)) return std::nullopt;
        return mysqlQuoted(str);
      }
      if (str.find('\0') != std::string_view::npos) return std::nullopt;
      return std::string(str);
    }
    default:
      return std::nullopt;
  }
}

Result<std::optional<std::string>> postgresText(const Schema& s, const Json& v, const std::string& field) {
  return valueText(s, v, field, Target::kPostgres);
}

Result<std::optional<std::string>> mysqlLiteral(const Schema& s, const Json& v, const std::string& field) {
  return valueText(s, v, field, Target::kMysql);
}

std::string mysqlQuoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('\'');
  for (char c : text) {
    switch (c) {
      case '\0': out += "\\0"; break;
      case '\'': out += "\\'"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\x1a': out += "\\Z"; break;
      default: out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

bool validUtf8(std::string_view text, std::size_t* chars) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++n) {
    const auto b = static_cast<unsigned char>(text[i]);
    std::size_t len;
    std::uint32_t cp;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xe0) == 0xc0) {
      len = 2;
      cp = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      len = 3;
      cp = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
      len = 4;
      cp = b & 0x07;
    } else {
      return false;
    }
    if (i + len > text.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  if (chars) *chars = n;
  return true;
}

Result<std::string> mysqlType(const Schema& s, const std::string& field, bool primaryKey) {
  const auto l = s.logicalName();
  if (l == logical::kDecimal) {
    const std::int32_t scale = std::max<std::int32_t>(0, s.decimalScale().value_or(0));
    if (scale > 30)
      return bad(field, "a Decimal of scale " + std::to_string(scale) +
                            " has no MySQL/MariaDB column (DECIMAL's scale is at most 30): create the table yourself");
    return "DECIMAL(65," + std::to_string(scale) + ")";
  }
  if (l == logical::kDate) return std::string("DATE");
  if (l == logical::kTime) return std::string("TIME(3)");
  if (l == logical::kTimestamp) return std::string("DATETIME(3)");
  if (l == logical::kUuid) return std::string("CHAR(36)");
  if (l == logical::kJson) return std::string(primaryKey ? "VARCHAR(255)" : "JSON");
  switch (s.type()) {
    case SchemaType::kInt8: return std::string("TINYINT");
    case SchemaType::kInt16: return std::string("SMALLINT");
    case SchemaType::kInt32: return std::string("INT");
    case SchemaType::kInt64: return std::string("BIGINT");
    case SchemaType::kFloat32: return std::string("FLOAT");
    case SchemaType::kFloat64: return std::string("DOUBLE");
    case SchemaType::kBoolean: return std::string("BOOLEAN");
    case SchemaType::kString: return std::string(primaryKey ? "VARCHAR(255)" : "TEXT");
    case SchemaType::kBytes: return std::string(primaryKey ? "VARBINARY(255)" : "LONGBLOB");
    default: return bad(field, "a " + s.describe() + " has no column type (flatten or extract it first)");
  }
}

Result<std::string> mysqlIdentifier(std::string_view name, bool quote) {
  std::size_t chars = 0;
  if (!validUtf8(name, &chars)) return Status::invalidArgument("a SQL identifier that is not UTF-8");
  if (chars > 64)
    return Status::invalidArgument("SQL identifier '" + std::string(name.substr(0, 64)) +
                                   "...' is longer than 64 characters");
  return quotedName(name, quote, '`');
}

Result<std::string> mysqlTableIdentifier(const std::string& format, const std::string& topic, bool quote) {
  return qualifiedName(format, topic, [quote](std::string_view n) { return mysqlIdentifier(n, quote); });
}

Result<std::string> identifier(std::string_view name, bool quote) {
  if (name.size() > 63 && name.find('\0') == std::string_view::npos)
    return Status::invalidArgument("SQL identifier '" + std::string(name.substr(0, 63)) +
                                   "...' is longer than 63 bytes");
  return quotedName(name, quote, '"');
}

Result<std::string> tableIdentifier(const std::string& format, const std::string& topic, bool quote) {
  return qualifiedName(format, topic, [quote](std::string_view n) { return identifier(n, quote); });
}

}  // namespace ferry::connectors::jdbc
