// Database column types and texts to schemas and payload JSON (source_types.h).
#include "connectors/jdbc/source_types.h"

#include <charconv>
#include <cstdio>
#include <vector>

#include "core/base64.h"
#include "core/civil_date.h"
#include "core/json_text.h"

namespace ferry::connectors::jdbc {
namespace {

// PostgreSQL's fixed type oids (pg_type.dat).
enum : unsigned {
  kBool = 16, kBytea = 17, kChar = 18, kName = 19, kInt8 = 20, kInt2 = 21, kInt4 = 23, kText = 25,
  kOid = 26, kJson = 114, kFloat4 = 700, kFloat8 = 701, kBpchar = 1042, kVarchar = 1043, kDate = 1082,
  kTime = 1083, kTimestamp = 1114, kTimestampTz = 1184, kInterval = 1186, kTimeTz = 1266, kBit = 1560,
  kNumeric = 1700, kUuid = 2950, kJsonb = 3802,
  // Arrays of the types above.
  kBoolArray = 1000, kByteaArray = 1001, kInt2Array = 1005, kInt4Array = 1007, kTextArray = 1009,
  kBpcharArray = 1014, kVarcharArray = 1015, kInt8Array = 1016, kFloat4Array = 1021, kFloat8Array = 1022,
  kDateArray = 1182, kTimeArray = 1183, kTimestampArray = 1115, kTimestampTzArray = 1185,
  kNumericArray = 1231, kUuidArray = 2951, kJsonArray = 199, kJsonbArray = 3807,
};

unsigned arrayElement(unsigned oid) {
  switch (oid) {
    case kBoolArray: return kBool;
    case kByteaArray: return kBytea;
    case kInt2Array: return kInt2;
    case kInt4Array: return kInt4;
    case kInt8Array: return kInt8;
    case kTextArray: return kText;
    case kBpcharArray: return kBpchar;
    case kVarcharArray: return kVarchar;
    case kFloat4Array: return kFloat4;
    case kFloat8Array: return kFloat8;
    case kDateArray: return kDate;
    case kTimeArray: return kTime;
    case kTimestampArray: return kTimestamp;
    case kTimestampTzArray: return kTimestampTz;
    case kNumericArray: return kNumeric;
    case kUuidArray: return kUuid;
    case kJsonArray: return kJson;
    case kJsonbArray: return kJsonb;
    default: return 0;
  }
}

Status bad(const ColumnReader& col, std::string_view what, std::string_view text) {
  std::string shown(text.substr(0, 64));
  if (text.size() > 64) shown += "...";
  return Status::invalidArgument("column '" + col.name + "': '" + shown + "' is not " + std::string(what));
}

// Reads exactly `n` digits at s[at].
std::optional<std::int64_t> digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

using core::daysFromCivil;  // core/civil_date.h

// "YYYY-MM-DD" (4 or more year digits) at the start of `s`; how many bytes it took.
std::optional<std::int64_t> dateAt(std::string_view s, std::size_t& used) {
  std::size_t y = 0;
  while (y < s.size() && s[y] >= '0' && s[y] <= '9') ++y;
  if (y < 4 || y > 7 || y + 6 > s.size() || s[y] != '-' || s[y + 3] != '-') return std::nullopt;
  auto year = digits(s, 0, y);
  auto month = digits(s, y + 1, 2);
  auto day = digits(s, y + 4, 2);
  if (!year || !month || !day || *month < 1 || *month > 12 || *day < 1 || *day > 31) return std::nullopt;
  used = y + 6;
  return daysFromCivil(*year, *month, *day);
}

// "HH:MM:SS[.ffffff]" at the start of `s`, in microseconds.
std::optional<std::int64_t> timeAt(std::string_view s, std::size_t& used) {
  if (s.size() < 8 || s[2] != ':' || s[5] != ':') return std::nullopt;
  auto h = digits(s, 0, 2), m = digits(s, 3, 2), sec = digits(s, 6, 2);
  if (!h || !m || !sec || *h > 24 || *m > 59 || *sec > 60) return std::nullopt;
  std::int64_t micros = ((*h * 60 + *m) * 60 + *sec) * 1000000;
  std::size_t at = 8;
  if (at < s.size() && s[at] == '.') {
    ++at;
    std::int64_t frac = 0;
    int n = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
      if (n < 6) frac = frac * 10 + (s[at] - '0');
      ++n;
      ++at;
    }
    if (n == 0) return std::nullopt;
    for (int i = n; i < 6; ++i) frac *= 10;
    micros += frac;
  }
  used = at;
  return micros;
}

// "+hh[:mm[:ss]]" / "-hh..." at the start of `s`, in seconds east of UTC.
std::optional<std::int64_t> zoneAt(std::string_view s, std::size_t& used) {
  if (s.size() < 3 || (s[0] != '+' && s[0] != '-')) return std::nullopt;
  auto h = digits(s, 1, 2);
  if (!h) return std::nullopt;
  std::int64_t secs = *h * 3600;
  std::size_t at = 3;
  for (int part = 0; part < 2 && at + 3 <= s.size() && s[at] == ':'; ++part) {
    auto v = digits(s, at + 1, 2);
    if (!v) return std::nullopt;
    secs += part == 0 ? *v * 60 : *v;
    at += 3;
  }
  used = at;
  return s[0] == '-' ? -secs : secs;
}

bool endsWithBc(std::string_view& s) {
  if (s.size() >= 3 && s.substr(s.size() - 3) == " BC") {
    s.remove_suffix(3);
    return true;
  }
  return false;
}

void appendInt(std::string& out, std::int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, p);
}

