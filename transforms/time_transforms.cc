// TimestampConverter (see time_transforms.h).
//
// Formatting reuses TimestampRouter's compiled SimpleDateFormat tokens so both transforms accept
// and print the same letters. Parsing is strict where Java's SimpleDateFormat is lenient by
// default (no month 13 rolling into the next year, no ignored trailing text): a timestamp that
// is silently shifted is worse in a pipeline than a record on the dead-letter topic.
#include "transforms/time_transforms.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "core/civil_date.h"

namespace ferry::transforms {
namespace {

constexpr std::int64_t kDayMs = 86'400'000;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

const char* const kMonthNames[] = {"January", "February", "March",     "April",   "May",      "June",
                                   "July",    "August",   "September", "October", "November", "December"};

using core::daysFromCivil;  // core/civil_date.h

int daysInMonth(std::int64_t y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && core::leapYear(y) ? 29 : kDays[m - 1];
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

struct Fields {
  std::int64_t year = 1970;
  int month = 1, day = 1, hour = 0, minute = 0, second = 0, milli = 0;
};

// Epoch milliseconds of `f` (UTC), or what is out of range.
Result<std::int64_t> toEpochMs(const Fields& f) {
  if (f.year < -292'000'000 || f.year > 292'000'000)
    return Status::invalidArgument("year " + std::to_string(f.year) + " is out of range");
  if (f.month < 1 || f.month > 12)
    return Status::invalidArgument("month " + std::to_string(f.month) + " is out of range");
  if (f.day < 1 || f.day > daysInMonth(f.year, f.month))
    return Status::invalidArgument("day " + std::to_string(f.day) + " is out of range for month " +
                                   std::to_string(f.month));
  if (f.hour > 23) return Status::invalidArgument("hour " + std::to_string(f.hour) + " is out of range");
  if (f.minute > 59) return Status::invalidArgument("minute " + std::to_string(f.minute) + " is out of range");
  if (f.second > 59) return Status::invalidArgument("second " + std::to_string(f.second) + " is out of range");
  if (f.milli > 999)
    return Status::invalidArgument("millisecond " + std::to_string(f.milli) + " is out of range");
  const std::int64_t days = daysFromCivil(f.year, f.month, f.day);
  return ((days * 24 + f.hour) * 60 + f.minute) * 60'000 + f.second * 1000 + f.milli;
}

std::string at(std::size_t pos) { return "at character " + std::to_string(pos + 1); }

// Reads 1..maxDigits decimal digits at `pos`.
std::optional<std::int64_t> readNumber(std::string_view s, std::size_t& pos, std::size_t maxDigits) {
  std::int64_t v = 0;
  const std::size_t start = pos;
  while (pos < s.size() && pos - start < maxDigits && std::isdigit(static_cast<unsigned char>(s[pos])))
    v = v * 10 + (s[pos++] - '0');
  if (pos == start) return std::nullopt;
  return v;
}

bool isNumericToken(const TimestampRouter::Token& t) {
  return t.letter != 0 && !(t.letter == 'M' && t.count >= 3);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Parsing

Result<std::int64_t> TimestampConverter::parsePattern(const std::vector<TimestampRouter::Token>& tokens,
                                                      std::string_view text) {
  Fields f;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const TimestampRouter::Token& t = tokens[i];
    if (t.letter == 0) {
      if (text.substr(pos, t.text.size()) != t.text)
        return Status::invalidArgument("expected '" + t.text + "' " + at(pos));
      pos += t.text.size();
      continue;
    }
    if (t.letter == 'M' && t.count >= 3) {  // a month name, full or abbreviated, any case
      bool found = false;
      for (int m = 0; m < 12 && !found; ++m) {
        const std::string_view full(kMonthNames[m]);
        for (std::size_t len : {full.size(), std::size_t{3}}) {
          if (text.size() - pos < len) continue;
          bool same = true;
          for (std::size_t k = 0; k < len && same; ++k)
            same = std::tolower(static_cast<unsigned char>(text[pos + k])) ==
                   std::tolower(static_cast<unsigned char>(full[k]));
          if (same) {
            f.month = m + 1;
            pos += len;
            found = true;
            break;
          }
        }
      }
      if (!found) return Status::invalidArgument("expected a month name " + at(pos));
      continue;
    }
    // Like SimpleDateFormat: a number directly followed by another number field has exactly its
    // pattern width (yyyyMMdd); otherwise it takes all the digits there are.
    const bool fixed = i + 1 < tokens.size() && isNumericToken(tokens[i + 1]);
    const std::size_t start = pos;
    auto v = readNumber(text, pos, fixed ? static_cast<std::size_t>(t.count) : 9);
    if (!v || (fixed && pos - start != static_cast<std::size_t>(t.count)))
      return Status::invalidArgument("expected " + (fixed ? std::to_string(t.count) + " digit(s)" : "a number") +
                                     " for '" + std::string(static_cast<std::size_t>(t.count), t.letter) + "' " +
                                     at(start));
    switch (t.letter) {
      case 'y': f.year = (t.count == 2 && pos - start == 2) ? 2000 + *v : *v; break;
      case 'M': f.month = static_cast<int>(*v); break;
      case 'd': f.day = static_cast<int>(*v); break;
      case 'H': f.hour = static_cast<int>(*v); break;
      case 'm': f.minute = static_cast<int>(*v); break;
      case 's': f.second = static_cast<int>(*v); break;
      case 'S': f.milli = static_cast<int>(*v); break;
      default: break;
    }
  }
  if (pos != text.size()) return Status::invalidArgument("unexpected text " + at(pos));
  return toEpochMs(f);
}

Result<std::int64_t> TimestampConverter::parseIso8601(std::string_view s) {
  Fields f;
  std::size_t pos = 0;
  auto expect = [&](char c) -> Status {
    if (pos >= s.size() || s[pos] != c)
      return Status::invalidArgument(std::string("expected '") + c + "' " + at(pos));
    ++pos;
    return Status::ok();
  };
  auto number = [&](std::size_t digits, const char* what) -> Result<int> {
    const std::size_t start = pos;
    auto v = readNumber(s, pos, digits);
    if (!v || pos - start != digits)
      return Status::invalidArgument("expected " + std::to_string(digits) + " digits for the " + what + " " +
                                     at(start));
    return static_cast<int>(*v);
  };
  FERRY_ASSIGN_OR_RETURN(auto year, number(4, "year"));
  f.year = year;
  FERRY_RETURN_IF_ERROR(expect('-'));
  FERRY_ASSIGN_OR_RETURN(f.month, number(2, "month"));
  FERRY_RETURN_IF_ERROR(expect('-'));
  FERRY_ASSIGN_OR_RETURN(f.day, number(2, "day"));
  std::int64_t offsetMin = 0;
  if (pos < s.size()) {
    if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ')
      return Status::invalidArgument("expected 'T' " + at(pos));
    ++pos;
    FERRY_ASSIGN_OR_RETURN(f.hour, number(2, "hour"));
    FERRY_RETURN_IF_ERROR(expect(':'));
    FERRY_ASSIGN_OR_RETURN(f.minute, number(2, "minute"));
    if (pos < s.size() && s[pos] == ':') {
      ++pos;
      FERRY_ASSIGN_OR_RETURN(f.second, number(2, "second"));
      if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
        ++pos;
        const std::size_t start = pos;
        int ms = 0;
        while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
          if (pos - start < 3) ms = ms * 10 + (s[pos] - '0');  // digits below 1 ms are dropped
          ++pos;
        }
        if (pos == start) return Status::invalidArgument("expected fraction digits " + at(pos));
        for (std::size_t n = pos - start; n < 3; ++n) ms *= 10;
        f.milli = ms;
      }
    }
    if (pos < s.size()) {
      if (s[pos] == 'Z' || s[pos] == 'z') {
        ++pos;
      } else if (s[pos] == '+' || s[pos] == '-') {
        const int sign = s[pos] == '-' ? -1 : 1;
        ++pos;
        FERRY_ASSIGN_OR_RETURN(auto hh, number(2, "zone hours"));
        int mm = 0;
        if (pos < s.size()) {
          if (s[pos] == ':') ++pos;
          FERRY_ASSIGN_OR_RETURN(mm, number(2, "zone minutes"));
        }
        if (hh > 18 || mm > 59) return Status::invalidArgument("zone offset out of range");
        offsetMin = sign * (hh * 60 + mm);
      } else {
        return Status::invalidArgument("expected a zone (Z, +hh:mm) " + at(pos));
      }
    }
  }
  if (pos != s.size()) return Status::invalidArgument("unexpected text " + at(pos));
  FERRY_ASSIGN_OR_RETURN(auto ms, toEpochMs(f));
  return ms - offsetMin * 60'000;
}

// ---------------------------------------------------------------------------------------------
// TimestampConverter

const ConfigDef& TimestampConverter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("field", ConfigType::kString, "", Importance::kHigh,
             "The top-level field holding the timestamp; empty: the whole key/value is the timestamp.");
    d.define("target.type", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The output: string, unix, or Date, Time, Timestamp (epoch milliseconds: the UTC day, the "
             "time within the UTC day, the instant; on a record with a schema, Kafka Connect's Date, Time and "
             "Timestamp types, and the field's schema changes with it).",
             validators::oneOf({"string", "unix", "Date", "Time", "Timestamp"}, /*caseInsensitive=*/false));
    d.define("format", ConfigType::kString, "", Importance::kMedium,
             "SimpleDateFormat pattern (letters y M d H m s S, 'quoted' text; UTC) to parse string input "
             "and to write target.type=string; empty: ISO-8601 (output yyyy-MM-dd'T'HH:mm:ss.SSS'Z').",
             [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
               const auto* s = std::get_if<std::string>(&v);
               if (!s) return name + ": must be a string";
               if (s->empty()) return std::nullopt;
               auto c = TimestampRouter::compile(*s);
               if (!c.isOk())
                 return "Invalid value " + *s + " for configuration " + name + ": " + c.status().message();
               return std::nullopt;
             });
    d.define("unix.precision", ConfigType::kString, "milliseconds", Importance::kLow,
             "Unit of unix timestamps read (numbers) and written (target.type=unix): seconds, milliseconds, "
             "microseconds or nanoseconds. Below a millisecond is lost.",
             validators::oneOf({"seconds", "milliseconds", "microseconds", "nanoseconds"}, false));
    d.define("replace.null.with.default", ConfigType::kBool, "true", Importance::kLow,
             "Kafka's switch for schema defaults of null fields; accepted for compatibility, no effect "
             "(a null stays null).");
    return d;
  }();
  return def;
}

