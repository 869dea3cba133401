// The Rule transform (see rule_transform.h).
#include "transforms/rules/rule_transform.h"

#include "transforms/json_util.h"

namespace ferry::transforms {

const ConfigDef& RuleTransform::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("sql", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The rule: SELECT <expr> [AS name], ... FROM \"<topic filter>\", ... [WHERE <cond>], or "
             "FOREACH <expr> [AS name] [DO ...] [INCASE <cond>] FROM ... [WHERE ...] "
             "(transforms/rules/README.md).",
             [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
               const auto* s = std::get_if<std::string>(&v);
               if (!s) return name + ": must be a string";
               auto c = rules::CompiledRule::compile(*s);
               if (!c.isOk()) return "Invalid rule in " + name + ": " + c.status().message();
               return std::nullopt;
             });
    d.define("unmatched", ConfigType::kString, "pass", Importance::kMedium,
             "What happens to a record whose topic matches no FROM filter: pass (unchanged) or drop.",
             validators::oneOf({"pass", "drop"}));
    d.define("output", ConfigType::kString, "row", Importance::kMedium,
             "row: a record the rule keeps gets the selected row as its value; unchanged: the rule only "
             "decides (FROM and WHERE) and the record passes as it was (a pipeline's filter).",
             validators::oneOf({"row", "unchanged"}));
    return d;
  }();
  return def;
}

Status RuleTransform::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "Rule"));
  auto c = rules::CompiledRule::compile(p.getString("sql"));
  if (!c.isOk()) return Status::invalidArgument("Rule: sql: " + c.status().message());
  rule_ = std::move(*c);
  dropUnmatched_ = p.getString("unmatched") == "drop";
  keepValue_ = p.getString("output") == "unchanged";
  return Status::ok();
}

Result<bool> RuleTransform::applyJson(Record& record, JsonCache& cache) {
  if (!rule_) return Status::failedPrecondition("Rule: not configured");
  // A pending change by an earlier step is only in the cache: the rule must read that document.
  cache.flush(record, Side::kKey);  // the rule reads the key's bytes
  // A document an earlier step parsed is read as it is; otherwise the evaluator reads the bytes
  // (simdjson, building nothing but what the rule selects).
  const Json* payload = rule_->usesPayload() && cache.hasDocument(record, Side::kValue)
                            ? cache.get(record, Side::kValue) : nullptr;
  if (!payload) cache.flush(record, Side::kValue);
  auto out = rule_->evaluate(record, payload);
  if (!out.isOk()) return Status::invalidArgument("Rule on a record of " + record.topic + ": " + out.status().message());
  if (!out->fromMatched) return !dropUnmatched_;
  if (!out->matched) return false;  // WHERE failed: the rule filters it out
  if (keepValue_) return true;
  // The rule's result is a new JSON value that the value's schema (if any) does not describe: the
  // record goes on without one (JsonConverter writes "schema": null) rather than with a schema
  // its data does not match.
  record.valueSchema = nullptr;
  if (rule_->isForeach()) {
    if (out->rows.empty()) return false;
    Json arr = Json::array();
    for (auto& row : out->rows) arr.push_back(std::move(row));
    cache.set(record, Side::kValue, std::move(arr));
    return true;
  }
  cache.set(record, Side::kValue, std::move(out->rows.front()));
  return true;
}

}  // namespace ferry::transforms