bool isJsonNumber(std::string_view s) {
  // PostgreSQL's float and numeric texts: [-]digits[.digits][e[+-]digits].
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  const std::size_t start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == start || (s[start] == '0' && i - start > 1)) return false;
  if (i < s.size() && s[i] == '.') {
    const std::size_t f = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == f) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t e = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == e) return false;
  }
  return i == s.size();
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b);

Status appendScalar(std::string& out, const ColumnReader& col, std::string_view text);

// A one-dimensional array's text: {a,b,NULL,"quoted \" text"} (optionally after "[l:u]=").
Status appendArray(std::string& out, const ColumnReader& col, std::string_view text) {
  if (!text.empty() && text.front() == '[') {
    const auto eq = text.find('=');
    if (eq == std::string_view::npos) return bad(col, "an array", text);
    text.remove_prefix(eq + 1);
  }
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return bad(col, "an array", text);
  text = text.substr(1, text.size() - 2);
  out.push_back('[');
  if (text.empty()) {
    out.push_back(']');
    return Status::ok();
  }
  const ColumnReader& el = *col.element;
  std::string item;
  std::size_t i = 0;
  bool first = true;
  while (true) {
    item.clear();
    bool quoted = false;
    if (i < text.size() && text[i] == '{') return bad(col, "a one-dimensional array", text);
    if (i < text.size() && text[i] == '"') {
      quoted = true;
      ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        item.push_back(text[i++]);
      }
      if (i >= text.size()) return bad(col, "an array", text);
      ++i;  // the closing quote
    } else {
      while (i < text.size() && text[i] != ',') item.push_back(text[i++]);
    }
    if (!first) out.push_back(',');
    first = false;
    if (!quoted && item == "NULL") {
      out += "null";
    } else {
      FERRY_RETURN_IF_ERROR(appendScalar(out, el, item));
    }
    if (i >= text.size()) break;
    if (text[i] != ',') return bad(col, "an array", text);
    ++i;
  }
  out.push_back(']');
  return Status::ok();
}