Status TimestampConverter::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, name_));
  field_ = p.getString("field");
  const std::string t = p.getString("target.type");
  target_ = t == "string" ? Target::kString
            : t == "unix" ? Target::kUnix
            : t == "Date" ? Target::kDate
            : t == "Time" ? Target::kTime
                          : Target::kTimestamp;
  const std::string u = p.getString("unix.precision");
  precision_ = u == "seconds" ? Precision::kSeconds
               : u == "microseconds" ? Precision::kMicros
               : u == "nanoseconds" ? Precision::kNanos
                                    : Precision::kMillis;
  pattern_ = p.getString("format");
  FERRY_ASSIGN_OR_RETURN(tokens_, TimestampRouter::compile(pattern_.empty() ? "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
                                                                            : pattern_));
  return Status::ok();
}

Result<std::int64_t> TimestampConverter::toMillis(const Json& in) const {
  if (in.is_number_integer()) {
    if (in.is_number_unsigned() && in.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax))
      return Status::invalidArgument("unix time " + dumpJson(in) + " is out of range");
    const std::int64_t v = in.get<std::int64_t>();
    switch (precision_) {  // toward zero, as Kafka's TimeUnit conversions
      case Precision::kSeconds:
        if (v > kMax / 1000 || v < -kMax / 1000)
          return Status::invalidArgument("unix time " + std::to_string(v) + " s is out of range");
        return v * 1000;
      case Precision::kMillis: return v;
      case Precision::kMicros: return v / 1000;
      case Precision::kNanos: return v / 1'000'000;
    }
  }
  if (in.is_number()) {
    const double d = in.get<double>();
    const double scale = precision_ == Precision::kSeconds ? 1000.0
                         : precision_ == Precision::kMillis ? 1.0
                         : precision_ == Precision::kMicros ? 1e-3
                                                            : 1e-6;
    const double ms = d * scale;
    if (!std::isfinite(ms) || std::fabs(ms) >= 9.2e18)
      return Status::invalidArgument("unix time " + dumpJson(in) + " is out of range");
    return static_cast<std::int64_t>(std::llround(ms));
  }
  if (in.is_string()) {
    const std::string& s = in.get_ref<const std::string&>();
    auto r = pattern_.empty() ? parseIso8601(s) : parsePattern(tokens_, s);
    if (!r.isOk())
      return Status::invalidArgument(
          "'" + s + "' " + (pattern_.empty() ? std::string("is not ISO-8601") : "does not match format '" + pattern_ + "'") +
          " (" + r.status().message() + ")");
    return r;
  }
  return Status::invalidArgument(std::string("a JSON ") + in.type_name() +
                                 " is not a timestamp (expected a number or a string)");
}

