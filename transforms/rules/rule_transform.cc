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
  return Status::ok();
}

Result<bool> RuleTransform::apply(Record& record) {
  if (!rule_) return Status::failedPrecondition("Rule: not configured");
  auto out = rule_->evaluate(record);
  if (!out.isOk()) return Status::invalidArgument("Rule on a record of " + record.topic + ": " + out.status().message());
  if (!out->fromMatched) return !dropUnmatched_;
  if (!out->matched) return false;  // WHERE failed: the rule filters it out
  if (rule_->isForeach()) {
    if (out->rows.empty()) return false;
    rules::Value arr = rules::Value::array();
    for (auto& row : out->rows) arr.push_back(std::move(row));
    record.value = Bytes(arr.dump(-1, ' ', false, rules::Value::error_handler_t::replace));
    return true;
  }
  record.value = Bytes(out->rows.front().dump(-1, ' ', false, rules::Value::error_handler_t::replace));
  return true;
}

}  // namespace ferry::transforms