Status appendScalar(std::string& out, const ColumnReader& col, std::string_view text) {
  switch (col.kind) {
    case ValueKind::kInteger:
      if (!isJsonNumber(text) || text.find_first_of(".eE") != std::string_view::npos)
        return bad(col, "an integer", text);
      out.append(text);
      return Status::ok();
    case ValueKind::kFloat:
      if (text == "NaN" || text == "Infinity" || text == "-Infinity") {
        core::appendJsonString(out, text);
        return Status::ok();
      }
      if (!isJsonNumber(text)) return bad(col, "a number", text);
      out.append(text);
      return Status::ok();
    case ValueKind::kNumericAsDouble:
      if (!isJsonNumber(text)) return bad(col, "a finite number", text);
      out.append(text);
      return Status::ok();
    case ValueKind::kBoolean:
      if (text == "t" || text == "true") out += "true";
      else if (text == "f" || text == "false") out += "false";
      else return bad(col, "a boolean", text);
      return Status::ok();
    case ValueKind::kText:
      core::appendJsonString(out, text);
      return Status::ok();
    case ValueKind::kBytes: {
      auto bytes = parsePgBytea(text);
      if (!bytes) return bad(col, "bytea in hex form", text);
      out.push_back('"');
      out += core::base64Encode(*bytes);
      out.push_back('"');
      return Status::ok();
    }
    case ValueKind::kDecimal: {
      auto bytes = decimalUnscaledBytes(text, col.scale);
      if (!bytes) return bad(col, "a decimal with scale " + std::to_string(col.scale), text);
      out.push_back('"');
      out += core::base64Encode(*bytes);
      out.push_back('"');
      return Status::ok();
    }
    case ValueKind::kDate: {
      auto d = parsePgDate(text);
      if (!d) return bad(col, "a date", text);
      appendInt(out, *d);
      return Status::ok();
    }
    case ValueKind::kTime: {
      auto t = parsePgTime(text);
      if (!t) return bad(col, "a time", text);
      appendInt(out, *t / 1000);
      return Status::ok();
    }
    case ValueKind::kTimeTz: {
      std::size_t used = 0, zoneUsed = 0;
      auto t = timeAt(text, used);
      auto zone = t ? zoneAt(text.substr(used), zoneUsed) : std::nullopt;
      if (!t || !zone || used + zoneUsed != text.size()) return bad(col, "a time with time zone", text);
      constexpr std::int64_t kDay = 86400000000;
      std::int64_t utc = (*t - *zone * 1000000) % kDay;
      if (utc < 0) utc += kDay;
      appendInt(out, utc / 1000);
      return Status::ok();
    }
    case ValueKind::kTimestamp: {
      auto ts = parsePgTimestamp(text);
      if (!ts) return bad(col, "a timestamp", text);
      if (col.zone) ts = utcMicrosOfLocal(*col.zone, *ts);
      // Floor division: a timestamp before 1970 with a fraction rounds down, as Java's does.
      std::int64_t ms = *ts / 1000;
      if (*ts % 1000 < 0) --ms;
      appendInt(out, ms);
      return Status::ok();
    }
    case ValueKind::kArray:
      return appendArray(out, col, text);
    case ValueKind::kRawBytes:
      out.push_back('"');
      out += core::base64Encode(text);
      out.push_back('"');
      return Status::ok();
    case ValueKind::kBitFlag:
      if (text.size() != 1 || (text[0] != '\0' && text[0] != '\1')) return bad(col, "a BIT(1) value", "(binary)");
      out += text[0] == '\1' ? "true" : "false";
      return Status::ok();
    case ValueKind::kIntFlag:
      if (!isJsonNumber(text) || text.find_first_of(".eE") != std::string_view::npos)
        return bad(col, "an integer", text);
      out += text == "0" || text == "-0" ? "false" : "true";
      return Status::ok();
  }
  return bad(col, "readable", text);
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Result<NumericMapping> numericMappingOf(std::string_view name) {
  if (name == "none") return NumericMapping::kNone;
  if (name == "precision_only") return NumericMapping::kPrecisionOnly;
  if (name == "best_fit") return NumericMapping::kBestFit;
  return Status::invalidArgument("numeric.mapping must be none, precision_only or best_fit, not '" +
                                 std::string(name) + "'");
}

Result<ColumnReader> pgColumnReader(std::string name, unsigned oid, int typmod, bool optional,
                                    NumericMapping mapping, PgTypeLookup lookup, const void* lookupState,
                                    std::shared_ptr<const core::TimeZone> zone) {
  if (zone && zone->isUtc()) zone.reset();
  ColumnReader c;
  c.name = std::move(name);
  SchemaBuilder b = SchemaBuilder::string();
  unsigned element = arrayElement(oid);
  std::optional<PgTypeInfo> info;
  if (element == 0 && lookup) {
    info = lookup(oid, lookupState);
    if (info && info->category == 'A' && info->element != 0) element = info->element;
  }
  if (element != 0) {
    FERRY_ASSIGN_OR_RETURN(auto el, pgColumnReader(c.name, element, -1, true, mapping, lookup, lookupState, zone));
    if (el.kind == ValueKind::kArray) return Status::invalidArgument("column '" + c.name + "': arrays of arrays are not read");
    c.kind = ValueKind::kArray;
    b = SchemaBuilder::array(el.schema);
    c.element = std::make_shared<const ColumnReader>(std::move(el));
  } else {
    switch (oid) {
      case kInt2: c.kind = ValueKind::kInteger; b = SchemaBuilder::int16(); break;
      case kInt4: c.kind = ValueKind::kInteger; b = SchemaBuilder::int32(); break;
      case kInt8:
      case kOid: c.kind = ValueKind::kInteger; b = SchemaBuilder::int64(); break;
      case kFloat4: c.kind = ValueKind::kFloat; b = SchemaBuilder::float32(); break;
      case kFloat8: c.kind = ValueKind::kFloat; b = SchemaBuilder::float64(); break;
      case kBool: c.kind = ValueKind::kBoolean; b = SchemaBuilder::boolean(); break;
      case kBit:
        // bit(1) is a flag; wider bit strings stay text ("0101").
        if (typmod == 1) {
          c.kind = ValueKind::kBoolean;  // its text is '0' or '1' (appendValue)
          b = SchemaBuilder::boolean();
        }
        break;
      case kBytea: c.kind = ValueKind::kBytes; b = SchemaBuilder::bytes(); break;
      case kDate: c.kind = ValueKind::kDate; b = logical::date(); break;
      case kTime: c.kind = ValueKind::kTime; b = logical::time(); break;
      case kTimeTz: c.kind = ValueKind::kTimeTz; b = logical::time(); break;
      case kTimestamp:
        c.kind = ValueKind::kTimestamp;
        c.zone = zone;  // a wall clock: in db.timezone
        b = logical::timestamp();
        break;
      case kTimestampTz: c.kind = ValueKind::kTimestamp; b = logical::timestamp(); break;
      case kUuid: b = logical::uuid(); break;
      case kJson:
      case kJsonb: b = logical::json(); break;
      case kNumeric: {
        if (typmod < 4) {
          // NUMERIC without precision: any scale per value, which Decimal cannot carry. Exact
          // text, or float64 under best_fit.
          if (mapping == NumericMapping::kBestFit) {
            c.kind = ValueKind::kNumericAsDouble;
            b = SchemaBuilder::float64();
          }
          break;
        }
        const int precision = ((typmod - 4) >> 16) & 0xffff;
        const int scale = (((typmod - 4) & 0x7ff) ^ 1024) - 1024;  // negative scales since PostgreSQL 15
        if (mapping != NumericMapping::kNone && precision <= 18 && scale == 0) {
          c.kind = ValueKind::kInteger;
          b = precision <= 2 ? SchemaBuilder::int8()
              : precision <= 4 ? SchemaBuilder::int16()
              : precision <= 9 ? SchemaBuilder::int32()
                               : SchemaBuilder::int64();
        } else if (mapping == NumericMapping::kBestFit && precision <= 18 && scale > 0) {
          c.kind = ValueKind::kNumericAsDouble;
          b = SchemaBuilder::float64();
        } else if (scale >= 0) {
          c.kind = ValueKind::kDecimal;
          c.scale = scale;
          b = logical::decimal(scale);
        }  // a negative scale stays exact text
        break;
      }
      default:
        // char, varchar, text, name, interval, enums, money, inet, xml, ...: their text.
        break;
    }
  }
  if (optional) b.optional();
  FERRY_ASSIGN_OR_RETURN(c.schema, b.build());
  return c;
}

Result<ColumnReader> mysqlColumnReader(const MariaDbConnection::Column& m, bool optional, NumericMapping mapping,
                                       std::shared_ptr<const core::TimeZone> zone) {
  if (zone && zone->isUtc()) zone.reset();
  // enum_field_types and field flags of the MySQL protocol (mysql_com.h).
  enum : int {
    kDecimal = 0, kTiny = 1, kShort = 2, kLong = 3, kFloat = 4, kDouble = 5, kNull = 6, kTimestampT = 7,
    kLongLong = 8, kInt24 = 9, kDateT = 10, kTimeT = 11, kDateTime = 12, kYear = 13, kNewDate = 14,
    kVarChar = 15, kBitT = 16, kTimestamp2 = 17, kDateTime2 = 18, kTime2 = 19, kJsonT = 245,
    kNewDecimal = 246, kEnum = 247, kSet = 248, kTinyBlob = 249, kMediumBlob = 250, kLongBlob = 251,
    kBlob = 252, kVarString = 253, kString = 254, kGeometry = 255,
  };
  constexpr unsigned kUnsigned = 32, kEnumFlag = 256, kSetFlag = 2048;
  constexpr unsigned kBinaryCharset = 63;
  ColumnReader c;
  c.name = m.name;
  SchemaBuilder b = SchemaBuilder::string();
  const bool isUnsigned = (m.flags & kUnsigned) != 0;
  auto integer = [&](SchemaBuilder s) {
    c.kind = ValueKind::kInteger;
    b = std::move(s);
  };
  switch (m.type) {
    case kTiny:
      if (m.length == 1 && !isUnsigned) {  // TINYINT(1), BOOLEAN
        c.kind = ValueKind::kIntFlag;
        b = SchemaBuilder::boolean();
      } else {
        integer(isUnsigned ? SchemaBuilder::int16() : SchemaBuilder::int8());
      }
      break;
    case kShort: integer(isUnsigned ? SchemaBuilder::int32() : SchemaBuilder::int16()); break;
    case kInt24: integer(SchemaBuilder::int32()); break;
    case kLong: integer(isUnsigned ? SchemaBuilder::int64() : SchemaBuilder::int32()); break;
    case kYear: integer(SchemaBuilder::int32()); break;
    case kLongLong:
      if (isUnsigned) {  // up to 2^64 - 1: exact only as a Decimal
        c.kind = ValueKind::kDecimal;
        c.scale = 0;
        b = logical::decimal(0);
      } else {
        integer(SchemaBuilder::int64());
      }
      break;
    case kFloat: c.kind = ValueKind::kFloat; b = SchemaBuilder::float32(); break;
    case kDouble: c.kind = ValueKind::kFloat; b = SchemaBuilder::float64(); break;
    case kDecimal:
    case kNewDecimal: {
      const int scale = static_cast<int>(m.decimals);
      // The display length counts the digits, the point and (signed) the sign.
      const int precision = static_cast<int>(m.length) - (scale > 0 ? 1 : 0) - (isUnsigned ? 0 : 1);
      if (mapping != NumericMapping::kNone && precision <= 18 && scale == 0) {
        integer(precision <= 2   ? SchemaBuilder::int8()
                : precision <= 4 ? SchemaBuilder::int16()
                : precision <= 9 ? SchemaBuilder::int32()
                                 : SchemaBuilder::int64());
      } else if (mapping == NumericMapping::kBestFit && precision <= 18 && scale > 0) {
        c.kind = ValueKind::kNumericAsDouble;
        b = SchemaBuilder::float64();
      } else {
        c.kind = ValueKind::kDecimal;
        c.scale = scale;
        b = logical::decimal(scale);
      }
      break;
    }
    case kBitT:
      if (m.length == 1) {
        c.kind = ValueKind::kBitFlag;
        b = SchemaBuilder::boolean();
      } else {
        c.kind = ValueKind::kRawBytes;  // big-endian, ceil(n/8) bytes
        b = SchemaBuilder::bytes();
      }
      break;
    case kDateT:
    case kNewDate: c.kind = ValueKind::kDate; b = logical::date(); break;
    case kTimeT:
    case kTime2: c.kind = ValueKind::kTime; b = logical::time(); break;
    case kTimestampT:
    case kTimestamp2: c.kind = ValueKind::kTimestamp; b = logical::timestamp(); break;  // UTC (the session's)
    case kDateTime:
    case kDateTime2:
      c.kind = ValueKind::kTimestamp;
      c.zone = zone;  // a wall clock: in db.timezone
      b = logical::timestamp();
      break;
    case kJsonT: b = logical::json(); break;
    case kGeometry: c.kind = ValueKind::kRawBytes; b = SchemaBuilder::bytes(); break;
    case kNull: break;
    case kEnum:
    case kSet: break;
    case kVarChar:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
    case kBlob:
    case kVarString:
    case kString:
      if (m.flags & (kEnumFlag | kSetFlag)) break;
      if (m.typeName == "uuid") {
        b = logical::uuid();
      } else if (m.format == "json") {
        b = logical::json();
      } else if (m.charsetnr == kBinaryCharset && m.typeName.empty()) {
        c.kind = ValueKind::kRawBytes;
        b = SchemaBuilder::bytes();
      }
      break;
    default:
      break;  // anything else: its text
  }
  if (optional) b.optional();
  FERRY_ASSIGN_OR_RETURN(c.schema, b.build());
  return c;
}

Status appendValue(std::string& out, const ColumnReader& col, std::string_view text) {
  if (col.kind == ValueKind::kBoolean && (text == "1" || text == "0")) {  // bit(1)
    out += text == "1" ? "true" : "false";
    return Status::ok();
  }
  return appendScalar(out, col, text);
}

std::optional<std::int64_t> parsePgDate(std::string_view text) {
  const bool bc = endsWithBc(text);
  std::size_t used = 0;
  // Year 1 BC is year 0: the year's digits are read as they are, then moved.
  std::size_t y = 0;
  while (y < text.size() && text[y] >= '0' && text[y] <= '9') ++y;
  auto year = digits(text, 0, y);
  auto days = dateAt(text, used);
  if (!days || used != text.size()) return std::nullopt;
  if (bc) {
    auto month = digits(text, y + 1, 2), day = digits(text, y + 4, 2);
    return daysFromCivil(1 - *year, *month, *day);
  }
  return days;
}

std::optional<std::int64_t> parsePgTime(std::string_view text) {
  std::size_t used = 0;
  auto t = timeAt(text, used);
  if (!t || used != text.size()) return std::nullopt;
  return t;
}

std::optional<std::int64_t> parsePgTimestamp(std::string_view text) {
  const bool bc = endsWithBc(text);
  std::size_t used = 0;
  auto days = dateAt(text, used);
  if (!days || used >= text.size() || (text[used] != ' ' && text[used] != 'T')) return std::nullopt;
  if (bc) {
    std::size_t y = 0;
    while (text[y] >= '0' && text[y] <= '9') ++y;
    days = daysFromCivil(1 - *digits(text, 0, y), *digits(text, y + 1, 2), *digits(text, y + 4, 2));
  }
  std::string_view rest = text.substr(used + 1);
  std::size_t timeUsed = 0;
  auto t = timeAt(rest, timeUsed);
  if (!t) return std::nullopt;
  std::int64_t micros = *days * 86400000000 + *t;
  rest.remove_prefix(timeUsed);
  if (!rest.empty()) {
    std::size_t zoneUsed = 0;
    auto zone = zoneAt(rest, zoneUsed);
    if (!zone || zoneUsed != rest.size()) return std::nullopt;
    micros -= *zone * 1000000;
  }
  return micros;
}

std::pair<std::int64_t, std::int64_t> timestampOffsetOfMicros(std::int64_t micros) {
  return {floorDiv(micros, 1000), (micros - floorDiv(micros, 1000000) * 1000000) * 1000};
}

std::int64_t microsOfTimestampOffset(std::int64_t ms, std::optional<std::int64_t> nanos) {
  if (!nanos) return ms * 1000;
  return floorDiv(ms, 1000) * 1000000 + *nanos / 1000;
}

std::string timestampMicrosText(std::int64_t micros) {
  const std::int64_t days = floorDiv(micros, 86400000000);
  std::int64_t rest = micros - days * 86400000000;
  // Civil from days (proleptic Gregorian).
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t m = mp + (mp < 10 ? 3 : -9);
  const std::int64_t y = yoe + era * 400 + (m <= 2);
  const std::int64_t us = rest % 1000000;
  rest /= 1000000;
  char buf[64];
  const bool bc = y <= 0;
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%06lld%s",
                static_cast<long long>(bc ? 1 - y : y), static_cast<long long>(m), static_cast<long long>(d),
                static_cast<long long>(rest / 3600), static_cast<long long>(rest / 60 % 60),
                static_cast<long long>(rest % 60), static_cast<long long>(us), bc ? " BC" : "");
  return buf;
}

