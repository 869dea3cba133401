// ferry connector SDK — declared configuration.
//
// Every connector, transform, predicate and converter declares its keys once in a ConfigDef
// (name, type, default, importance, documentation, validator). Parsing, defaults, the REST
// validate endpoint and the docs all come from that one declaration. Keys a ConfigDef does not
// declare are reported, never silently ignored.
//
// Thread-safety: a ConfigDef is built once and then only read; concurrent reads are safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry {

enum class ConfigType { kString, kInt, kLong, kDouble, kBool, kList, kPassword, kClass };
enum class Importance { kHigh, kMedium, kLow };

// Whether a key's value names a local file the plugin opens (for kList keys: every item does).
// The runtime checks such values against the worker's allowed folders (file.allowed.dirs) when a
// config is validated or created, and a task opens the file only through its context's
// openLocalFile() (connector.h), which checks again at open time.
enum class LocalPath { kNone, kRead, kWrite };

const char* configTypeName(ConfigType t) noexcept;        // "STRING", "INT", ... (Kafka's names)
const char* importanceName(Importance i) noexcept;        // "HIGH", "MEDIUM", "LOW"

// A parsed value. kList is a vector of trimmed strings; kPassword and kClass are strings.
using ConfigValue = std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>>;

// Returns an error message for an invalid value, or nullopt when valid.
using Validator = std::function<std::optional<std::string>(const std::string& name, const ConfigValue& value)>;

struct ConfigKey {
  std::string name;
  ConfigType type = ConfigType::kString;
  std::optional<std::string> defaultValue;  // as text; nullopt = required
  Importance importance = Importance::kMedium;
  std::string documentation;
  Validator validator;                      // optional
  std::string group;                        // optional, for UIs
  std::string displayName;                  // optional, for UIs
  std::vector<std::string> recommended;     // optional allowed/recommended values, for UIs
  LocalPath localPath = LocalPath::kNone;   // the value names a local file read or written
  bool required() const noexcept { return !defaultValue.has_value(); }
};

// The parsed configuration: every declared key with its value (or default), plus the originals.
class ParsedConfig {
 public:
  ParsedConfig() = default;
  ParsedConfig(std::map<std::string, ConfigValue> values, StringMap originals)
      : values_(std::move(values)), originals_(std::move(originals)) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // Typed getters. Precondition: the key is declared with a matching type (else a default value).
  std::string getString(const std::string& name) const;
  std::int64_t getLong(const std::string& name) const;
  std::int32_t getInt(const std::string& name) const { return static_cast<std::int32_t>(getLong(name)); }
  double getDouble(const std::string& name) const;
  bool getBool(const std::string& name) const;
  std::vector<std::string> getList(const std::string& name) const;
  const ConfigValue* get(const std::string& name) const;
  const StringMap& originals() const noexcept { return originals_; }
  // Originals whose key starts with `prefix`, with the prefix stripped.
  StringMap originalsWithPrefix(std::string_view prefix) const;

 private:
  std::map<std::string, ConfigValue> values_;
  StringMap originals_;
};

// The outcome of validating one set of properties: per-key errors, and unknown keys.
struct ConfigValidation {
  std::map<std::string, std::vector<std::string>> errors;  // key -> messages (all of them)
  std::vector<std::string> unknownKeys;
  bool ok() const noexcept { return errors.empty() && unknownKeys.empty(); }
  std::size_t errorCount() const noexcept;
  // "3 errors: file: required; tasks.max: must be >= 1; unknown key 'flie'".
  std::string summary() const;
  void merge(const ConfigValidation& other);
};

class ConfigDef {
 public:
  ConfigDef& define(ConfigKey key);
  // Shorthand: a key with a default (use std::nullopt for a required key).
  ConfigDef& define(std::string name, ConfigType type, std::optional<std::string> defaultValue,
                    Importance importance, std::string documentation, Validator validator = {});
  // Marks the defined key `name` as naming a local file read or written (ConfigKey::localPath).
  ConfigDef& localPath(std::string_view name, LocalPath access);
  // Adds every key of `other` (for composing framework and connector keys).
  ConfigDef& include(const ConfigDef& other);
  // Keys starting with `prefix` are the plugin's own open-ended keys (e.g. "rule.<id>.<key>"):
  // never unknown; the plugin checks them itself when configured.
  ConfigDef& allowPrefix(std::string prefix);
  const std::vector<std::string>& allowedPrefixes() const noexcept { return prefixes_; }

  const std::vector<ConfigKey>& keys() const noexcept { return keys_; }
  const ConfigKey* find(std::string_view name) const noexcept;

  // Checks every key at once: missing required keys, unparsable values, validator failures.
  // Keys of `props` not declared here and not under one of `allowedPrefixes` are unknown.
  ConfigValidation validate(const StringMap& props, const std::vector<std::string>& allowedPrefixes = {}) const;
  // Parses `props`; fails with InvalidArgument naming every bad key. Unknown keys are errors only
  // when `rejectUnknown` is true.
  Result<ParsedConfig> parse(const StringMap& props, bool rejectUnknown = false,
                             const std::vector<std::string>& allowedPrefixes = {}) const;

  // Parses one text value as `type` (shared by parse and by tools).
  static Result<ConfigValue> parseValue(ConfigType type, std::string_view text);
  // Renders a value back to text ("a,b" for lists, "true"/"false" for booleans).
  static std::string toText(const ConfigValue& value);

 private:
  std::vector<ConfigKey> keys_;
  std::vector<std::string> prefixes_;
};

// Common validators.
namespace validators {
Validator atLeast(double min);
Validator between(double min, double max);
Validator oneOf(std::vector<std::string> allowed, bool caseInsensitive = true);
Validator nonEmptyString();
Validator nonEmptyList();
}  // namespace validators

}  // namespace ferry