Result<Json> TimestampConverter::convert(const Json& in, const Schema* inSchema, bool typed) const {
  std::int64_t ms = 0;
  const std::string_view logicalIn = inSchema ? inSchema->logicalName() : std::string_view();
  if (logicalIn == logical::kDate || logicalIn == logical::kTime || logicalIn == logical::kTimestamp) {
    if (!in.is_number_integer()) return Status::invalidArgument("a " + inSchema->describe() + " that is not an integer");
    const std::int64_t v = in.get<std::int64_t>();
    if (logicalIn == logical::kDate && (v > kMax / kDayMs || v < -kMax / kDayMs))
      return Status::invalidArgument("a Date out of range");
    ms = logicalIn == logical::kDate ? v * kDayMs : v;
  } else {
    FERRY_ASSIGN_OR_RETURN(ms, toMillis(in));
  }
  switch (target_) {
    case Target::kString: return Json(TimestampRouter::format(tokens_, ms));
    case Target::kTimestamp: return Json(ms);
    case Target::kDate: return typed ? Json(floorDiv(ms, kDayMs)) : Json(floorDiv(ms, kDayMs) * kDayMs);
    case Target::kTime: return Json(ms - floorDiv(ms, kDayMs) * kDayMs);
    case Target::kUnix:
      switch (precision_) {
        case Precision::kSeconds: return Json(ms / 1000);
        case Precision::kMillis: return Json(ms);
        case Precision::kMicros:
        case Precision::kNanos: {
          const std::int64_t factor = precision_ == Precision::kMicros ? 1000 : 1'000'000;
          if (ms > kMax / factor || ms < -kMax / factor)
            return Status::invalidArgument("the time does not fit a 64-bit unix time in " +
                                           std::string(precision_ == Precision::kMicros ? "microseconds" : "nanoseconds"));
          return Json(ms * factor);
        }
      }
  }
  return Status::internal("unknown target type");
}