std::optional<std::string> decimalUnscaledBytes(std::string_view text, std::int32_t scale) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || scale < 0) return std::nullopt;
  // The unscaled value's decimal digits.
  std::vector<std::uint8_t> dec;
  dec.reserve(text.size() + static_cast<std::size_t>(scale));
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') dec.push_back(static_cast<std::uint8_t>(text[i++] - '0'));
  if (dec.empty()) return std::nullopt;
  std::int32_t frac = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      dec.push_back(static_cast<std::uint8_t>(text[i++] - '0'));
      ++frac;
    }
  }
  if (i != text.size()) return std::nullopt;
  // Fraction digits beyond the scale must be zeros (PostgreSQL pads to the column's scale).
  while (frac > scale) {
    if (dec.back() != 0) return std::nullopt;
    dec.pop_back();
    --frac;
  }
  for (; frac < scale; ++frac) dec.push_back(0);
  // Decimal digits to base 256, least significant byte first.
  std::vector<std::uint8_t> bin;
  std::size_t start = 0;
  while (start < dec.size() && dec[start] == 0) ++start;
  while (start < dec.size()) {
    unsigned rem = 0;
    for (std::size_t k = start; k < dec.size(); ++k) {
      const unsigned cur = rem * 10 + dec[k];
      dec[k] = static_cast<std::uint8_t>(cur / 256);
      rem = cur % 256;
    }
    bin.push_back(static_cast<std::uint8_t>(rem));
    while (start < dec.size() && dec[start] == 0) ++start;
  }
  if (negative) {  // two's complement of the magnitude
    bool carry = true;
    for (auto& b : bin) {
      b = static_cast<std::uint8_t>(~b);
      if (carry) carry = ++b == 0;
    }
    if (bin.empty() || (bin.back() & 0x80) == 0) bin.push_back(0xff);
  } else if (bin.empty() || (bin.back() & 0x80) != 0) {
    bin.push_back(0);
  }
  // Shortest form: drop leading bytes that only repeat the sign (Java's BigInteger.toByteArray).
  while (bin.size() > 1) {
    const std::uint8_t top = bin.back(), next = bin[bin.size() - 2];
    if ((top == 0 && (next & 0x80) == 0) || (top == 0xff && (next & 0x80) != 0)) bin.pop_back();
    else break;
  }
  return std::string(bin.rbegin(), bin.rend());
}

std::optional<std::string> parsePgBytea(std::string_view text) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve((text.size() - 2) / 2);
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 2; i < text.size(); i += 2) {
    const int hi = hex(text[i]), lo = hex(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::int64_t utcMicrosOfLocal(const core::TimeZone& zone, std::int64_t localMicros) {
  const std::int64_t seconds = floorDiv(localMicros, 1000000);
  return zone.utcOfLocal(seconds) * 1000000 + (localMicros - seconds * 1000000);
}

std::int64_t localMicrosOfUtc(const core::TimeZone& zone, std::int64_t utcMicros) {
  return utcMicros + std::int64_t{zone.offsetAt(floorDiv(utcMicros, 1000000))} * 1000000;
}

}  // namespace ferry::connectors::jdbc
