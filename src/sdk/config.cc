// ferry connector SDK — ConfigDef, ParsedConfig and validators (see include/ferry/config.h).
//
// Standard library only: plugins link this file's library and nothing else of ferry.
#include "ferry/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ferry {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<double> asNumber(const ConfigValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

std::string formatNumber(double d) {
  if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  std::ostringstream os;
  os << d;
  return os.str();
}

}  // namespace

const char* configTypeName(ConfigType t) noexcept {
  switch (t) {
    case ConfigType::kString: return "STRING";
    case ConfigType::kInt: return "INT";
    case ConfigType::kLong: return "LONG";
    case ConfigType::kDouble: return "DOUBLE";
    case ConfigType::kBool: return "BOOLEAN";
    case ConfigType::kList: return "LIST";
    case ConfigType::kPassword: return "PASSWORD";
    case ConfigType::kClass: return "CLASS";
  }
  return "STRING";
}

const char* importanceName(Importance i) noexcept {
  switch (i) {
    case Importance::kHigh: return "HIGH";
    case Importance::kMedium: return "MEDIUM";
    case Importance::kLow: return "LOW";
  }
  return "MEDIUM";
}

// ---------------------------------------------------------------------------------------------
// ParsedConfig

const ConfigValue* ParsedConfig::get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::string ParsedConfig::getString(const std::string& name) const {
  const ConfigValue* v = get(name);
  if (!v) return {};
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  return ConfigDef::toText(*v);
}

std::int64_t ParsedConfig::getLong(const std::string& name) const {
  const ConfigValue* v = get(name);
  if (!v) return 0;
  if (const auto* i = std::get_if<std::int64_t>(v)) return *i;
  if (const auto* d = std::get_if<double>(v)) return static_cast<std::int64_t>(*d);
  if (const auto* b = std::get_if<bool>(v)) return *b ? 1 : 0;
  return 0;
}

double ParsedConfig::getDouble(const std::string& name) const {
  const ConfigValue* v = get(name);
  if (!v) return 0;
  if (auto n = asNumber(*v)) return *n;
  return 0;
}

bool ParsedConfig::getBool(const std::string& name) const {
  const ConfigValue* v = get(name);
  if (!v) return false;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  return false;
}

std::vector<std::string> ParsedConfig::getList(const std::string& name) const {
  const ConfigValue* v = get(name);
  if (!v) return {};
  if (const auto* l = std::get_if<std::vector<std::string>>(v)) return *l;
  if (const auto* s = std::get_if<std::string>(v)) {
    auto parsed = ConfigDef::parseValue(ConfigType::kList, *s);
    if (parsed.isOk()) return std::get<std::vector<std::string>>(*parsed);
  }
  return {};
}

StringMap ParsedConfig::originalsWithPrefix(std::string_view prefix) const {
  StringMap out;
  for (const auto& [k, v] : originals_)
    if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0)
      out.emplace(k.substr(prefix.size()), v);
  return out;
}

// ---------------------------------------------------------------------------------------------
// ConfigValidation

std::size_t ConfigValidation::errorCount() const noexcept {
  std::size_t n = unknownKeys.size();
  for (const auto& [k, msgs] : errors) n += msgs.size();
  return n;
}

std::string ConfigValidation::summary() const {
  const std::size_t n = errorCount();
  if (n == 0) return "no errors";
  std::string out = std::to_string(n) + (n == 1 ? " error: " : " errors: ");
  bool first = true;
  for (const auto& [k, msgs] : errors) {
    for (const auto& m : msgs) {
      if (!first) out += "; ";
      first = false;
      out += k + ": " + m;
    }
  }
  for (const auto& k : unknownKeys) {
    if (!first) out += "; ";
    first = false;
    out += "unknown key '" + k + "'";
  }
  return out;
}

void ConfigValidation::merge(const ConfigValidation& other) {
  for (const auto& [k, msgs] : other.errors)
    for (const auto& m : msgs) {
      auto& mine = errors[k];
      if (std::find(mine.begin(), mine.end(), m) == mine.end()) mine.push_back(m);
    }
  for (const auto& k : other.unknownKeys)
    if (std::find(unknownKeys.begin(), unknownKeys.end(), k) == unknownKeys.end())
      unknownKeys.push_back(k);
}

