// Predicates (see predicates.h).
#include "transforms/predicates.h"

#include "transforms/json_util.h"

namespace ferry::transforms {

const ConfigDef& TopicNameMatches::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("pattern", ConfigType::kString, std::nullopt, Importance::kMedium,
             "Regular expression (ECMAScript) the whole topic name must match.",
             [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
               if (auto e = validators::nonEmptyString()(name, v)) return e;
               return regexValidator()(name, v);
             });
    return d;
  }();
  return def;
}

Status TopicNameMatches::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "TopicNameMatches"));
  try {
    pattern_ = std::regex(p.getString("pattern"));
  } catch (const std::regex_error& e) {
    return Status::invalidArgument("TopicNameMatches: pattern is not a valid regular expression: " +
                                   std::string(e.what()));
  }
  return Status::ok();
}

Result<bool> TopicNameMatches::test(const Record& record) {
  try {
    return std::regex_match(record.topic, pattern_);
  } catch (const std::regex_error& e) {
    return Status::invalidArgument("TopicNameMatches: matching topic '" + record.topic +
                                   "' failed: " + e.what());
  }
}

const ConfigDef& HasHeaderKey::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("name", ConfigType::kString, std::nullopt, Importance::kMedium,
             "The header name whose presence makes the predicate true.",
             validators::nonEmptyString());
    return d;
  }();
  return def;
}

Status HasHeaderKey::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "HasHeaderKey"));
  name_ = p.getString("name");
  return Status::ok();
}

Result<bool> HasHeaderKey::test(const Record& record) { return record.headers.has(name_); }

const ConfigDef& RecordIsTombstone::definition() {
  static const ConfigDef def;
  return def;
}

Status RecordIsTombstone::configure(const StringMap& config) {
  (void)config;
  return Status::ok();
}

Result<bool> RecordIsTombstone::test(const Record& record) { return record.value.isNull(); }

}  // namespace ferry::transforms