Result<SchemaPtr> TimestampConverter::outputSchema(const Schema& in) const {
  SchemaBuilder b = target_ == Target::kString ? SchemaBuilder::string()
                    : target_ == Target::kUnix ? SchemaBuilder::int64()
                    : target_ == Target::kDate ? logical::date()
                    : target_ == Target::kTime ? logical::time()
                                               : logical::timestamp();
  return b.optional(in.optional()).build();
}

Result<bool> TimestampConverter::applyJson(Record& record, JsonCache& cache) {
  const Side target = onKey_ ? Side::kKey : Side::kValue;
  Bytes& b = onKey_ ? record.key : record.value;
  const char* side = onKey_ ? "key" : "value";
  // A record with a schema: the converted field's (or the whole side's) schema becomes the
  // target type's, as Kafka's TimestampConverter does in its schema'd mode, nulls included.
  SchemaPtr& schema = onKey_ ? record.keySchema : record.valueSchema;
  const Schema* inSchema = nullptr;
  if (schema) {
    if (!field_.empty()) {
      FERRY_RETURN_IF_ERROR(needStruct(*schema, name_, side));
      const SchemaField* f = schema->field(field_);
      if (!f)
        return Status::invalidArgument(name_ + ": the " + side + "'s schema has no field '" + field_ + "' (topic '" +
                                       record.topic + "')");
      inSchema = f->schema.get();
    } else {
      inSchema = schema.get();
    }
  }
  const SchemaPtr keepIn = schema;  // the input schema stays alive while `inSchema` is read
  if (schema) {
    FERRY_ASSIGN_OR_RETURN(schema, memo_.get(schema, [&](const Schema& old) -> Result<SchemaPtr> {
      if (field_.empty()) return outputSchema(old);
      return rebuildStruct(old, [&](SchemaBuilder& sb) -> Status {
        for (const auto& f : old.fields()) {
          if (f.name != field_) {
            sb.field(f.name, f.schema);
            continue;
          }
          FERRY_ASSIGN_OR_RETURN(auto out, outputSchema(*f.schema));
          sb.field(f.name, out);
        }
        return Status::ok();
      });
    }));
  }
  const bool typed = keepIn != nullptr;
  if (b.isNull()) return true;
  auto fail = [&](const std::string& where, const Status& why) -> Status {
    return Status::invalidArgument(name_ + ": cannot convert " + where + " of a record in topic '" + record.topic +
                                   "': " + why.message());
  };
  Json* doc = cache.get(record, target);  // null: not JSON (the bytes are then current)
  if (field_.empty()) {
    // The whole key/value: JSON when it parses, else its text is the timestamp string.
    const bool quoted = doc && doc->is_string();
    const Json in = doc ? *doc : Json(b.str());
    if (in.is_null()) return true;
    auto out = convert(in, inSchema, typed);
    if (!out.isOk()) return fail(std::string("the ") + side, out.status());
    if (out->is_string() && !quoted) cache.setBytes(record, target, Bytes(out->get<std::string>()));
    else cache.set(record, target, std::move(*out));
    return true;
  }
  if (!doc || !doc->is_object())
    return Status::invalidArgument(name_ + ": the " + side + " of a record in topic '" + record.topic +
                                   "' is not a JSON object (" +
                                   (doc ? std::string("a JSON ") + doc->type_name() : "not JSON") +
                                   "); field '" + field_ + "' needs one");
  auto it = doc->find(field_);
  if (it == doc->end() || it->is_null()) return true;  // Kafka would add a null; we invent no field
  auto out = convert(*it, inSchema, typed);
  if (!out.isOk()) return fail("field '" + field_ + "' of the " + side, out.status());
  *it = std::move(*out);
  cache.changed(target);
  return true;
}

}  // namespace ferry::transforms