// ---------------------------------------------------------------------------------------------
// ConfigDef

ConfigDef& ConfigDef::localPath(std::string_view name, LocalPath access) {
  for (auto& k : keys_)
    if (k.name == name) k.localPath = access;
  return *this;
}

ConfigDef& ConfigDef::define(ConfigKey key) {
  auto it = std::find_if(keys_.begin(), keys_.end(), [&](const ConfigKey& k) { return k.name == key.name; });
  if (it != keys_.end()) {
    *it = std::move(key);  // a later definition overrides (e.g. a connector narrowing a framework key)
  } else {
    keys_.push_back(std::move(key));
  }
  return *this;
}

ConfigDef& ConfigDef::define(std::string name, ConfigType type, std::optional<std::string> defaultValue,
                             Importance importance, std::string documentation, Validator validator) {
  ConfigKey k;
  k.name = std::move(name);
  k.type = type;
  k.defaultValue = std::move(defaultValue);
  k.importance = importance;
  k.documentation = std::move(documentation);
  k.validator = std::move(validator);
  return define(std::move(k));
}

ConfigDef& ConfigDef::include(const ConfigDef& other) {
  for (const auto& k : other.keys_) define(k);
  for (const auto& p : other.prefixes_) allowPrefix(p);
  return *this;
}

ConfigDef& ConfigDef::allowPrefix(std::string prefix) {
  if (std::find(prefixes_.begin(), prefixes_.end(), prefix) == prefixes_.end())
    prefixes_.push_back(std::move(prefix));
  return *this;
}

const ConfigKey* ConfigDef::find(std::string_view name) const noexcept {
  for (const auto& k : keys_)
    if (k.name == name) return &k;
  return nullptr;
}

Result<ConfigValue> ConfigDef::parseValue(ConfigType type, std::string_view text) {
  const std::string t = trim(text);
  switch (type) {
    case ConfigType::kString:
    case ConfigType::kPassword:
      return ConfigValue(std::string(text));
    case ConfigType::kClass:
      return ConfigValue(t);
    case ConfigType::kInt:
    case ConfigType::kLong: {
      std::int64_t v = 0;
      const char* b = t.data();
      const char* e = t.data() + t.size();
      if (!t.empty() && *b == '+') ++b;
      auto [p, ec] = std::from_chars(b, e, v);
      if (t.empty() || ec != std::errc() || p != e)
        return Status::invalidArgument("'" + std::string(text) + "' is not " +
                                       (type == ConfigType::kInt ? "an integer" : "a long integer"));
      if (type == ConfigType::kInt && (v < INT32_MIN || v > INT32_MAX))
        return Status::invalidArgument("'" + std::string(text) + "' is out of range for an integer");
      return ConfigValue(v);
    }
    case ConfigType::kDouble: {
      if (t.empty()) return Status::invalidArgument("'' is not a number");
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(t.c_str(), &end);
      if (end != t.c_str() + t.size() || errno == ERANGE || std::isnan(v))
        return Status::invalidArgument("'" + std::string(text) + "' is not a number");
      return ConfigValue(v);
    }
    case ConfigType::kBool: {
      const std::string l = lower(t);
      if (l == "true") return ConfigValue(true);
      if (l == "false") return ConfigValue(false);
      return Status::invalidArgument("'" + std::string(text) + "' is not a boolean (true or false)");
    }
    case ConfigType::kList: {
      std::vector<std::string> items;
      if (t.empty()) return ConfigValue(items);
      std::size_t start = 0;
      while (true) {
        const std::size_t comma = t.find(',', start);
        std::string item = trim(std::string_view(t).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!item.empty()) items.push_back(std::move(item));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return ConfigValue(std::move(items));
    }
  }
  return Status::internal("unknown config type");
}

std::string ConfigDef::toText(const ConfigValue& value) {
  struct Visitor {
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return formatNumber(d); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string out;
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (i) out += ",";
        out += l[i];
      }
      return out;
    }
  };
  return std::visit(Visitor{}, value);
}

namespace {

bool underPrefix(const std::string& key, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    if (key.size() >= p.size() && key.compare(0, p.size(), p) == 0) return true;
  return false;
}

}  // namespace

ConfigValidation ConfigDef::validate(const StringMap& props, const std::vector<std::string>& allowedPrefixes) const {
  ConfigValidation out;
  for (const auto& key : keys_) {
    auto it = props.find(key.name);
    std::optional<std::string> text;
    if (it != props.end()) {
      text = it->second;
    } else if (key.defaultValue) {
      // An empty default of a number or boolean key is Kafka's "default null" (a Java
      // connector's optional key, say): nothing to check.
      const bool textual = key.type == ConfigType::kString || key.type == ConfigType::kPassword ||
                           key.type == ConfigType::kList || key.type == ConfigType::kClass;
      if (key.defaultValue->empty() && !textual) continue;
      text = key.defaultValue;
    }
    if (!text) {
      out.errors[key.name].push_back("Missing required configuration \"" + key.name +
                                     "\" which has no default value.");
      continue;
    }
    auto parsed = parseValue(key.type, *text);
    if (!parsed.isOk()) {
      out.errors[key.name].push_back("Invalid value " + *text + " for configuration " + key.name + ": " +
                                     parsed.status().message());
      continue;
    }
    // Defaults are trusted; validators run on given values and on non-empty defaults alike.
    if (key.validator) {
      if (auto err = key.validator(key.name, *parsed)) out.errors[key.name].push_back(*err);
    }
  }
  for (const auto& [k, v] : props) {
    if (find(k) == nullptr && !underPrefix(k, allowedPrefixes) && !underPrefix(k, prefixes_))
      out.unknownKeys.push_back(k);
  }
  return out;
}

Result<ParsedConfig> ConfigDef::parse(const StringMap& props, bool rejectUnknown,
                                      const std::vector<std::string>& allowedPrefixes) const {
  ConfigValidation v = validate(props, allowedPrefixes);
  if (!rejectUnknown) v.unknownKeys.clear();
  if (!v.ok()) return Status::invalidArgument(v.summary());
  std::map<std::string, ConfigValue> values;
  for (const auto& key : keys_) {
    auto it = props.find(key.name);
    const std::string& text = it != props.end() ? it->second : *key.defaultValue;
    auto parsed = parseValue(key.type, text);
    if (!parsed.isOk()) return parsed.status().withContext(key.name);
    values.emplace(key.name, std::move(*parsed));
  }
  return ParsedConfig(std::move(values), props);
}

// ---------------------------------------------------------------------------------------------
// Validators

namespace validators {

Validator atLeast(double min) {
  return [min](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    auto n = asNumber(v);
    if (!n) return name + ": must be a number";
    if (*n < min) return "Invalid value " + formatNumber(*n) + " for configuration " + name +
                         ": Value must be at least " + formatNumber(min);
    return std::nullopt;
  };
}

Validator between(double min, double max) {
  return [min, max](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    auto n = asNumber(v);
    if (!n) return name + ": must be a number";
    if (*n < min || *n > max)
      return "Invalid value " + formatNumber(*n) + " for configuration " + name + ": Value must be between " +
             formatNumber(min) + " and " + formatNumber(max);
    return std::nullopt;
  };
}

Validator oneOf(std::vector<std::string> allowed, bool caseInsensitive) {
  return [allowed = std::move(allowed), caseInsensitive](const std::string& name,
                                                         const ConfigValue& v) -> std::optional<std::string> {
    const std::string* s = std::get_if<std::string>(&v);
    if (!s) return name + ": must be a string";
    for (const auto& a : allowed) {
      if (caseInsensitive ? lower(a) == lower(*s) : a == *s) return std::nullopt;
    }
    std::string list;
    for (std::size_t i = 0; i < allowed.size(); ++i) list += (i ? ", " : "") + allowed[i];
    return "Invalid value " + *s + " for configuration " + name + ": String must be one of: " + list;
  };
}

Validator nonEmptyString() {
  return [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    const std::string* s = std::get_if<std::string>(&v);
    if (!s || trim(*s).empty()) return "Invalid value for configuration " + name + ": String must be non-empty";
    return std::nullopt;
  };
}

Validator nonEmptyList() {
  return [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    const auto* l = std::get_if<std::vector<std::string>>(&v);
    if (!l || l->empty()) return "Invalid value for configuration " + name + ": List must be non-empty";
    return std::nullopt;
  };
}

}  // namespace validators
}  // namespace ferry
